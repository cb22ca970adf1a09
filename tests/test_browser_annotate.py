"""The annotation page in headless Chromium: characters counted as the server counts them, direction controls shown
rather than obeyed, saves that survive a flaky connection, the training round, the help overlay and its shortcut
switch, and the address's #id."""

from __future__ import annotations

import json
import re

import pytest

from annotation.models import Annotation, Assignment, PoolItem
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = browser_marks

# Emoji outside the Basic Multilingual Plane (two UTF-16 units each), a skin-tone modifier, ZWJ sequences (an
# astronaut, a family), a precomposed and a decomposed accent (e + U+0301, e + U+0300), and a right-to-left override.
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
ASTRONAUT = "\U0001f469\U0001f3fd\u200d\U0001f680"
LAST_WORD = "grandme\u0300re"
TRICKY = (
    f" Xe met {ASTRONAUT} and the {FAMILY} at the cafe\u0301 \U0001f389, "
    f"then \u202eevil\u202c texts and the naïve {LAST_WORD}"
)


def test_it_stores_the_word_the_annotator_marked_in_a_text_with_emoji_and_combining_accents(
    live_server, annotator, page
):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=1, continuation=TRICKY)
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 1 · 0 done")

    # The last word, from the keyboard: `[` puts the word cursor on the last word, `m` marks it.
    page.keyboard.press("1")
    page.keyboard.press("[")
    page.keyboard.press("m")
    # The family emoji (one ZWJ sequence, one word), with the mouse.
    page.locator(".annotate-word", has_text=FAMILY).click()
    expect(page.locator(".annotate-word.marked")).to_have_text([FAMILY, LAST_WORD])
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-position")).to_have_text("All items done")

    annotation = Annotation.objects.prefetch_related("spans").get(annotator=annotator, item=items[0])
    spans = sorted((span.start, span.end) for span in annotation.spans.all())
    assert [TRICKY[start:end] for start, end in spans] == [FAMILY, LAST_WORD]
    assert spans[1] == (len(TRICKY) - len(LAST_WORD), len(TRICKY))


def test_it_cuts_words_where_python_counts_them(live_server, annotator, page):
    """The page's word splitter against Python's slicing, on texts where UTF-16 and code points differ."""
    pool_for(annotator, items=1)
    log_in(page, live_server.url, "ana")
    samples = [
        TRICKY,
        "\U0001d54f\U0001d556 wrote \U0001f9d1\U0001f3ff\u200d\U0001f527 man\u0303 \u05e9\u05dc\u05d5\u05dd x",
        "Zo\u00eb and Zoe\u0308 \u0928\u092e\u0938\u094d\u0924\u0947 \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
    ]
    for text in samples:
        found = page.evaluate(
            """async (text) => {
                const module = await import("/static/js/annotate-text.js");
                return module.words(text).map((w) => [w.start, w.end, w.text]);
            }""",
            text,
        )
        assert found, text
        for start, end, word in found:
            assert text[start:end] == word
        # Every letter of the text is inside a word: no mark or joiner is split off its letter.
        covered = set()
        for start, end, _ in found:
            covered.update(range(start, end))
        assert all(i in covered for i, char in enumerate(text) if char.isalpha()), text
    # The decomposed accent stays with its letter, and the precomposed one too.
    words = page.evaluate(
        """async (text) => (await import("/static/js/annotate-text.js")).words(text).map((w) => w.text)""",
        "cafe\u0301 caf\u00e9",
    )
    assert words == ["cafe\u0301", "caf\u00e9"]


def test_it_shows_direction_controls_as_markers_instead_of_obeying_them(live_server, annotator, page):
    from playwright.sync_api import expect

    pool_for(annotator, items=1, continuation=TRICKY)
    log_in(page, live_server.url, "ana")
    generation = page.locator("#annotate-generation")
    expect(generation).to_contain_text("⟨U+202E⟩evil⟨U+202C⟩")
    shown = generation.inner_text()
    assert "\u202e" not in shown and "\u202c" not in shown
    expect(page.locator("#annotate-generation .annotate-control")).to_have_count(2)


def test_it_saves_again_after_a_network_error_and_a_503_and_loses_nothing(live_server, annotator, page):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=2)
    failures = ["network", "503"]

    def flaky(route):
        if route.request.method == "POST" and failures:
            failure = failures.pop(0)
            if failure == "network":
                return route.abort("connectionreset")
            return route.fulfill(status=503, body="Service Unavailable")
        return route.continue_()

    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    page.route("**/api/annotations/", flaky)
    page.keyboard.press("2")
    page.keyboard.press("n")
    page.keyboard.type("kept through two failures")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")
    assert failures == []
    saved = Annotation.objects.get(annotator=annotator, item=items[0])
    assert (saved.label, saved.notes) == ("misgendering", "kept through two failures")


