"""Pages on a phone (390 px): the navigation folds into a menu below 600 px and never
overlaps the username, and no page splits a word in the middle ("misgende red") where the word would fit whole."""

from __future__ import annotations

import pytest

from generation.models import Job
from tests.browser_support import browser_marks, log_in, wait_until_drawn
from tests.test_browser_contrast import pages_by_role, site  # noqa: F401  (the contrast test's pages, one of each)

pytestmark = browser_marks

# Each run of letters or digits in a text node: a run whose boxes lie on more than one line was split mid-word. A run
# wider than the page's column has to break somewhere (a long token, a URL); any narrower run that is split is
# reported, also in a table column squeezed narrower than its longest word (the column should have had the room).
SPLIT_WORDS_SCRIPT = """
() => {
  const found = [];
  const column = document.querySelector('main') || document.body;
  const padding = getComputedStyle(column);
  const room = column.clientWidth - parseFloat(padding.paddingLeft) - parseFloat(padding.paddingRight);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest('[hidden], script, style, noscript, template, svg, .visually-hidden, .skip-link')) continue;
    if (!parent.getClientRects().length || getComputedStyle(parent).visibility !== 'visible') continue;
    let block = parent;
    while (block.parentElement && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
    for (const match of node.textContent.matchAll(/[\\p{L}\\p{N}]+/gu)) {
      if (match[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const boxes = [...range.getClientRects()].filter((box) => box.width > 0);
      const lines = new Set(boxes.map((box) => Math.round(box.top)));
      const width = boxes.reduce((sum, box) => sum + box.width, 0);
      if (lines.size > 1 && width < room) found.push(`"${match[0]}" in ${block.tagName.toLowerCase()} (${Math.round(width)} px, the column ${Math.round(room)} px)`);
    }
  }
  return found;
}
"""


def test_every_page_keeps_its_words_whole_at_390_px(live_server, browser, site):  # noqa: F811
    job = Job.objects.filter(generations__isnull=False).distinct().get()
    paths = pages_by_role(site)
    paths["rui_researcher"].append(f"/generation/jobs/{job.pk}/")
    failures = []
    for username, urls in paths.items():
        context = browser.new_context(viewport={"width": 390, "height": 800})
        page = context.new_page()
        page.set_default_timeout(90_000)  # a busy shared machine
        log_in(page, live_server.url, username)
        for path in urls:
            page.goto(live_server.url + path)
            if page.locator("#report-building").count():  # the first build's progress page, then the report
                page.wait_for_url("**wait=1**", timeout=180_000)
            wait_until_drawn(page)
            failures += [f"{username} {path}: {split}" for split in page.evaluate(SPLIT_WORDS_SCRIPT)]
        context.close()
    failures = sorted(set(failures))
    assert not failures, f"{len(failures)} words split mid-word at 390 px:\n" + "\n".join(failures)


def test_the_split_check_finds_a_word_broken_in_a_narrow_cell(live_server, browser, researcher):
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    log_in(page, live_server.url, "rui_researcher")
    page.evaluate(
        "() => { const p = document.createElement('p'); p.textContent = 'x'.repeat(90);"
        " p.style.overflowWrap = 'anywhere'; document.querySelector('main').append(p); }"
    )
    assert page.evaluate(SPLIT_WORDS_SCRIPT) == []  # wider than the page: it has to break
    page.evaluate(
        "() => { const t = document.createElement('table'); t.innerHTML = '<tr><td>misgendered</td></tr>';"
        " t.querySelector('td').style.cssText = 'overflow-wrap: anywhere; width: 3em; max-width: 3em';"
        " t.style.width = 'auto'; document.querySelector('main').append(t); }"
    )
    assert any('"misgendered" in td' in split for split in page.evaluate(SPLIT_WORDS_SCRIPT))
    context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_navigation_folds_into_a_menu_on_a_phone_and_never_covers_the_username(
    live_server, browser, admin_user, width
):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    log_in(page, live_server.url, "ada_admin")
    links = page.locator(".topbar nav a")
    menu = page.get_by_role("button", name="Menu")
    if width < 600:
        expect(links.first).to_be_hidden()
        assert page.locator(".topbar").bounding_box()["height"] < 80
        menu.click()
        expect(menu).to_have_attribute("aria-expanded", "true")
    else:
        expect(menu).to_be_hidden()
    expect(links.first).to_be_visible()
    who = page.locator(".topbar .who").bounding_box()
    for index in range(links.count()):
        box = links.nth(index).bounding_box()
        overlaps = not (
            box["x"] + box["width"] <= who["x"]
            or who["x"] + who["width"] <= box["x"]
            or box["y"] + box["height"] <= who["y"]
            or who["y"] + who["height"] <= box["y"]
        )
        assert not overlaps, f"{links.nth(index).inner_text()} covers the username"
    context.close()
