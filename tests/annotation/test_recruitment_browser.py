"""A Prolific participant in headless Chromium: the study link signs them in, they label their items with the
keyboard, and the page ends on their completion code and the button back to Prolific."""

import re

import pytest

from annotation.models import Annotation, Participant
from annotation.services.recruitment import recruitment_open
from tests.browser_support import browser_marks
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = browser_marks

PID = "5f3a9c0d1e2b4a6f8c7d9e0a"


@pytest.fixture
def browser_page(page):
    return page


def test_a_participant_joins_through_the_link_and_finishes_with_the_code(live_server, browser_page):
    from playwright.sync_api import expect

    pool = PoolFactory(name="prolific-study")
    for n in range(3):
        PoolItemFactory(pool=pool, continuation=f"Xe smiled at the crowd, {n}.")
    recruitment = recruitment_open(pool=pool, items_per_person=2, completion_code="C0MPL3T3")
    page = browser_page

    page.goto(f"{live_server.url}/study/{recruitment.token}/?PROLIFIC_PID={PID}&STUDY_ID=s1&SESSION_ID=x1")
    expect(page).to_have_url(re.compile(rf"^{re.escape(live_server.url)}/annotate/{pool.name}/(#.*)?$"))
    position = page.locator("#annotate-position")
    expect(position).to_have_text("Item 1 of 2 · 0 done")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(position).to_have_text("Item 2 of 2 · 1 done")
    page.keyboard.press("2")
    page.keyboard.press("Enter")

    expect(page).to_have_url(f"{live_server.url}/study/finish/")
    expect(page.locator("#study-code")).to_have_text("C0MPL3T3")
    expect(page.locator("#study-complete")).to_have_attribute(
        "href", "https://app.prolific.com/submissions/complete?cc=C0MPL3T3"
    )
    participant = Participant.objects.get(participant_id=PID)
    assert participant.finished_at is not None and participant.code_shown == "C0MPL3T3"
    labels = sorted(Annotation.objects.filter(annotator=participant.user).values_list("label", flat=True))
    assert labels == ["correct", "misgendering"]
