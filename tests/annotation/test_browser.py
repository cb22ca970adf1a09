"""End to end in headless Chromium: log in, label with the keyboard alone, mark a word, go back, edit, reload."""

import pytest

from annotation.models import Annotation
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks
from tests.conftest import PASSWORD

pytestmark = browser_marks


@pytest.fixture
def browser_page(page):
    return page


def test_it_labels_with_the_keyboard_goes_back_edits_and_keeps_everything(live_server, annotator, browser_page):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=3, continuation="The man said xe was late.")
    page = browser_page

    page.goto(f"{live_server.url}/login/?next=/annotate/")
    page.fill("#id_username", "ana")
    page.fill("#id_password", PASSWORD)
    page.keyboard.press("Enter")
    position = page.locator("#annotate-position")
    expect(position).to_have_text("Item 1 of 3 · 0 done")

    # Item 1: "correct", and mark "man" with the word cursor.
    page.keyboard.press("1")
    page.keyboard.press("w")  # focus the generated text; the cursor is on "The"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("m")
    expect(page.locator(".annotate-word.marked")).to_have_text(["man"])
    expect(page.locator("#annotate-extraneous")).to_be_checked()
    page.keyboard.press("Enter")
    expect(position).to_have_text("Item 2 of 3 · 1 done")
    expect(page.locator("#annotate-live")).to_contain_text("Saved item 1 as Correct")

    # Item 2: "misgendering".
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(position).to_have_text("Item 3 of 3 · 2 done")

    # Back to item 2 and edit it: "no pronoun", a note, extraneous on.
    page.keyboard.press("Backspace")
    expect(position).to_have_text("Item 2 of 3 · 2 done")
    expect(page.locator("input[name=label][value=misgendering]")).to_be_checked()
    page.keyboard.press("3")
    page.keyboard.press("n")
    page.keyboard.type("edited")
    page.keyboard.press("Escape")
    page.keyboard.press("e")
    page.keyboard.press("Enter")
    expect(position).to_have_text("Item 3 of 3 · 2 done")

    # Reload and walk back: everything is as saved.
    page.reload()
    expect(position).to_have_text("Item 3 of 3 · 2 done")
    page.keyboard.press("ArrowLeft")
    expect(position).to_have_text("Item 2 of 3 · 2 done")
    expect(page.locator("input[name=label][value=no_pronoun]")).to_be_checked()
    expect(page.locator("#annotate-notes")).to_have_value("edited")
    expect(page.locator("#annotate-extraneous")).to_be_checked()
    page.keyboard.press("Backspace")
    expect(position).to_have_text("Item 1 of 3 · 2 done")
    expect(page.locator("input[name=label][value=correct]")).to_be_checked()
    expect(page.locator(".annotate-word.marked")).to_have_text(["man"])

    saved = {a.item_id: a for a in Annotation.objects.filter(annotator=annotator).prefetch_related("spans")}
    assert set(saved) == {items[0].pk, items[1].pk}
    first, second = saved[items[0].pk], saved[items[1].pk]
    assert (first.label, first.extraneous, [(s.start, s.end) for s in first.spans.all()]) == ("correct", True, [(4, 7)])
    assert (second.label, second.extraneous, second.notes) == ("no_pronoun", True, "edited")
    assert first.seconds > 0 and second.seconds > 0
