"""Importing people's labels made elsewhere (docs/domain.md, "Bring your own study"): long and wide files,
pseudonymous accounts that cannot log in, origin `imported`, idempotent re-import, contradictions refused by file
and line unless replaced, and all or nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command

from annotation.models import ORIGIN_IMPORTED, Annotation
from annotation.services.label_files import LabelImportError, Upload
from annotation.services.label_import import imported_username, labels_import, labels_preview
from tests.annotation.imported_study import ANNOTATORS, build_pool, write_long, write_wide

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    return build_pool()


def _stored(pool) -> dict[tuple[str, str], str]:
    rows = Annotation.objects.filter(item__pool=pool).values_list("item__external_id", "annotator__username", "label")
    return {(item, user): label for item, user, label in rows}


def _expected(study) -> dict[tuple[str, str], str]:
    return {
        (item, imported_username(study.pool, name)): label
        for item, given in study.people.items()
        for name, label in given.items()
    }


def _run(*args) -> dict:
    out = io.StringIO()
    call_command("import_labels", *map(str, args), stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


class TestLongFile:
    def test_every_label_is_stored_as_an_imported_human_label(self, study, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        summary = _run(path, "--pool", study.pool.name)
        assert summary["new"] == sum(len(given) for given in study.people.values())
        assert summary["annotators"] == len(ANNOTATORS)
        assert _stored(study.pool) == _expected(study)
        assert set(Annotation.objects.filter(item__pool=study.pool).values_list("origin", flat=True)) == {
            ORIGIN_IMPORTED
        }

    def test_the_files_times_seconds_and_flags_are_kept(self, study, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        _run(path, "--pool", study.pool.name)
        first_item = next(iter(study.people))
        annotation = Annotation.objects.get(
            item__external_id=first_item, annotator__username=imported_username(study.pool, "ann-a")
        )
        assert annotation.created_at.isoformat() == "2025-03-01T10:00:00+00:00"
        assert annotation.seconds == 5.0
        assert annotation.extraneous is False

    def test_annotators_are_accounts_that_cannot_log_in(self, study, tmp_path):
        from django.contrib.auth import get_user_model

        _run(write_long(study, tmp_path / "people.csv"), "--pool", study.pool.name)
        users = get_user_model().objects.filter(username__startswith=f"imported.{study.pool.name}.")
        assert users.count() == len(ANNOTATORS)
        for user in users:
            assert not user.has_usable_password()
            assert not user.is_active
            assert authenticate(username=user.username, password="") is None

    def test_the_same_file_twice_changes_nothing(self, study, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        _run(path, "--pool", study.pool.name)
        before = list(Annotation.objects.filter(item__pool=study.pool).order_by("id").values())
        summary = _run(path, "--pool", study.pool.name)
        assert summary["new"] == 0 and summary["replaced"] == 0
        assert summary["unchanged"] == len(before)
        assert list(Annotation.objects.filter(item__pool=study.pool).order_by("id").values()) == before

    def test_a_contradiction_is_refused_by_file_and_line_and_nothing_is_written(self, study, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        _run(path, "--pool", study.pool.name)
        lines = path.read_text(encoding="utf-8").splitlines()
        item, annotator, label, *rest = lines[3].split(",")
        flipped = "correct" if label == "misgendering" else "misgendering"
        lines[3] = ",".join([item, annotator, flipped, *rest])
        lines.append(f"{next(iter(study.people))},ann-new,correct,,,,")  # a new label in the same file
        changed = tmp_path / "changed.csv"
        changed.write_text("\n".join(lines) + "\n", encoding="utf-8")
        before = _stored(study.pool)
        with pytest.raises(CommandError) as refused:
            _run(changed, "--pool", study.pool.name)
        assert (
            f"changed.csv:4: item '{item}', annotator '{annotator}': stored label '{label}', the file says "
            f"'{flipped}'" in str(refused.value)
        )
        assert _stored(study.pool) == before  # not even the good new line

    def test_replace_overwrites_what_the_file_contradicts(self, study, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        _run(path, "--pool", study.pool.name)
        lines = path.read_text(encoding="utf-8").splitlines()
        item, annotator, label, *rest = lines[1].split(",")
        flipped = "correct" if label == "misgendering" else "misgendering"
        lines[1] = ",".join([item, annotator, flipped, *rest])
        changed = tmp_path / "changed.csv"
        changed.write_text("\n".join(lines) + "\n", encoding="utf-8")
        summary = _run(changed, "--pool", study.pool.name, "--replace")
        assert summary["replaced"] == 1
        assert _stored(study.pool)[(item, imported_username(study.pool, annotator))] == flipped


class TestRefusals:
    def _refused(self, study, text: str) -> list[str]:
        with pytest.raises(LabelImportError) as refused:
            labels_import(source=Upload("mine.csv", text.encode()), pool_name=study.pool.name)
        assert not Annotation.objects.filter(item__pool=study.pool).exists()
        return refused.value.errors

    def test_every_bad_line_is_named_and_nothing_is_written(self, study):
        item = next(iter(study.people))
        errors = self._refused(
            study,
            "item,annotator,label,seconds\n"
            f"{item},ann-a,correct,3\n"
            f"{item},ann-b,no_pronoun,3\n"  # not in this pool's set
            f"nowhere,ann-a,correct,3\n"
            f"{item},ann-c,correct,-1\n"
            f"{item},ann-a,misgendering,3\n",  # contradicts line 2 of the same file
        )
        assert errors == [
            f"mine.csv:3: item '{item}', annotator 'ann-b': label 'no_pronoun' is not one of the pool's labels "
            "(misgendering, correct)",
            "mine.csv:4: item 'nowhere', annotator 'ann-a': no such item in pool 'byo' (neither its own id nor a "
            "public id)",
            f"mine.csv:5: item '{item}', annotator 'ann-c': seconds: must be a number >= 0, got '-1'",
            f"mine.csv:6: item '{item}', annotator 'ann-a': label 'misgendering', but line 2 says 'correct'",
        ]

    def test_a_header_without_the_columns_is_refused(self, study):
        errors = self._refused(study, "item,rater,label\nx,a,correct\n")
        assert errors[0] == "mine.csv:1: missing column(s): annotator (a long file; --wide for wide)"

    def test_a_missing_pool_is_named(self, study):
        with pytest.raises(LabelImportError, match="no pool 'elsewhere'"):
            labels_import(source=Upload("mine.csv", b"item,annotator,label\n"), pool_name="elsewhere")


class TestWideFile:
    def test_it_stores_what_the_long_file_stores(self, study, tmp_path):
        summary = _run(write_wide(study, tmp_path / "wide.csv"), "--pool", study.pool.name, "--wide")
        assert summary["new"] == sum(len(given) for given in study.people.values())
        assert _stored(study.pool) == _expected(study)
        # the long file then finds every label there, and completes each with its seconds and flag
        again = _run(write_long(study, tmp_path / "people.csv", created_at=False), "--pool", study.pool.name)
        assert again["new"] == again["replaced"] == 0
        assert again["completed"] == summary["new"]
        assert _stored(study.pool) == _expected(study)

    def test_an_empty_cell_is_not_a_label(self, study):
        item = next(iter(study.people))
        labels_import(
            source=Upload("wide.csv", f"item,ann-a,ann-b\n{item},correct,\n".encode()),
            pool_name=study.pool.name,
            wide=True,
        )
        assert list(_stored(study.pool).values()) == ["correct"]


class TestPreview:
    def test_it_shows_the_first_rows_and_writes_nothing(self, study, tmp_path):
        content = write_long(study, tmp_path / "people.csv").read_bytes()
        preview = labels_preview(source=Upload("people.csv", content), pool=study.pool)
        assert preview["ok"] and preview["new"] == sum(len(given) for given in study.people.values())
        assert [row["line"] for row in preview["rows"]] == [2, 3, 4, 5, 6]
        assert not Annotation.objects.filter(item__pool=study.pool).exists()

    def test_it_lists_the_problems_instead(self, study):
        preview = labels_preview(source=Upload("bad.csv", b"item,annotator,label\nx,a,correct\n"), pool=study.pool)
        assert not preview["ok"]
        assert preview["errors"][0].startswith("bad.csv:2: item 'x', annotator 'a': no such item")
