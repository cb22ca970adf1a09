"""In headless Chromium, under the site's Content-Security-Policy: the quality dashboard draws its heat map and charts
from static/js/quality.js and follows new work by polling; the report page's figures load."""

from __future__ import annotations

import pytest

from accounts.roles import ANNOTATOR
from tests.analysis.factories import study_build
from tests.analysis.test_multirater import three_rater_pool
from tests.browser_support import browser_marks, log_in
from tests.conftest import _person
from tests.factories import AnnotationFactory, PoolItemFactory

pytestmark = browser_marks


@pytest.fixture
def errors(page) -> list[str]:
    """Console errors and uncaught exceptions of the page (a CSP violation is one)."""
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: seen.append(str(error)))
    return seen


def test_the_dashboard_draws_its_charts_and_follows_new_work(
    live_server, researcher, annotator, second_annotator, page, errors
):
    from playwright.sync_api import expect

    cy = _person("cy", ANNOTATOR)
    pool = three_rater_pool(raters={"ana": annotator, "bo": second_annotator, "cy": cy})
    page.clock.install()  # the page's polling runs on a clock the test moves on
    log_in(page, live_server.url, "rui_researcher")
    page.goto(f"{live_server.url}/pools/{pool.name}/quality/")

    expect(page.locator("#kappa-heatmap table.heatmap tr")).to_have_count(4)  # header and three annotators
    expect(page.locator("#drift-chart svg polyline.agreement")).to_have_count(1)
    expect(page.locator("#seconds-chart svg rect.box")).to_have_count(3)
    expect(page.locator("#quality-warnings li.warning")).to_have_count(2)
    count = int(page.locator("#quality-updated").inner_text().split()[0])

    AnnotationFactory(item=PoolItemFactory(pool=pool), annotator=cy, seconds=12)
    page.clock.fast_forward(5_000)  # the next poll is due (static/js/quality.js polls every 5 s)
    expect(page.locator("#quality-updated")).to_have_text(f"{count + 1} decisions so far", timeout=30_000)
    page.goto("about:blank")  # stop polling before the live server goes away
    assert errors == []


def test_the_report_page_loads_every_figure(live_server, researcher, annotator, second_annotator, page, errors):
    study_build(ana=annotator, bo=second_annotator)
    log_in(page, live_server.url, "rui_researcher")
    page.goto(f"{live_server.url}/reports/study/")
    # A report not yet built answers with a progress page, which opens the report once it is built.
    page.wait_for_selector("figure.plot img", timeout=120_000)
    images = page.locator("figure.plot img")
    assert images.count() == 7  # the study has no TANGO job
    for index in range(images.count()):
        image = images.nth(index)
        image.scroll_into_view_if_needed()
        page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert errors == []
