"""The first minutes of each role in headless Chromium: where they land after logging in and where the page sends
them next, the annotator's pool picker, a styled error page, and a researcher's upload of generations."""

from __future__ import annotations

from annotation.models import PoolItem
from annotation.services import annotation_submit
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in_by_typing
from tests.conftest import DEMO
from tests.factories import PoolFactory

pytestmark = browser_marks


def test_an_annotator_with_one_pool_lands_on_its_first_item(live_server, annotator, page):
    from playwright.sync_api import expect

    pool_for(annotator, pool=PoolFactory(name="only"), items=2)
    log_in_by_typing(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    expect(page.locator("h1")).to_contain_text("only")


def test_an_annotator_with_several_pools_chooses_one_and_sees_each_ones_progress(
    live_server, annotator, second_annotator, page
):
    from playwright.sync_api import expect

    first, first_items = pool_for(annotator, pool=PoolFactory(name="first"), items=2)
    pool_for(annotator, second_annotator, pool=PoolFactory(name="second"), items=3)
    annotation_submit(
        user=annotator,
        public_id=first_items[0].public_id,
        label="correct",
        extraneous=False,
        spans=[],
        notes="",
        tags=[],
    )

    log_in_by_typing(page, live_server.url, "ana")
    expect(page).to_have_url(f"{live_server.url}/annotate/")
    expect(page.locator("[data-pool=first]")).to_contain_text("1 of 2 done")
    expect(page.locator("[data-pool=second]")).to_contain_text("0 of 3 done")
    page.locator("[data-pool=first]").get_by_role("link", name="Continue").click()
    expect(page).to_have_url(f"{live_server.url}/annotate/first/#{first_items[1].public_id}")
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")
    page.get_by_role("link", name="All my pools").click()
    expect(page.locator("[data-pool=second]")).to_be_visible()


def test_an_annotator_is_not_shown_a_pool_that_is_not_theirs(live_server, annotator, second_annotator, page):
    from playwright.sync_api import expect

    pool_for(annotator, pool=PoolFactory(name="mine"), items=1)
    pool_for(second_annotator, pool=PoolFactory(name="theirs"), items=1)
    log_in_by_typing(page, live_server.url, "ana")
    response = page.goto(f"{live_server.url}/annotate/theirs/")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("There is nothing at this address")
    expect(page.get_by_role("navigation", name="Main")).to_contain_text("Annotate")


def test_a_researcher_lands_on_the_home_page_and_goes_on_to_the_pools(live_server, researcher, page):
    from playwright.sync_api import expect

    PoolFactory(name="studied")
    log_in_by_typing(page, live_server.url, "rui_researcher")
    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.locator("[data-role=researcher]")).to_be_visible()
    expect(page.locator("[data-role=annotator]")).to_have_count(0)
    page.locator("[data-role=researcher]").get_by_role("link", name="Pools").click()
    expect(page).to_have_url(f"{live_server.url}/pools/")
    expect(page.locator("main")).to_contain_text("studied")


def test_an_admin_lands_on_the_home_page_and_goes_on_to_a_new_job(live_server, admin_user, page):
    from playwright.sync_api import expect

    log_in_by_typing(page, live_server.url, "ada_admin")
    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.locator("[data-role=admin]")).to_be_visible()
    expect(page.locator("[data-role=researcher]")).to_be_visible()  # an admin may do what a researcher may
    page.locator("[data-role=admin]").get_by_role("link", name="New generation job").click()
    expect(page).to_have_url(f"{live_server.url}/generation/jobs/new/")


def test_a_person_without_a_role_is_told_to_ask_for_one(live_server, outsider, page):
    from playwright.sync_api import expect

    log_in_by_typing(page, live_server.url, "otto_outsider")
    expect(page.locator("[data-role=none]")).to_contain_text("Ask an admin to give you one.")
    response = page.goto(f"{live_server.url}/annotate/")
    assert response.status == 403
    expect(page.locator("h1")).to_have_text("This page is not open to you")


def test_a_researcher_uploads_the_demo_generations_into_a_pool(live_server, researcher, page):
    from playwright.sync_api import expect

    pool = PoolFactory(name="uploaded")
    log_in_by_typing(page, live_server.url, "rui_researcher")
    page.goto(f"{live_server.url}/pools/uploaded/")
    page.locator("input[name=csv_files]").set_input_files(
        [str(DEMO / "generations_pre.csv"), str(DEMO / "generations_post.csv")]
    )
    # The import recomputes the heuristic with spaCy, whose first load in the server can take a while on a busy machine.
    with page.expect_navigation(timeout=90_000):
        page.locator("form[action$='/import/'] [type=submit]:not([name=preview])").click(no_wait_after=True)
    # The import runs in the background; the pool page's import table shows how it ended.
    expect(page.locator("table.import-jobs")).to_contain_text("48 new items", timeout=90_000)
    assert PoolItem.objects.filter(pool=pool).count() == 48
    assert set(PoolItem.objects.filter(pool=pool).values_list("setting", flat=True)) == {"pre", "post"}


def test_the_pages_follow_a_dark_system_theme_and_fit_a_360_pixel_screen(live_server, researcher, browser):
    from playwright.sync_api import expect

    PoolFactory(name="a-pool-whose-name-is-rather-long-for-a-phone-screen")
    context = browser.new_context(viewport={"width": 360, "height": 740}, color_scheme="dark")
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/login/")
    assert _scroll_widths(page)[0] <= _scroll_widths(page)[1]
    log_in_by_typing(page, live_server.url, "rui_researcher")
    expect(page.locator("[data-role=researcher]")).to_be_visible()
    for path in ("/", "/pools/", "/no/such/page/"):
        page.goto(live_server.url + path)
        scroll_width, client_width = _scroll_widths(page)
        assert scroll_width <= client_width, (path, scroll_width, client_width)
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(18, 21, 28)"  # the dark palette's --bg
    context.close()


def _scroll_widths(page) -> tuple[int, int]:
    return tuple(page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"))
