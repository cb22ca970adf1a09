"""What the browser tests share: headless Chromium from Debian, and logging in through the real form.

The `browser` and `page` fixtures are registered in tests/conftest.py.
"""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = "/usr/bin/chromium"

browser_marks = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium"),
]


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls happen outside its calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        yield chromium
        chromium.close()


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
