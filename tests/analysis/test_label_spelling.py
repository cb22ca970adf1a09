"""One spelling per label: every page shows a label's display form ("no pronoun"); only exports
and the API use its key (`no_pronoun`)."""

from __future__ import annotations

import re

import pytest

from tests.analysis.factories import study_build


def shown_text(html: str) -> str:
    """What a reader sees: the page's text without its tags, attributes and scripts' data."""
    html = re.sub(r"<script\b.*?</script>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["/pools/study/", "/pools/study/adjudicate/", "/pools/study/quality/"])
def test_pages_show_labels_in_their_display_form(client, researcher, annotator, second_annotator, page):
    study_build(ana=annotator, bo=second_annotator)
    client.force_login(researcher)

    text = shown_text(client.get(page).content.decode())

    assert "no pronoun" in text.lower()
    assert "no_pronoun" not in text


@pytest.mark.django_db
def test_the_api_keeps_the_labels_key(api, researcher, annotator, second_annotator):
    study_build(ana=annotator, bo=second_annotator)
    api.force_authenticate(researcher)

    pool = api.get("/api/pools/study/").json()

    assert "no_pronoun" in pool["labels"]
