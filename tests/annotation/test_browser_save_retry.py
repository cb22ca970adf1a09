"""The annotation page retries a save once on a 5xx, with the same idempotency key, so a try that was written before
its answer was lost is not written twice (docs/domain.md, "Assignment and the annotator's queue")."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in

pytestmark = browser_marks


def test_a_save_written_but_answered_500_is_retried_once_with_its_key_and_counted_once(live_server, annotator, page):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=2)
    keys: list[str | None] = []
    written: list[float] = []

    def lost_answer(route):
        if route.request.method != "POST":
            return route.continue_()
        keys.append(route.request.headers.get("idempotency-key"))
        if len(keys) == 1:
            route.fetch()  # the server writes the annotation, then the answer is lost
            written.append(Annotation.objects.get(annotator=annotator, item=items[0]).seconds)
            return route.fulfill(status=500, body="Server Error")
        return route.continue_()

    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    page.route("**/api/annotations/", lost_answer)
    page.wait_for_timeout(300)  # some time on the item, so that a second count would show
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")

    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]
    saved = Annotation.objects.get(annotator=annotator, item=items[0])
    assert written[0] > 0
    assert (saved.label, saved.seconds) == ("misgendering", pytest.approx(written[0]))


def test_a_save_answered_500_twice_says_so_and_keeps_the_answer(live_server, annotator, page):
    from playwright.sync_api import expect

    pool_for(annotator, items=1)
    tries: list[str] = []

    def broken(route):
        if route.request.method != "POST":
            return route.continue_()
        tries.append(route.request.headers.get("idempotency-key"))
        return route.fulfill(status=500, body="Server Error")

    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 1 · 0 done")
    page.route("**/api/annotations/", broken)
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-error")).to_contain_text("Not saved")

    assert len(tries) == 2 and tries[0] == tries[1]  # one retry, same key
    expect(page.locator("input[name=label][value=correct]")).to_be_checked()
    assert not Annotation.objects.exists()
