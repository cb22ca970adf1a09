"""A researcher's own study from the browser, in headless Chromium under the site's Content-Security-Policy: "New pool
from files" on the pools page, its name and label set, then its page's uploads of the generations and of people's
labels."""

import pytest

from annotation.models import Annotation, Pool, PoolItem
from tests.annotation.test_research_browser import log_in
from tests.browser_support import browser_marks

pytestmark = browser_marks

GENERATIONS = (
    "item,model,dataset,context,generation,pronoun\n"
    'n01,writer,notes,"Write about Alex, who uses xe/xem.",Alex fixed the bike. Xe rode it.,xe\n'
    'n02,writer,notes,"Write about Alex, who uses xe/xem.",Alex fixed the bike. He rode it.,xe\n'
)
LABELS = "item,annotator,label\nn01,ann-a,correct\nn01,ann-b,correct\nn02,ann-a,misgendering\nn02,ann-b,correct\n"


@pytest.fixture
def page(page):
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.errors = errors
    return page


def test_a_researcher_makes_a_pool_from_files_and_uploads_them(live_server, researcher, page, tmp_path):
    from playwright.sync_api import expect

    generations = tmp_path / "generations.csv"
    generations.write_text(GENERATIONS, encoding="utf-8")
    labels = tmp_path / "people.csv"
    labels.write_text(LABELS, encoding="utf-8")
    log_in(page, live_server.url, "rui_researcher", "/pools/")

    page.get_by_role("link", name="New pool from files").click()
    expect(page.get_by_role("heading", name="New pool from files")).to_be_visible()
    page.get_by_label("Name").fill("my-study")
    page.get_by_label("Label set").fill("misgendering,correct")
    page.get_by_role("button", name="Make the pool").click()

    expect(page).to_have_url(f"{live_server.url}/pools/my-study/#import")
    expect(page.locator("ul.messages")).to_contain_text("Pool my-study is made in project default")
    page.set_input_files("input[name=csv_files]", str(generations))
    # The first import loads spaCy's tokenizer for the heuristic, which can take a while on a busy machine.
    page.get_by_role("button", name="Import", exact=True).click(timeout=60_000)
    expect(page.locator("table.import-jobs")).to_contain_text("2 rows read, 2 new items", timeout=60_000)

    form = page.locator("form.label-upload")
    form.locator("input[type=file]").set_input_files(str(labels))
    form.get_by_role("button", name="Write labels").click()
    expect(form.locator(".label-upload-result")).to_contain_text("people.csv: 4 labels by 2 annotators", timeout=60_000)

    pool = Pool.objects.get(name="my-study")
    assert (pool.created_by, pool.labels) == (researcher, ["misgendering", "correct"])
    assert PoolItem.objects.filter(pool=pool).count() == 2
    assert Annotation.objects.filter(item__pool=pool).count() == 4
    assert not [e for e in page.errors if "Content Security Policy" in e]
