"""What the browser tests share: headless Chromium from Debian, and logging in through the real form.

The `browser` and `page` fixtures are registered in tests/conftest.py.
"""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = "/usr/bin/chromium"

browser_marks = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def _chromium():
    """One Chromium per test module (launching Playwright's driver and the browser costs about 0.6 s; each test
    still gets a fresh context: its own cookies, storage and cache)."""
    # Playwright's sync API marks this thread's event loop as running while it is started, which Django's ORM takes
    # for async code: the tests' own ORM calls happen outside Playwright's calls, so they are allowed while it runs.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def browser(_chromium):
    """The module's Chromium; every context a test opens is closed when the test ends, whatever it left open."""
    yield _chromium
    for context in _chromium.contexts:
        context.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def log_in(page, base_url: str, username: str, next_path: str = "") -> None:
    from tests.conftest import PASSWORD

    page.goto(f"{base_url}/login/" + (f"?next={next_path}" if next_path else ""))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_load_state()
