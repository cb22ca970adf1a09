"""WCAG AA contrast on every page, in light and dark mode, at 1280 px and 390 px.

Chromium computes each visible text element's colour and the background it sits on (its own and its ancestors'
background colours, composited); the ratio is WCAG 2's relative-luminance contrast, which must reach 4.5:1 for text
and 3:1 for large text (24 px, or 18.66 px bold). Disabled controls are exempt, as WCAG exempts inactive components;
text over an image (a figure) is checked by the figure's own colours, not here.
"""

from __future__ import annotations

import re

import pytest

from generation.models import JobStatus
from tests.analysis.factories import study_build
from tests.annotation.factories import pool_for
from tests.browser_support import browser_marks, log_in, wait_until_drawn
from tests.factories import GenerationJobFactory, PoolFactory

pytestmark = browser_marks

CONTRAST_SCRIPT = """
() => {
  const parse = (text) => {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const parts = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return {r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1};
  };
  const over = (top, bottom) => {
    const a = top.a + bottom.a * (1 - top.a);
    if (a === 0) return {r: 0, g: 0, b: 0, a: 0};
    const mix = (t, b) => (t * top.a + b * bottom.a * (1 - top.a)) / a;
    return {r: mix(top.r, bottom.r), g: mix(top.g, bottom.g), b: mix(top.b, bottom.b), a};
  };
  const luminance = (c) => {
    const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  };
  const canvas = parse(getComputedStyle(document.documentElement).backgroundColor);
  const dark = matchMedia('(prefers-color-scheme: dark)').matches;
  const page = canvas && canvas.a > 0 ? canvas : (dark ? {r: 18, g: 18, b: 18, a: 1} : {r: 255, g: 255, b: 255, a: 1});
  const background = (element) => {
    const layers = [];
    for (let node = element; node && node.nodeType === 1; node = node.parentElement) {
      const style = getComputedStyle(node);
      if (style.backgroundImage && style.backgroundImage !== 'none') return null;  // text over an image
      const colour = parse(style.backgroundColor);
      if (colour && colour.a > 0) { layers.push(colour); if (colour.a >= 1) break; }
    }
    let result = page;
    for (const layer of layers.reverse()) result = over(layer, result);
    return result;
  };
  const failures = [];
  for (const element of document.body.querySelectorAll('*')) {
    const own = [...element.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim()).map((n) => n.textContent.trim()).join(' ');
    if (!own) continue;
    if (element.closest('[hidden], [aria-hidden=true], script, style, noscript, template, svg, .visually-hidden, .skip-link')) continue;
    if (element.closest('button:disabled, input:disabled, select:disabled, textarea:disabled, fieldset:disabled, option')) continue;
    const style = getComputedStyle(element);
    if (style.visibility !== 'visible' || style.display === 'none' || !element.getClientRects().length) continue;
    let opacity = 1;
    for (let node = element; node && node.nodeType === 1; node = node.parentElement) opacity *= Number(getComputedStyle(node).opacity);
    if (opacity === 0) continue;
    const bg = background(element);
    if (!bg) continue;
    const fg = parse(style.color);
    fg.a *= opacity;
    const text = over(fg, bg);
    const [l1, l2] = [luminance(text), luminance(bg)].sort((a, b) => b - a);
    const ratio = (l1 + 0.05) / (l2 + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const needed = large ? 3 : 4.5;
    if (ratio < needed - 0.01) {
      failures.push(`${element.tagName.toLowerCase()}${element.className ? '.' + String(element.className).split(' ').join('.') : ''} `
        + `"${own.slice(0, 40)}": ${ratio.toFixed(2)}:1 (needs ${needed}:1; ${style.color} on rgb(${Math.round(bg.r)}, ${Math.round(bg.g)}, ${Math.round(bg.b)}))`);
    }
  }
  return failures;
}
"""


