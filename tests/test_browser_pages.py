"""Pages that keep the reader where the news is, in headless Chromium at 1280 px and 390 px, light and dark: a
failed upload's errors and a saved adjudication in view, the pool page's report
link, the cell explorer of an imported pool, the annotation page opening at its top with the labels and Save in
reach on a phone, and the job form ticking TANGO's setting."""

from __future__ import annotations

import pytest

from generation.models import Dataset
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in
from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

pytestmark = browser_marks

MIS = "Robin's pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it at the market."
MIS_PRE = "Robin's pronouns are xe/xem/xyrs. Robin baked bread. "
MODES = [(1280, "light"), (1280, "dark"), (390, "light"), (390, "dark")]


@pytest.fixture(params=MODES, ids=[f"{width}px-{scheme}" for width, scheme in MODES])
def page(request, browser):
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)  # a busy shared machine: a page can take seconds to answer
    width, scheme = request.param
    context = browser.new_context(viewport={"width": width, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(60_000)  # a busy shared machine
    page.width = width
    yield page
    context.close()
    expect.set_options(timeout=5_000)  # Playwright's default, for the other tests


def in_view(page, selector: str) -> bool:
    """The element's box lies (at least partly) inside the viewport, as it is scrolled now."""
    return page.evaluate(
        """(selector) => { const box = document.querySelector(selector).getBoundingClientRect();
            return box.bottom > 0 && box.top < innerHeight && box.height > 0; }""",
        selector,
    )


def test_a_failed_import_scrolls_its_errors_into_view(live_server, researcher, page, tmp_path):
    from playwright.sync_api import expect

    pool, _ = pool_for(items=0)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        f'template,random_pre_gen,correct,pronoun,model\n"{MIS}","{MIS_PRE}x",maybe,xe,m\n', encoding="utf-8"
    )
    log_in(page, live_server.url, "rui_researcher", f"/pools/{pool.name}/")
    page.set_input_files("input[name=csv_files]", str(bad))
    page.get_by_role("button", name="Import").click()
    errors = page.locator(".import-errors").first
    expect(errors).to_contain_text("correct must be 1.0 or 0.0, not 'maybe'")
    if page.locator("[data-scroll-into-view]").count() == 0:  # still running when the page came: reload for its end
        page.reload()
    page.wait_for_function("() => window.scrollY > 0 || document.body.scrollHeight <= innerHeight")
    assert in_view(page, ".import-errors")


def test_a_saved_adjudication_says_so_where_the_reader_is(live_server, researcher, annotator, second_annotator, page):
    from playwright.sync_api import expect

    pool, items = pool_for(annotator, second_annotator, items=6)
    for item in items:
        AnnotationFactory(item=item, annotator=annotator, label="correct")
        AnnotationFactory(item=item, annotator=second_annotator, label="misgendering")
    last = items[-1]
    log_in(page, live_server.url, "rui_researcher", f"/pools/{pool.name}/adjudicate/")
    card = page.locator(f"#item-{last.public_id}")
    card.locator("select[name=label]").select_option("misgendering")
    card.get_by_role("button", name="Save adjudication").click()
    message = page.locator(f"#item-{last.public_id} .messages")
    expect(message).to_contain_text("Adjudication saved.")
    assert in_view(page, f"#item-{last.public_id} .messages")


def test_the_pool_page_leads_to_its_report(live_server, researcher, page):
    from playwright.sync_api import expect

    pool, _ = pool_for(items=1)
    log_in(page, live_server.url, "rui_researcher", f"/pools/{pool.name}/")
    page.get_by_role("link", name="Report", exact=True).click()
    expect(page).to_have_url(f"{live_server.url}/reports/{pool.name}/")
    expect(page.locator("h1")).to_contain_text(f"Report: {pool.name}")


def test_every_cell_of_an_imported_pool_opens_from_its_report(live_server, researcher, annotator, page):
    from playwright.sync_api import expect

    pool = PoolFactory(name="elsewhere")
    for pronoun in ("he", "xe"):
        item = PoolItemFactory(pool=pool, model_name="their-model", pronoun=pronoun)
        AnnotationFactory(item=item, annotator=annotator, label="correct")
    log_in(page, live_server.url, "rui_researcher", "/reports/elsewhere/cells/?model=their-model")
    cells = page.get_by_role("link", name="Explore")
    expect(cells).to_have_count(2)
    # The model view does not send the model's link back to itself.
    expect(page.locator("table.cell-list").get_by_role("link", name="their-model")).to_have_count(0)
    for index in range(2):
        page.get_by_role("link", name="Explore").nth(index).click()
        expect(page.locator("main")).to_contain_text("1 instance")
        expect(page.locator("main")).not_to_contain_text("no instances")
        expect(page.locator("main")).to_contain_text("ana: correct")
        page.go_back()


def test_the_annotation_page_opens_at_its_top_with_the_labels_and_save_in_reach(live_server, annotator, page):
    from playwright.sync_api import expect

    pool_for(annotator, pool=PoolFactory(name="queue"), items=2, continuation="Xe sold it. " * 40)
    log_in(page, live_server.url, "ana", "/annotate/queue/")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    assert page.evaluate("window.scrollY") == 0
    if page.width <= 400:  # a phone: the labels and Save stay on screen (a bar at the bottom)
        assert in_view(page, "#annotate-save") and in_view(page, "#annotate-labels input")
        page.mouse.wheel(0, 600)
        page.wait_for_function("() => window.scrollY > 0")
        assert in_view(page, "#annotate-save") and in_view(page, "#annotate-labels input")
    page.locator("#annotate-labels input").first.check()
    page.locator("#annotate-save").click()
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")


def test_choosing_a_tango_dataset_ticks_open(live_server, admin_user, page):
    from playwright.sync_api import expect

    Dataset.objects.create(name="a-misgendered", kind="misgendered", source="x")
    Dataset.objects.create(name="b-tango", kind="tango", source="x")
    log_in(page, live_server.url, "ada_admin", "/generation/jobs/new/")
    expect(page).to_have_url(f"{live_server.url}/generation/jobs/new/")
    page.wait_for_load_state("load")
    settings = {value: page.locator(f"input[name=settings][value={value}]") for value in ("pre", "post", "open")}
    page.select_option("select[name=dataset]", "b-tango")
    expect(settings["open"]).to_be_checked()
    expect(settings["pre"]).not_to_be_checked()
    expect(settings["post"]).not_to_be_checked()
    page.select_option("select[name=dataset]", "a-misgendered")
    expect(settings["pre"]).to_be_checked()
    expect(settings["post"]).to_be_checked()
    expect(settings["open"]).not_to_be_checked()
