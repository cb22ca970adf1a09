"""A pool's guidelines are versioned, and each annotation keeps the version in force when it was saved
(docs/domain.md, 'A study others can check')."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from analysis.selectors.human import by_guideline_version
from annotation.models import Annotation, PoolGuideline
from annotation.selectors.export import pool_annotation_rows
from annotation.services.guidelines import GuidelineError, pool_guidelines_set
from tests.annotation.factories import pool_for

SUBMIT = "/api/annotations/"


def _save(annotator, item, label: str) -> int | None:
    """Save through the annotator API; the version stored with the annotation."""
    client = APIClient()
    client.force_authenticate(annotator)
    response = client.post(SUBMIT, {"item": item.public_id, "label": label}, format="json")
    assert response.status_code in (200, 201), response.content
    return Annotation.objects.get(item=item, annotator=annotator).guideline_version


@pytest.mark.django_db
class TestVersions:
    def test_it_numbers_versions_from_one_and_keeps_the_old_ones(self, researcher):
        pool, _ = pool_for(items=1)

        first = pool_guidelines_set(pool=pool, text="# Rules\nBe careful.", user=researcher)
        second = pool_guidelines_set(pool=pool, text="# Rules\nBe very careful.", user=researcher)

        assert (first.version, second.version) == (1, 2)
        pool.refresh_from_db()
        assert pool.guideline_version == 2
        assert list(PoolGuideline.objects.filter(pool=pool).values_list("version", "text")) == [
            (1, "# Rules\nBe careful."),
            (2, "# Rules\nBe very careful."),
        ]

    def test_it_refuses_an_empty_text_or_the_same_text_again(self, researcher):
        pool, _ = pool_for(items=1)
        pool_guidelines_set(pool=pool, text="Rules", user=researcher)

        for text in ("  ", "Rules"):
            with pytest.raises(GuidelineError):
                pool_guidelines_set(pool=pool, text=text, user=researcher)
        assert PoolGuideline.objects.filter(pool=pool).count() == 1

    def test_the_command_prints_the_pool_and_the_new_version(self, tmp_path, capsys):
        pool, _ = pool_for(items=1)
        guide = tmp_path / "GUIDE.md"
        guide.write_text("# Guide\nv1", encoding="utf-8")
        call_command("pool_guidelines", "--pool", pool.name, "--file", str(guide))
        guide.write_text("# Guide\nv2", encoding="utf-8")
        call_command("pool_guidelines", "--pool", pool.name, "--file", str(guide))

        printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert printed == [{"pool": pool.name, "version": 1}, {"pool": pool.name, "version": 2}]

    def test_the_command_names_an_unknown_pool(self, tmp_path):
        guide = tmp_path / "GUIDE.md"
        guide.write_text("x", encoding="utf-8")
        with pytest.raises(CommandError, match="no pool named"):
            call_command("pool_guidelines", "--pool", "nope", "--file", str(guide))


@pytest.mark.django_db
class TestStamps:
    def test_an_edit_mid_study_stamps_the_saves_after_it_with_the_new_version(self, annotator, researcher):
        pool, items = pool_for(annotator, items=3)
        before = _save(annotator, items[0], "correct")  # no guidelines yet
        pool_guidelines_set(pool=pool, text="Version one", user=researcher)
        under_one = _save(annotator, items[1], "misgendering")
        pool_guidelines_set(pool=pool, text="Version two", user=researcher)
        under_two = _save(annotator, items[2], "correct")
        revised = _save(annotator, items[1], "correct")  # a revision is saved under the version in force now

        assert [before, under_one, under_two, revised] == [None, 1, 2, 2]
        stored = dict(Annotation.objects.values_list("item__public_id", "guideline_version"))
        assert stored == {items[0].public_id: None, items[1].public_id: 2, items[2].public_id: 2}
        exported = {row["item_id"]: row["guideline_version"] for row in pool_annotation_rows(pool=pool)}
        assert exported == stored

    def test_the_report_compares_the_versions_by_hand_worked_agreement(self, annotator, second_annotator, researcher):
        pool, items = pool_for(annotator, second_annotator, items=4)
        # heuristic_correct is True on every item: agreement is "the label is not misgendering".
        assert all(item.heuristic_correct for item in items)
        pool_guidelines_set(pool=pool, text="one", user=researcher)
        _save(annotator, items[0], "correct")  # agrees
        _save(annotator, items[1], "misgendering")  # disagrees
        pool_guidelines_set(pool=pool, text="two", user=researcher)
        for item in items[:3]:
            _save(second_annotator, item, "no_pronoun")  # each agrees

        rows = by_guideline_version(pool=pool)

        assert [(row["guideline_version"], row["n"], row["agreement"]) for row in rows] == [(1, 2, 0.5), (2, 3, 1.0)]
        assert rows[0]["sem"] == pytest.approx(0.5)  # sd 0.7071 (n-1) over sqrt(2)

    def test_one_version_gives_no_table(self, annotator, researcher):
        pool, items = pool_for(annotator, items=2)
        pool_guidelines_set(pool=pool, text="one", user=researcher)
        _save(annotator, items[0], "correct")
        assert by_guideline_version(pool=pool) == []


@pytest.mark.django_db
class TestPages:
    def test_the_annotation_page_shows_the_current_version_behind_a_key_the_help_lists(self, client, annotator):
        pool, _ = pool_for(annotator, items=1)
        pool_guidelines_set(pool=pool, text="Old <rule>", user=None)
        pool_guidelines_set(pool=pool, text="Current <rule>\nsecond line", user=None)
        client.force_login(annotator)

        html = client.get(f"/annotate/{pool.name}/").content.decode()

        assert 'id="annotate-guide"' in html and 'data-version="2"' in html
        assert "Current &lt;rule&gt;<br>second line" in html and "Old" not in html
        assert "<kbd>g</kbd></th><td>the pool's guidelines (version 2)" in html

    def test_a_researcher_saves_a_version_from_the_pool_page_and_reads_the_old_ones(self, client, researcher):
        pool, _ = pool_for(items=1)
        client.force_login(researcher)
        url = f"/pools/{pool.name}/guidelines/"

        assert client.post(url, {"text": "first"}).status_code == 302
        assert client.post(url, {"text": "second"}).status_code == 302
        page = client.get(url).content.decode()

        assert 'data-version="1"' in page and 'data-version="2"' in page and "first" in page
        assert client.post(url, {"text": ""}).status_code == 400

    def test_an_annotator_cannot_set_guidelines(self, client, annotator):
        pool, _ = pool_for(annotator, items=1)
        client.force_login(annotator)
        assert client.post(f"/pools/{pool.name}/guidelines/", {"text": "mine"}).status_code == 403
        assert not PoolGuideline.objects.exists()
