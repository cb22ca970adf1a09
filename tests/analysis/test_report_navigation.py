"""The report page as a reader moves through it, in headless Chromium: a table of contents with a
link per section that follows the reader (sticky at 1280 px, folded at 390 px), wide tables on the page's width,
long text cells that wrap, and sections that fold with their state in the address."""

from __future__ import annotations

import pytest

from tests.analysis.factories import study_build
from tests.browser_support import browser_marks, log_in
from tests.factories import AnnotationFactory, PoolItemFactory

pytestmark = browser_marks

LONG = " ".join(["Xe walked to the market and sold the bread that xe had baked at dawn."] * 8)


@pytest.fixture
def study(researcher, annotator, second_annotator):
    pool = study_build(ana=annotator, bo=second_annotator)
    item = PoolItemFactory(pool=pool, model_name="m1", pronoun="xe", heuristic_correct=True, continuation=LONG)
    AnnotationFactory(item=item, annotator=annotator, label="misgendering")
    return pool


def open_report(browser, base_url: str, width: int, query: str = ""):
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    page.set_default_timeout(60_000)  # a busy shared machine
    log_in(page, base_url, "rui_researcher")
    page.goto(f"{base_url}/reports/study/?wait=1{query}")
    page.wait_for_selector("#report-toc:not([hidden])")
    return context, page


def test_the_contents_link_every_section_and_stay_in_view_at_1280_px(live_server, browser, study):
    context, page = open_report(browser, live_server.url, 1280)
    sections = page.locator("#report-body > section[id]")
    links = page.locator("#report-toc a")

    assert links.count() == sections.count() >= 8
    hrefs = [links.nth(k).get_attribute("href") for k in range(links.count())]
    assert hrefs == [f"#{sections.nth(k).get_attribute('id')}" for k in range(sections.count())]
    assert page.locator("#report-toc details").evaluate("d => d.open")

    links.filter(has_text="Human vs heuristic disagreements").click()
    page.wait_for_function("() => window.scrollY > 1000")
    box = page.locator("#report-toc").bounding_box()
    assert box["y"] >= -1 and box["y"] < 100  # still on screen after scrolling far down
    current = page.locator("#report-toc a[aria-current=true]")
    assert "disagreements" in current.inner_text().lower()
    # the report uses the page's width, beyond the other pages' 1100 px column
    assert page.locator("#report-body").bounding_box()["width"] > 900
    context.close()


def test_the_contents_fold_away_at_390_px(live_server, browser, study):
    context, page = open_report(browser, live_server.url, 390)
    details = page.locator("#report-toc details")

    assert not details.evaluate("d => d.open")
    assert page.locator("#report-toc").bounding_box()["height"] < 60
    page.locator("#report-toc summary").click()
    page.locator("#report-toc a", has_text="Accuracy per cell").click()
    assert not details.evaluate("d => d.open")  # a link followed folds the contents again
    assert page.evaluate("location.hash") == "#accuracy"
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_long_text_cells_wrap_on_the_page(live_server, browser, study, width):
    context, page = open_report(browser, live_server.url, width)
    box = page.locator("#disagreements .table-scroll")
    scroll, client = box.evaluate("b => [b.scrollWidth, b.clientWidth]")
    assert scroll <= client + 1, (scroll, client)
    cell = page.locator("#disagreements td", has_text="sold the bread that xe had baked").first
    line = float(cell.evaluate("c => parseFloat(getComputedStyle(c).lineHeight)"))
    assert cell.bounding_box()["height"] > 2 * line  # wrapped onto several lines
    context.close()


def test_a_folded_section_stays_folded_through_the_address(live_server, browser, study):
    context, page = open_report(browser, live_server.url, 1280)
    accuracy = page.locator("#accuracy")
    accuracy.get_by_role("button", name="Hide Accuracy per cell").click()

    assert "collapsed" in accuracy.get_attribute("class")
    assert not page.locator("#accuracy table").is_visible()
    assert "collapsed=accuracy" in page.url

    page.reload()
    page.wait_for_selector("#report-toc:not([hidden])")
    assert not page.locator("#accuracy table").is_visible()
    page.locator("#accuracy").get_by_role("button", name="Show Accuracy per cell").click()
    assert page.locator("#accuracy table").is_visible()
    assert "collapsed" not in page.url
    context.close()
