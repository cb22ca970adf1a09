"""The pool page's generations import keeps the files chosen across "Check and preview", as the label upload does:
the preview is shown in place and Import then writes the same files. Without the script the page asks for them again."""

import shutil

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import PoolImport
from tests.annotation.test_research_browser import log_in
from tests.browser_support import CHROMIUM
from tests.conftest import DEMO
from tests.factories import PoolFactory

ROWS = 24  # demo/generations_pre.csv


def _upload():
    return SimpleUploadedFile("generations_pre.csv", (DEMO / "generations_pre.csv").read_bytes(), "text/csv")


@pytest.mark.parametrize(
    ("header", "said"), [({}, "Choose the files again"), ({"X-Preview-In-Place": "1"}, "the files stay chosen")]
)
def test_the_preview_says_whether_the_files_are_kept(client, researcher, header, said):
    PoolFactory(name="gens")
    client.force_login(researcher)
    page = client.post(
        "/pools/gens/import/", {"csv_files": _upload(), "kind": "study", "preview": "true"}, headers=header
    ).content.decode()
    assert f"Nothing written yet: {ROWS} rows read" in page and said in page
    assert not PoolImport.objects.exists()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium")
def test_a_previewed_file_is_imported_without_choosing_it_again(live_server, researcher, page):
    from playwright.sync_api import expect

    PoolFactory(name="gens")
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    log_in(page, live_server.url, "rui_researcher", "/pools/gens/")
    form = page.locator("form.generations-import")
    form.locator("input[name=csv_files]").set_input_files(str(DEMO / "generations_pre.csv"))
    form.get_by_role("button", name="Check and preview").click()
    expect(form.locator(".generations-preview-summary")).to_contain_text(f"{ROWS} rows read")
    expect(form.locator(".generations-preview-summary")).to_contain_text("the files stay chosen")
    assert page.url.endswith("/pools/gens/")  # shown in place: no page was loaded
    assert form.locator("input[name=csv_files]").evaluate("(input) => input.files.length") == 1
    assert not PoolImport.objects.exists()
    form.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator(".messages, [role=status]").first).to_contain_text("generations_pre.csv")
    assert PoolImport.objects.get().file_names == ["generations_pre.csv"]
    assert errors == []
