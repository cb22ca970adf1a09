"""The keys of a two-person item's pronouns do what the guide and the page's help say: the arrow keys move round the
pronouns (the last to the first), Tab moves on in the page's order and so leaves them after the last."""

from __future__ import annotations

import shutil

import pytest

from annotation.models import Assignment
from tests.annotation.test_referents import distractor_item
from tests.browser_support import CHROMIUM, log_in
from tests.conftest import REPO
from tests.factories import PoolFactory

FOCUSED = "() => document.activeElement.closest('#annotate-pronouns .referent')?.dataset.index ?? 'outside'"


def test_the_guide_and_the_help_say_the_same_of_tab_and_the_arrows():
    guide = " ".join((REPO / "docs/guide-annotator.md").read_text().split())
    page = " ".join((REPO / "templates/annotation/annotate.html").read_text().split())
    assert "the arrow keys to move round them" in guide and "leave the pronouns after the last" in guide
    assert "the arrow keys move round the pronouns, <kbd>Tab</kbd> moves on and leaves after the last" in page
    assert "arrows move round them; <kbd>Tab</kbd> moves on and leaves after the last" in page
    assert "<kbd>Tab</kbd> or the arrow keys move" not in page and "`Tab` or the arrow keys to move" not in guide


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium")
def test_the_arrows_move_round_the_pronouns_and_tab_leaves_after_the_last(live_server, annotator, page):
    from playwright.sync_api import expect

    page.set_default_timeout(60_000)
    pool = PoolFactory(name="distractors")
    Assignment.objects.create(pool=pool, item=distractor_item(pool), annotator=annotator, position=0)
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-pronouns .referent")).to_have_count(4)
    page.keyboard.press("r")
    assert page.evaluate(FOCUSED) == "0"
    page.keyboard.press("ArrowLeft")  # from the first round to the last
    assert page.evaluate(FOCUSED) == "3"
    page.keyboard.press("ArrowRight")  # and on to the first again
    assert page.evaluate(FOCUSED) == "0"
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "1"
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED) == "0"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Tab")  # after the last: out of the pronouns, to the page's next control
    assert page.evaluate(FOCUSED) == "outside"
    assert page.evaluate("document.activeElement !== document.body")
