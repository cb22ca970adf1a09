"""The report page in a browser: its tables fit the report's column at 1280 px rather than scroll sideways, and its
figures are no white panels in dark mode."""

from __future__ import annotations

from tests.browser_support import browser_marks, log_in, wait_until_drawn
from tests.test_browser_contrast import site  # noqa: F401  (the contrast test's study, with jobs and labels)

pytestmark = browser_marks

# Each table box of the report's body that scrolls sideways: its section's id, its width and the room it has.
SCROLLING_SCRIPT = """
() => [...document.querySelectorAll('.report-body .table-scroll')]
  .filter((box) => box.getClientRects().length && box.scrollWidth > box.clientWidth + 1)
  .map((box) => `${box.closest('section')?.id}: ${box.scrollWidth} px in ${box.clientWidth} px`)
"""
FILTER_SCRIPT = "() => [...document.querySelectorAll('.plot img')].map((img) => getComputedStyle(img).filter)"


def _report(browser, base_url: str, pool: str, *, scheme: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(90_000)  # a busy shared machine
    log_in(page, base_url, "rui_researcher")
    page.goto(f"{base_url}/reports/{pool}/?wait=1")
    wait_until_drawn(page)
    return context, page


def test_the_reports_tables_fit_its_column_at_1280_px(live_server, browser, site):  # noqa: F811
    context, page = _report(browser, live_server.url, site["study"], scheme="light")
    scrolling = page.evaluate(SCROLLING_SCRIPT)
    tables = page.locator(".report-body .table-scroll").count()
    context.close()

    assert tables >= 4
    assert not scrolling, "tables wider than the report's column:\n" + "\n".join(scrolling)


def test_the_figures_are_shown_dark_in_dark_mode_and_as_drawn_in_light_mode(live_server, browser, site):  # noqa: F811
    filters = {}
    for scheme in ("light", "dark"):
        context, page = _report(browser, live_server.url, site["study"], scheme=scheme)
        filters[scheme] = set(page.evaluate(FILTER_SCRIPT))
        context.close()

    assert filters["light"] == {"none"}
    assert len(filters["dark"]) == 1 and "invert" in next(iter(filters["dark"]))


def test_the_html_download_says_it_is_being_built_then_downloads(live_server, browser, site):  # noqa: F811
    """The HTML report takes seconds to build: the click says so at once and the file still arrives as a download."""
    context, page = _report(browser, live_server.url, site["study"], scheme="light")
    held: list = []
    page.route("**/export/html/**", lambda route: held.append(route))
    link = page.locator("a[data-build-feedback]", has_text="HTML")

    link.click()
    status = page.locator(".download-status")
    status.wait_for()
    building = status.text_content()
    page.wait_for_function("() => document.querySelector('.download-status').textContent.includes(' s')")
    with page.expect_download() as arrived:
        held[0].continue_()
    download = arrived.value
    page.wait_for_function("() => document.querySelector('.download-status').textContent.includes('Downloaded')")
    context.close()

    assert "Building the HTML report" in building
    assert download.suggested_filename == f"{site['study']}-report.html"
