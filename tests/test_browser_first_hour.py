"""The demo's pages as a new user meets them, measured in Chromium: the judged demo's report at most 15,000 px tall at
1280 px (what a reader opens on demand folded), no page that scrolls sideways at 390 px, and every control the issue
found too small a touch target at least 44 px tall at 390 px (WCAG 2.5.5)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import modify_settings

from tests.browser_support import browser_marks, log_in, wait_until_drawn
from tests.conftest import PASSWORD

pytestmark = browser_marks

TOUCH = 44
EAGER = "() => document.querySelectorAll('img[loading=lazy]').forEach((img) => { img.loading = 'eager'; })"
LOADED = "() => [...document.images].filter((img) => img.getClientRects().length).every((img) => img.complete)"
# The shown elements a selector finds, each with its height: [[text, height], ...].
HEIGHTS = """(selector) => [...document.querySelectorAll(selector)].filter((e) => e.getClientRects().length)
  .map((e) => [e.textContent.trim().slice(0, 40), Math.round(e.getBoundingClientRect().height)])"""


@pytest.fixture
def demo(settings, tmp_path, transactional_db):
    settings.DEMO_LOGINS_FILE = tmp_path / "demo-logins.json"

    def load():
        call_command("load_demo", "--no-generate", verbosity=0)
        for user in get_user_model().objects.filter(username__in=["admin", "researcher", "annotator1"]):
            user.set_password(PASSWORD)
            user.save()

    if apps.is_installed("demo"):
        load()
        yield
        return
    with modify_settings(INSTALLED_APPS={"append": "demo"}):
        load()
        yield


def _open(browser, base_url: str, username: str, path: str, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(180_000)  # the report's first build, on a busy shared machine
    log_in(page, base_url, username)
    page.goto(base_url + path)
    if page.locator("#report-building").count():  # the first build's progress page, then the report
        page.wait_for_url("**wait=1**")
    wait_until_drawn(page)
    return context, page


def _small(page, selector: str) -> list:
    return [row for row in page.evaluate(HEIGHTS, selector) if row[1] < TOUCH]


def test_the_first_hours_pages_are_short_fit_a_phone_and_are_easy_to_tap(live_server, browser, demo):
    base = live_server.url

    # The judged demo's report at 1280 px, every figure drawn: at most 15,000 px.
    context, page = _open(browser, base, "researcher", "/reports/demo-judged/?wait=1", 1280)
    page.evaluate(EAGER)
    page.wait_for_function(LOADED)
    height = page.evaluate("document.documentElement.scrollHeight")
    folded = page.locator("#verdict details.verdict-figures, #tables-to-come details, #examples details")
    assert folded.count() == 3 and not page.locator("#verdict details.verdict-figures[open]").count()
    context.close()
    assert height <= 15_000, f"the judged demo's report is {height} px tall at 1280 px"

    # On a phone: no page scrolls sideways, and the report's controls are targets a finger can hit.
    context, page = _open(browser, base, "researcher", "/reports/demo-judged/?wait=1", 390)
    small = {
        "contents toggle": _small(page, ".report-toc summary"),
        "Hide buttons": _small(page, ".section-toggle"),
        "SVG/PNG links": _small(page, "#figures .plot .downloads a"),
        "Menu, Log out": _small(page, ".topbar button"),
    }
    assert page.locator(".section-toggle").count() > 5 and page.locator("#figures .plot .downloads a").count() > 2
    for path in ("/pools/demo/", "/generation/datasets/"):
        page.goto(base + path)
        wait_until_drawn(page)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide at 390 px"
    context.close()

    context, page = _open(browser, base, "annotator1", "/annotate/", 390)
    small["Start/Continue"] = _small(page, "main .button, main button")
    assert page.locator("main .button, main button").count() >= 1
    page.goto(base + "/annotate/demo/")
    wait_until_drawn(page)
    small["extraneous label"] = _small(page, "label:has(> #annotate-extraneous)")
    assert page.locator("label:has(> #annotate-extraneous)").count() == 1
    context.close()
    assert not any(small.values()), {name: rows for name, rows in small.items() if rows}
