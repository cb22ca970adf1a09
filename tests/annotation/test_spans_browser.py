"""Marking emoji sequences on the annotation page: each kind is one markable word, made of whole grapheme clusters,
and the stored span is its code points exactly, as Python slices the text."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in

pytestmark = browser_marks

SEQUENCES = {
    "country flag": "\U0001f1eb\U0001f1f7",  # two regional indicators: France
    "subdivision flag": "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland
    "ZWJ family": "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "skin tone": "\U0001f44d\U0001f3fd",
    "keycap": "1\ufe0f\u20e3",
}


@pytest.mark.parametrize("kind", list(SEQUENCES))
def test_it_marks_each_kind_of_emoji_sequence_whole(live_server, annotator, page, kind):
    from playwright.sync_api import expect

    sequence = SEQUENCES[kind]
    text = f" They waved {sequence} at the man."
    _, items = pool_for(annotator, items=1, continuation=text)
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 1 · 0 done")

    page.keyboard.press("1")
    page.locator(".annotate-word", has_text=sequence).click()
    expect(page.locator(".annotate-word.marked")).to_have_text([sequence])
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-position")).to_have_text("All items done")

    annotation = Annotation.objects.prefetch_related("spans").get(annotator=annotator, item=items[0])
    spans = [(span.start, span.end) for span in annotation.spans.all()]
    start = text.index(sequence)
    assert spans == [(start, start + len(sequence))]
    assert text[spans[0][0] : spans[0][1]] == sequence


def test_every_word_is_whole_grapheme_clusters(live_server, annotator, page):
    pool_for(annotator, items=1)
    log_in(page, live_server.url, "ana")
    text = " ".join(SEQUENCES.values()) + " self-made cafe\u0301"
    found = page.evaluate(
        """async (text) => (await import("/static/js/annotate-text.js")).words(text).map((w) => [w.start, w.end])""",
        text,
    )
    assert [text[start:end] for start, end in found] == [*SEQUENCES.values(), "self-made", "cafe\u0301"]
