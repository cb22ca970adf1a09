"""What the browser tests share: headless Chromium from Debian, and logging in through the real login form.

The `browser` and `page` fixtures are registered in tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
from urllib.parse import urljoin

import pytest

CHROMIUM = "/usr/bin/chromium"

browser_marks = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium"),
]


class _Chromium:
    """The process's Playwright driver and Chromium, and the event loop Playwright's sync API runs them on."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self.manager = sync_playwright()
        self.playwright = self.manager.start()
        # Playwright's sync API leaves its event loop marked as running in this thread between its calls: Django's ORM
        # would take every test of the process for async code, and asyncio.run() and async_to_sync() would refuse to
        # run. The loop is marked running only while a browser test runs (`browser`), as while the driver is called.
        self.loop = asyncio.events._get_running_loop()
        try:
            self.chromium = self.launch()
        except BaseException:
            self.manager.__exit__()
            raise
        finally:
            asyncio.events._set_running_loop(None)

    def launch(self):
        return self.playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )

    def close(self) -> None:
        asyncio.events._set_running_loop(self.loop)
        try:
            self.chromium.close()
        finally:
            self.manager.__exit__()


@pytest.fixture(scope="session")
def _chromium():
    """One Chromium per pytest process, started by its first browser test (starting Playwright's driver and the
    browser costs 1-1.5 s; each test still gets a fresh context: its own cookies, storage and cache)."""
    session = _Chromium()
    yield session
    session.close()


@pytest.fixture
def browser(_chromium):
    """The process's Chromium; every context a test opens is closed when the test ends, whatever it left open.

    While the test runs, Playwright's event loop is marked as running in this thread (see _Chromium) and Django's ORM
    is told that the test's own ORM calls, which happen outside Playwright's calls, are allowed."""
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    asyncio.events._set_running_loop(_chromium.loop)
    try:
        if not _chromium.chromium.is_connected():  # an earlier test's Chromium went away: a new one
            _chromium.chromium = _chromium.launch()
        yield _chromium.chromium
        for context in _chromium.chromium.contexts:
            context.close()
    finally:
        asyncio.events._set_running_loop(None)
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def log_in(page, base_url: str, username: str, next_path: str = "") -> None:
    """Logs the page's browser context in as `username` through the login form's own POST, then opens the page the
    form's answer sends the person to.

    The POST is the one the form sends (its CSRF token and `next` field, read from the login page the server renders),
    sent by the context's request API, which shares the context's cookies: the same view, checks and redirect as a
    login typed into the page, without loading and typing into the login page first (about half a second a test).
    Typing into the form itself is tested by `log_in_by_typing`'s tests (tests/test_browser_landing.py and others)."""
    from tests.conftest import PASSWORD

    login = f"{base_url}/login/" + (f"?next={next_path}" if next_path else "")
    form = page.context.request.get(login)
    assert form.ok, f"{login}: {form.status}"
    fields = {name: html.unescape(value) for name, value in _HIDDEN_FIELD.findall(form.text())}
    answer = page.context.request.post(
        login,
        form={**fields, "username": username, "password": PASSWORD},
        headers={"Referer": login},
        max_redirects=0,
    )
    assert answer.status == 302, f"logging in as {username}: {answer.status}"
    page.goto(urljoin(login, answer.headers["location"]))


_HIDDEN_FIELD = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def log_in_by_typing(page, base_url: str, username: str, next_path: str = "") -> None:
    """Logs in as a person does: the login page opened, the username and password typed, Enter pressed."""
    from tests.conftest import PASSWORD

    page.goto(f"{base_url}/login/" + (f"?next={next_path}" if next_path else ""))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_load_state()


# A page is drawn once it has loaded (its stylesheets, scripts and eager images), the images on screen have come
# (lazy figures start as they scroll into view), and the annotation page has shown the item it asks the API for: it
# announces the item in its live region last.
DRAWN = """() => document.readyState === 'complete'
  && [...document.images].every((image) => image.complete || image.getBoundingClientRect().top >= innerHeight)
  && (document.getElementById('annotate-live')?.textContent ?? 'none') !== ''"""


def wait_until_drawn(page) -> None:
    """Waits for what the page draws as it opens (see DRAWN), rather than for half a second without requests
    (Playwright's "networkidle") after each page."""
    page.wait_for_function(DRAWN)