@pytest.fixture
def site(admin_user, researcher, annotator, second_annotator):
    """Something on every page: a study pool with jobs, labels, an adjudication; a pool for the annotator; jobs."""
    study = study_build(ana=annotator, bo=second_annotator)
    pool_for(annotator, pool=PoolFactory(name="queue"), items=2)
    running = GenerationJobFactory(status=JobStatus.RUNNING, total_items=10, done_items=4)
    GenerationJobFactory(status=JobStatus.FAILED, error="Traceback: boom")
    return {"study": study.name, "job": running.pk}


def pages_by_role(site: dict) -> dict[str, list[str]]:
    pool, job = site["study"], site["job"]
    cell = "model=m1&dataset=misgendered&setting=pre&pronoun=xe"
    return {
        "ana": ["/annotate/", "/annotate/queue/"],
        "rui_researcher": [
            "/",
            "/pools/",
            "/pools/new/files/",
            f"/pools/{pool}/",
            f"/pools/{pool}/adjudicate/",
            f"/pools/{pool}/quality/",
            "/reports/",
            f"/reports/{pool}/",
            f"/reports/{pool}/cells/?model=m1",
            f"/reports/{pool}/cells/?{cell}",
            "/generation/jobs/",
            f"/generation/jobs/{job}/",
        ],
        "ada_admin": ["/", f"/pools/{pool}/assign/", "/pools/new/", "/generation/jobs/", "/generation/jobs/new/"],
    }


REPORT_BUILD = re.compile(r"/reports/[^/]+/export/json/")
VARIANTS = [(width, scheme) for width in (1280, 390) for scheme in ("light", "dark")]


def contrast_failures(browser, base_url: str, site: dict) -> list[str]:
    """Every page once, checked at each width and colour scheme in turn (the media and viewport are switched in
    place: the computed styles follow at once, without loading the page again)."""
    failures = []

    def check(page, label: str) -> None:
        for width, scheme in VARIANTS:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            failures.extend(f"{label} ({scheme}, {width} px): {failure}" for failure in page.evaluate(CONTRAST_SCRIPT))

    # A report's first build: its progress page asks for the build and opens the report once it is built. The request
    # waits until the progress page has been checked, so that the page does not go away while it is.
    build: dict = {"checked": False, "held": []}

    def hold_the_build(route) -> None:
        if build["checked"]:
            route.continue_()
        else:
            build["held"].append(route)

    for username, paths in pages_by_role(site).items():
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(90_000)  # a busy shared machine; the pages answer in well under a second when quiet
        log_in(page, base_url, username)
        page.route(REPORT_BUILD, hold_the_build)
        for path in paths:
            build["checked"] = False
            response = page.goto(base_url + path)
            assert response is not None and response.status == 200, f"{username} {path}: {response and response.status}"
            wait_until_drawn(page)
            check(page, f"{username} {path}")
            building = page.locator("#report-building").count()
            build["checked"] = True
            for route in build["held"]:
                route.continue_()
            build["held"].clear()
            if building:  # the first build's progress page, then the report
                page.wait_for_url("**wait=1**", timeout=180_000)
                wait_until_drawn(page)
                check(page, f"{username} {path}")
        context.close()
    return failures


def test_every_page_reaches_wcag_aa_contrast_in_both_schemes_at_both_widths(live_server, browser, site):
    failures = contrast_failures(browser, live_server.url, site)
    assert not failures, f"{len(failures)} text elements below WCAG AA:\n" + "\n".join(failures)


def test_the_contrast_check_finds_faint_text(live_server, browser, site):
    """The check itself: light grey text on white is reported."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    page = context.new_page()
    log_in(page, live_server.url, "rui_researcher")
    page.evaluate(
        "() => { const p = document.createElement('p'); p.textContent = 'faint words'; "
        "p.style.color = '#cccccc'; p.style.background = '#ffffff'; document.querySelector('main').append(p); }"
    )
    assert any("faint words" in failure for failure in page.evaluate(CONTRAST_SCRIPT))
    context.close()