def test_an_answer_whose_save_never_gets_through_survives_a_reload_and_is_saved_later(live_server, annotator, page):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=2)
    page.clock.install()  # the page's retry delays run on a clock the test moves on
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    page.route("**/api/annotations/", lambda route: route.abort("connectionrefused"))
    page.keyboard.press("3")
    page.keyboard.press("n")
    page.keyboard.type("written while offline")
    page.keyboard.press("Control+Enter")
    error = page.locator("#annotate-error")
    for attempt in range(1, 7):  # each failed try says so, then waits on the clock before the next
        expect(error).to_contain_text(f"trying again ({attempt} of 6)")
        page.clock.fast_forward(10_000)
    expect(error).to_contain_text("Not saved: the server could not be reached")

    page.reload()
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    expect(page.locator("#annotate-error")).to_contain_text("was not saved")
    expect(page.locator("input[name=label][value=no_pronoun]")).to_be_checked()
    expect(page.locator("#annotate-notes")).to_have_value("written while offline")
    assert not Annotation.objects.filter(annotator=annotator).exists()

    page.unroute("**/api/annotations/")
    page.locator("#annotate").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")
    saved = Annotation.objects.get(annotator=annotator, item=items[0])
    assert (saved.label, saved.notes) == ("no_pronoun", "written while offline")
    # Saved, the draft is gone: the item shows the stored answer without the warning.
    page.keyboard.press("Backspace")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 1 done")
    expect(page.locator("#annotate-error")).to_have_text("")


def test_it_shows_the_expected_answer_after_each_training_item_and_why_a_failed_round_stops(
    live_server, annotator, page
):
    from playwright.sync_api import expect

    pool = PoolFactory(name="trained", pass_mark=0.8)
    training = [
        PoolItemFactory(
            pool=pool,
            kind="training",
            gold_label="correct",
            gold_extraneous=False,
            explanation="Xe is the declared pronoun.",
        )
        for _ in range(2)
    ]
    study = PoolItemFactory(pool=pool)
    for position, item in enumerate([*training, study]):
        Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=position)

    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-phase")).to_be_visible()

    # A wrong answer: the expected one and the explanation are shown, and the page waits for the annotator.
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    feedback = page.locator("#annotate-feedback")
    expect(feedback).to_be_visible()
    expect(feedback).to_contain_text("Label wrong: expected Correct; you chose Misgendering.")
    expect(feedback).to_contain_text("Extraneous gendered language right: no.")
    expect(feedback).to_contain_text("Xe is the declared pronoun.")
    page.keyboard.press("Enter")
    expect(feedback).to_be_hidden()
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 3 · 1 done")

    # A right label with a wrong flag: the feedback names the part that was wrong. Then the round is over at 1 of 2
    # (50% < 80%): the page says why, once, and what to do, instead of showing items.
    page.keyboard.press("1")
    page.keyboard.press("e")
    page.keyboard.press("Enter")
    expect(feedback).to_contain_text("Label right: Correct.")
    expect(feedback).to_contain_text("Extraneous gendered language wrong: expected no; you said yes.")
    expect(feedback).to_have_class(re.compile(r"\bwrong\b"))
    page.keyboard.press("Enter")
    panel = page.locator("#annotate-qualification")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("1 of the 2 training items as expected (50%)")
    expect(panel).to_contain_text("this pool needs 80%")
    expect(panel).to_contain_text("for a new training round")
    assert panel.inner_text().count("training items") == 1
    expect(page.locator("#annotate-form")).to_be_hidden()
    assert not Annotation.objects.filter(annotator=annotator, item=study).exists()


def test_the_key_g_opens_the_current_guidelines_and_the_help_lists_it(live_server, annotator, page):
    from playwright.sync_api import expect

    from annotation.services.guidelines import pool_guidelines_set

    pool, _ = pool_for(annotator, items=1)
    pool_guidelines_set(pool=pool, text="# Old rules", user=None)
    pool_guidelines_set(pool=pool, text="# Rules\nMark every <b>wrong</b> pronoun.", user=None)
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 1 · 0 done")

    guide = page.locator("#annotate-guide")
    page.keyboard.press("g")
    expect(guide).to_be_visible()
    expect(guide).to_contain_text("version 2")
    expect(guide.locator("h1")).to_have_text("Rules")  # Markdown rendered; raw HTML in it shows as text
    expect(guide).to_contain_text("Mark every <b>wrong</b> pronoun.")
    expect(page.locator(".annotate-guidelines h1")).to_have_text("Rules")  # the sidebar shows the same text
    page.keyboard.press("1")  # keys go to the dialog, not the item
    page.keyboard.press("Escape")
    expect(guide).to_be_hidden()
    expect(page.locator("input[name=label]:checked")).to_have_count(0)
    page.keyboard.press("?")
    expect(page.locator("#annotate-help")).to_contain_text("the pool's guidelines (version 2)")


