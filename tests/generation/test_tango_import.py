"""Importing TANGO's misgendering.jsonl format: counts, the capitalised context, idempotence, and atomic failure
on bad lines (file:line). The files are written here (no TANGO sentence is copied); the demo file is ours too."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from generation.contexts import OPEN, build_context
from generation.datasets.registry import codebook_for
from generation.datasets.tango import MASK as TANGO_MASK
from generation.models import Dataset, Instance, PronounForm, Template
from generation.pronouns import BASES
from tests.conftest import DATASETS, DEMO

DEMO_FILE = DEMO / "tango_misgendering.jsonl"


def row(index: int, family: str, template: str, ante: str = "Rowan") -> dict:
    return {"template_idx": index, "ante": ante, "ante_type": "ante_nongendered", "pronoun_family": family,
            "template": template}  # fmt: skip


def write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def run_import(*args: str) -> dict:
    out = io.StringIO()
    call_command("import_dataset", "tango", *args, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db
class TestImport:
    def test_it_imports_one_instance_per_line_with_its_pronoun_family(self):
        summary = run_import("--templates", str(DEMO_FILE), "--name", "demo-tango")

        lines = [json.loads(line) for line in DEMO_FILE.read_text().splitlines() if line.strip()]
        expected = {base: sum(1 for line in lines if line["pronoun_family"] == base) for base in BASES}
        assert summary == {"dataset": "demo-tango", "instances": len(lines), "per_pronoun": expected}
        dataset = Dataset.objects.get(name="demo-tango")
        assert dataset.kind == "tango"
        assert Template.objects.filter(dataset=dataset).count() == len(lines)
        first = Instance.objects.filter(dataset=dataset).order_by("ordinal").first()
        assert first.pronoun == lines[0]["pronoun_family"]
        assert first.name == lines[0]["ante"]
        assert first.template.meta["ante_type"] == lines[0]["ante_type"]

    def test_it_stores_tangos_codebook_as_its_csv_spells_it(self, tmp_path):
        run_import("--templates", str(DEMO_FILE))

        with (DATASETS / "tango" / "tango-pronouns.csv").open(newline="") as handle:
            rows = {r["gender"]: r for r in csv.DictReader(handle)}
        stored = {(f.base, f.form): f.surface for f in PronounForm.objects.filter(dataset__name="tango")}
        columns = {"nom": "nom", "acc": "acc", "pos_dep": "gen_att", "pos_ind": "gen_pred", "ref": "ref"}
        assert stored == {(base, form): rows[base][column] for base in BASES for form, column in columns.items()}
        assert codebook_for("tango").omega == {v for r in rows.values() for k, v in r.items() if k in columns.values()}

    def test_its_context_is_pythons_capitalize_of_the_template(self, tmp_path):
        path = write(tmp_path / "t.jsonl", [row(0, "xe", "rowan waters the Ferns at Noon, and xe")])
        run_import("--templates", str(path))

        instance = Instance.objects.get()
        context = build_context(instance.text, instance.mask, instance.correct_form, OPEN)
        # str.capitalize() upper-cases the first character and lower-cases all the others.
        assert context == "Rowan waters the ferns at noon, and xe"
        assert instance.template.text == "rowan waters the Ferns at Noon, and xe" + TANGO_MASK
        assert instance.correct_form == "xe"

    def test_it_changes_nothing_when_run_again(self):
        run_import("--templates", str(DEMO_FILE))
        before = list(Instance.objects.order_by("ordinal").values_list("id", "text"))

        summary = run_import("--templates", str(DEMO_FILE))

        assert summary["instances"] == len(before)
        assert list(Instance.objects.order_by("ordinal").values_list("id", "text")) == before

    def test_it_refuses_another_file_under_the_same_name(self, tmp_path):
        run_import("--templates", str(DEMO_FILE))
        other = write(tmp_path / "other.jsonl", [row(0, "he", "Rowan sings, and he")])

        with pytest.raises(CommandError, match="already imported from other files"):
            run_import("--templates", str(other))

    def test_it_skips_and_counts_pronoun_families_concord_does_not_study(self, tmp_path):
        path = write(
            tmp_path / "t.jsonl",
            [
                row(0, "he", "Rowan sings, and he"),
                row(0, "ey", "Rowan sings, and ey"),
                row(0, "fae", "Rowan sings, and fae"),
            ],
        )

        summary = run_import("--templates", str(path))

        assert summary["per_pronoun"] == {"he": 1, "she": 0, "they": 0, "xe": 0}
        assert summary["skipped_families"] == {"ey": 1, "fae": 1}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], r"t.jsonl:1: not a JSON object"),
        (["[1, 2]"], r"t.jsonl:1: expected a JSON object"),
        (
            [{"template_idx": 0, "ante": "A", "pronoun_family": "he", "template": "A sings"}],
            r"t.jsonl:1: missing field\(s\) ante_type",
        ),
        ([row(0, "he", "Rowan sings"), row(1, "he/him", "Rowan sings")], r"t.jsonl:2: pronoun_family must be"),
        ([row(0, "he", "")], r"t.jsonl:1: template must be a non-empty string"),
        ([row(0, "he", "Rowan {continuation}")], r"t.jsonl:1: template contains \{continuation\}"),
        ([row(0, "he", "Rowan sings", ante="")], r"t.jsonl:1: ante must be a non-empty string"),
        ([row(0, "he", "Rowan sings"), row(0, "he", "Rowan sings again")], r"t.jsonl:2: .* already on line 1"),
        ([row(0, "ey", "Rowan sings, and ey")], r"no he, she, they or xe rows"),
    ],
)
def test_it_rejects_a_malformed_tango_file_and_writes_nothing(tmp_path, lines, message):
    path = write(tmp_path / "t.jsonl", lines)

    with pytest.raises(CommandError, match=message):
        run_import("--templates", str(path))

    assert Dataset.objects.count() == 0
    assert Instance.objects.count() == 0


@pytest.mark.django_db
def test_it_names_the_line_of_a_bad_byte(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(row(0, "he", "Rowan sings")).encode() + b"\n\xff\n")

    with pytest.raises(CommandError, match=r"t.jsonl:2: not UTF-8"):
        run_import("--templates", str(path))
    assert Dataset.objects.count() == 0
