"""The annotation page on a phone's touch screen (390 px, coarse pointer): every label choice clear of the Save bar,
touch targets at least 44 px tall, and the keyboard hints taking no room (there is no keyboard to press them)."""

from __future__ import annotations

import pytest

from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in

pytestmark = browser_marks

TOUCH_TARGET = 44  # CSS px: WCAG 2.5.5's target size


@pytest.fixture
def phone(browser):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2
    )
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)].map((node) => {
            const box = node.getBoundingClientRect();
            return {text: node.textContent.trim(), top: box.top, bottom: box.bottom, left: box.left,
                    right: box.right, width: box.width, height: box.height,
                    shown: getComputedStyle(node).display !== 'none' && box.width > 0};
        })""",
        selector,
    )


def overlaps(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def test_on_a_phone_no_label_lies_under_save_and_every_target_is_large(live_server, annotator, phone):
    from playwright.sync_api import expect

    pool_for(annotator, items=2, continuation="Xe sold it. " * 40)
    log_in(phone, live_server.url, "ana")
    expect(phone.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    assert phone.evaluate("matchMedia('(pointer: coarse)').matches")

    for scroll in (0, 600):
        phone.evaluate(f"window.scrollTo(0, {scroll})")
        labels = boxes(phone, "#annotate-labels label")
        bar = boxes(phone, ".annotate-actions")[0]
        assert labels[-1]["text"].endswith("No pronoun")
        for label in labels:
            assert not overlaps(label, bar), (label, bar)
            assert label["bottom"] <= bar["top"] + 0.5 and label["top"] >= 0, (label, bar)

    targets = boxes(phone, "#annotate-labels label, .annotate-actions button, .annotate-tags label")
    assert targets and all(box["height"] >= TOUCH_TARGET - 0.5 for box in targets), targets
    # The keyboard hints (the keys in the labels, on the buttons, in the legend) take no room.
    assert not any(box["shown"] for box in boxes(phone, "#annotate-form kbd, .annotate-tools kbd"))

    phone.locator("#annotate-labels label", has_text="No pronoun").tap()
    phone.locator("#annotate-save").tap()
    expect(phone.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")


def test_a_mouse_screen_keeps_the_keyboard_hints(live_server, annotator, page):
    from playwright.sync_api import expect

    pool_for(annotator, items=1)
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 1 · 0 done")

    assert all(box["shown"] for box in boxes(page, "#annotate-labels kbd, #annotate-save kbd"))