def test_the_help_overlay_opens_with_a_question_mark_and_single_key_shortcuts_can_be_turned_off(
    live_server, annotator, page
):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=2)
    log_in(page, live_server.url, "ana")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    # The page focuses its own container for the keys; no outline is drawn around the whole layout.
    focused = page.evaluate("() => [document.activeElement.id, getComputedStyle(document.activeElement).outlineStyle]")
    assert focused == ["annotate", "none"]

    help_dialog = page.locator("#annotate-help")
    page.keyboard.press("?")
    expect(help_dialog).to_be_visible()
    expect(help_dialog).to_contain_text("Single-key shortcuts")
    page.keyboard.press("1")  # keys go to the dialog, not the item
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()
    expect(page.locator("input[name=label]:checked")).to_have_count(0)

    page.locator("#annotate-shortcuts").uncheck()
    page.locator("#annotate").focus()
    page.keyboard.press("1")
    page.keyboard.press("?")
    expect(page.locator("input[name=label]:checked")).to_have_count(0)
    expect(help_dialog).to_be_hidden()

    # Remembered across a reload; Enter still works (it is not a single-character shortcut), and the mouse labels.
    page.reload()
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    expect(page.locator("#annotate-shortcuts")).not_to_be_checked()
    page.keyboard.press("1")
    expect(page.locator("input[name=label]:checked")).to_have_count(0)
    page.locator("input[name=label][value=no_pronoun]").check()
    page.locator("#annotate").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 2 · 1 done")

    page.locator("#annotate-shortcuts").check()
    page.locator("#annotate").focus()
    page.keyboard.press("1")
    expect(page.locator("input[name=label][value=correct]")).to_be_checked()
    assert Annotation.objects.get(annotator=annotator, item=items[0]).label == "no_pronoun"


def test_changing_the_address_id_loads_that_item(live_server, annotator, page):
    from playwright.sync_api import expect

    _, items = pool_for(annotator, items=3)
    log_in(page, live_server.url, "ana")
    position = page.locator("#annotate-position")
    expect(position).to_have_text("Item 1 of 3 · 0 done")
    page.evaluate("(id) => { location.hash = '#' + id; }", items[2].public_id)
    expect(position).to_have_text("Item 3 of 3 · 0 done")
    page.go_back()
    expect(position).to_have_text("Item 1 of 3 · 0 done")
    assert page.url.endswith(f"#{items[0].public_id}")


def test_the_pool_page_scopes_progress_and_labels_to_its_own_pool(live_server, annotator, page):
    from playwright.sync_api import expect

    three_way = PoolFactory(name="alpha")
    four_way = PoolFactory(name="beta", labels=["correct", "misgendering", "no_pronoun", "plural_they"])
    pool_for(annotator, pool=three_way, items=2)
    pool_for(annotator, pool=four_way, items=3)
    log_in(page, live_server.url, "ana")
    expect(page).to_have_url(f"{live_server.url}/annotate/")
    page.get_by_role("link", name="beta", exact=True).click()
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 3 · 0 done")
    expect(page.locator("input[name=label]")).to_have_count(4)
    expect(page.locator(".annotate-guidelines")).to_contain_text("Plural they")
    page.keyboard.press("4")
    page.keyboard.press("Enter")
    expect(page.locator("#annotate-position")).to_have_text("Item 2 of 3 · 1 done")

    page.goto(f"{live_server.url}/annotate/alpha/")
    expect(page.locator("#annotate-position")).to_have_text("Item 1 of 2 · 0 done")
    expect(page.locator("input[name=label]")).to_have_count(3)
    expect(page.locator(".annotate-guidelines")).not_to_contain_text("Plural they")
    assert json.loads(page.locator("#annotate-label-names").inner_text()) == {
        "correct": "Correct",
        "misgendering": "Misgendering",
        "no_pronoun": "No pronoun",
    }
    assert PoolItem.objects.filter(pool=four_way, annotations__label="plural_they").count() == 1


@pytest.mark.parametrize("path", ["/annotate/alpha/", "/annotate/"])
def test_nothing_scrolls_sideways_at_360_pixels(live_server, annotator, browser, path):
    from playwright.sync_api import expect

    pool_for(annotator, pool=PoolFactory(name="alpha"), items=1, continuation=" " + "x" * 300 + " " + TRICKY)
    pool_for(annotator, pool=PoolFactory(name="other-pool-with-a-long-name"), items=1)
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    page.set_default_timeout(10_000)
    log_in(page, live_server.url, "ana", path)
    if path != "/annotate/":
        expect(page.locator("#annotate-position")).to_have_text("Item 1 of 1 · 0 done")
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    context.close()
