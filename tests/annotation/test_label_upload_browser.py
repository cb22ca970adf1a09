"""The pool page's label upload in headless Chromium, under the site's Content-Security-Policy: a preview shows the
first rows and writes nothing, a refused file lists its problems by the file's own name and line, and "Write labels"
writes the file (through the API, with the upload's progress)."""

import pytest

from annotation.models import Annotation
from tests.annotation.imported_study import build_pool, write_long
from tests.annotation.test_research_browser import log_in
from tests.browser_support import browser_marks

pytestmark = browser_marks


@pytest.fixture
def page(page):
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.errors = errors
    return page


def test_a_researcher_previews_then_writes_peoples_labels(live_server, researcher, page, tmp_path):
    from playwright.sync_api import expect

    study = build_pool()
    good = write_long(study, tmp_path / "people.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("item,annotator,label\nnowhere,a,correct\n", encoding="utf-8")
    log_in(page, live_server.url, "rui_researcher", f"/pools/{study.pool.name}/")
    form = page.locator("form.label-upload")

    form.locator("input[type=file]").set_input_files(str(bad))
    form.get_by_role("button", name="Check and preview labels").click()
    expect(form.locator(".import-errors")).to_contain_text("bad.csv:2: item 'nowhere', annotator 'a': no such item")

    form.locator("input[type=file]").set_input_files(str(good))
    form.get_by_role("button", name="Check and preview labels").click()
    expect(form.locator("table.label-upload-preview tbody tr")).to_have_count(5)
    expect(form.locator(".label-upload-result")).to_contain_text("Nothing written yet.")
    assert not Annotation.objects.exists()

    form.get_by_role("button", name="Write labels").click()
    expected = sum(len(given) for given in study.people.values())
    expect(form.locator(".label-upload-result")).to_contain_text(
        f"people.csv: {expected} labels by 3 annotators: {expected} new", timeout=60_000
    )
    assert Annotation.objects.filter(item__pool=study.pool, origin="imported").count() == expected
    assert not [e for e in page.errors if "Content Security Policy" in e]
