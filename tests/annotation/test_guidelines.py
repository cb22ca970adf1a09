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
        assert "Current &lt;rule&gt;\nsecond line" in html and "Old" not in html
        assert "<kbd>g</kbd></th><td>the pool's guidelines (version 2)" in html

    def test_the_markdown_is_rendered_safely_and_the_sidebar_shows_the_same_text(self, client, annotator):
        pool, _ = pool_for(annotator, items=1)
        text = (
            "# Our rules\n\nA **misgendering** is any wrong pronoun.\n\n- one\n- two\n\n"
            "<script>alert(1)</script> [bad](javascript:alert(1)) [paper](https://example.org/p) "
            '<img src=x onerror="alert(2)">\n'
        )
        pool_guidelines_set(pool=pool, text=text, user=None)
        client.force_login(annotator)

        html = client.get(f"/annotate/{pool.name}/").content.decode()

        sidebar = html[html.index('<aside class="annotate-guidelines"') : html.index("</aside>")]
        dialog = html[html.index('<dialog id="annotate-guide"') :]
        dialog = dialog[: dialog.index("</dialog>")]
        for part in (sidebar, dialog):
            assert "<h1>Our rules</h1>" in part and "<strong>misgendering</strong>" in part
            assert "<li>one</li>" in part
            link = '<a href="https://example.org/p" target="_blank" rel="noopener noreferrer nofollow">paper</a>'
            assert link in part
            assert "&lt;script&gt;" in part and "<script>" not in part and "<img" not in part
            assert "javascript:" not in part.replace("[bad](javascript:alert(1))", "")
        assert "Concord's label definitions" not in html  # one text: the pool's own

    def test_g_says_when_no_guidelines_are_written_yet(self, client, annotator):
        pool, _ = pool_for(annotator, items=1)
        client.force_login(annotator)

        html = client.get(f"/annotate/{pool.name}/").content.decode()

        dialog = html[html.index('<dialog id="annotate-guide"') :]
        assert "none written yet" in dialog[: dialog.index("</dialog>")]
        assert "No guidelines are written for this pool yet" in dialog[: dialog.index("</dialog>")]
        assert "<kbd>g</kbd></th><td>the pool's guidelines (none written yet)" in html

    def test_the_versions_list_renders_each_version(self, client, researcher):
        pool, _ = pool_for(items=1)
        pool_guidelines_set(pool=pool, text="# First\n*slanted*", user=None)
        client.force_login(researcher)

        page = client.get(f"/pools/{pool.name}/guidelines/").content.decode()

        assert "<h1>First</h1>" in page and "<em>slanted</em>" in page

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


@pytest.mark.django_db
class TestNulCharacter:
    """PostgreSQL cannot store a NUL character: a text holding one is a form error and a command error, not a 500."""

    def test_the_page_answers_a_form_error_and_writes_nothing(self, client, researcher):
        pool, _ = pool_for(items=1)
        client.force_login(researcher)

        response = client.post(f"/pools/{pool.name}/guidelines/", {"text": "# Rules\nBe\x00 careful."})

        assert response.status_code == 400
        assert "NUL character" in response.content.decode()
        assert not PoolGuideline.objects.filter(pool=pool).exists()

    def test_the_command_says_so_without_a_traceback(self, tmp_path):
        pool, _ = pool_for(items=1)
        guide = tmp_path / "GUIDE.md"
        guide.write_bytes(b"# Guide\n\x00v1")

        with pytest.raises(CommandError, match="NUL character"):
            call_command("pool_guidelines", "--pool", pool.name, "--file", str(guide))
        assert not PoolGuideline.objects.filter(pool=pool).exists()
