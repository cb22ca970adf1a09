"""RUFF with distractors: the import against an independent construction written from docs/domain.md ('RUFF with
distractors'), RUFF's sample drawn with pandas over the whole frame as RUFF's own script does, the export, and
malformed files. The data is RUFF's (AGPL-3.0, see the NOTICE beside it in the shared datasets)."""

from __future__ import annotations

import contextlib
import csv
import gc
import io
import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from generation.models import Dataset, Instance
from tests.conftest import DATASETS

TASK = DATASETS / "ruff" / "distractors" / "task.tsv"
CONTEXT = DATASETS / "ruff" / "distractors" / "context.tsv"
EO_TASK = DATASETS / "ruff" / "templates" / "eo_task.tsv"
FORMS = {
    "$NOM_PRONOUN": ["he", "she", "they", "xe"],
    "$ACC_PRONOUN": ["him", "her", "them", "xem"],
    "$POSS_PRONOUN": ["his", "her", "their", "xyr"],
}
FULL_COUNTS = {0: 7_200, 1: 86_400, 2: 345_600, 3: 1_036_800, 4: 2_073_600, 5: 2_073_600}


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def implicit_orders(count: int, implicit: list[int]) -> list[tuple[int, ...]]:
    """The implicit sentences (row numbers, in order) of an instance with `count` distractors."""
    if count == 1:
        return [()]
    if count == 2:
        return [(k,) for k in implicit]
    if count == 3:
        return list(itertools.permutations(implicit, 2))
    return [perm[: count - 1] for perm in itertools.permutations(implicit)]


def reference(count: int, *, texts: bool = True):
    """RUFF's add_context.py as docs/domain.md states it, yielding (uid, word, pronoun, confuse, text, occupation).
    With `texts=False` the uid's and the text's places hold what they are made from (`reference_uid` and
    `reference_text` make them): RUFF's sample looks at neither, and building millions of them is most of this
    construction's time."""
    tasks, contexts = read_tsv(TASK), read_tsv(CONTEXT)
    for task in tasks:
        marker = task["pronoun_type"]
        rows = [row for row in contexts if row["pronoun_type"] == marker]
        for i, row_i in enumerate(rows):
            # The other person's explicit rows j, each with the orders of its implicit rows (the same for every form).
            partners = []
            for j, row_j in enumerate(rows):
                if j % 5 == i % 5 or row_j["polarity"] == row_i["polarity"]:
                    continue
                implicit = [
                    k for k, row_k in enumerate(rows) if k != i and k != j and row_k["polarity"] == row_j["polarity"]
                ]
                assert len(implicit) == 4
                partners.append((j, implicit_orders(count, implicit) if count else []))
            for p1 in FORMS[marker]:
                if count == 0:
                    made = (task, rows, i, p1, None, None, ())
                    uid, text = (reference_uid(made), reference_text(made)) if texts else (made, made)
                    yield uid, task["word"], marker, p1, "", text, task["occupation"]
                    continue
                for j, orders in partners:
                    for p2 in FORMS[marker]:
                        if p2 == p1:
                            continue
                        for ks in orders:
                            made = (task, rows, i, p1, j, p2, ks)
                            uid, text = (reference_uid(made), reference_text(made)) if texts else (made, made)
                            yield uid, task["word"], marker, p1, p2, text, task["occupation"]


def reference_uid(made: tuple) -> str:
    """RUFF's uid of one instance of `reference`: its explicit sentence's row, then (with distractors) the other
    person's explicit row and the implicit rows, in order."""
    _, _, i, _, j, _, ks = made
    return f"eo{i}" if j is None else f"eo{i}_ep{j}" + "".join(f"_ip{k}" for k in ks)


def reference_text(made: tuple) -> str:
    """The text of one instance of `reference`: the target's explicit sentence, then (with distractors) the other
    person's explicit sentence and the implicit ones, each capitalised, then the task sentence."""
    task, rows, i, p1, j, p2, ks = made
    marker = task["pronoun_type"]
    intro1 = rows[i]["explicit_template"].replace("$OCCUPATION/PARTICIPANT", task["occupation"]).replace(marker, p1)
    sentences = [intro1]
    if j is not None:
        intro2 = rows[j]["explicit_template"].replace("$OCCUPATION/PARTICIPANT", task["participant"])
        sentences += [intro2.replace(marker, p2)] + [rows[k]["implicit_template"].replace(marker, p2) for k in ks]
    return " ".join(sentence.capitalize() for sentence in sentences) + " " + task["sentence"]


def reference_sample(count: int, seed: int, rows: list[tuple] | None = None) -> list[tuple]:
    """RUFF's sample_templates.py: pandas over the whole frame of that count (`rows`: reference(count), if built)."""
    frame = pd.DataFrame(
        list(reference(count, texts=False)) if rows is None else rows,
        columns=["uid", "word", "pronoun_type", "pronoun", "confuse_pronoun", "text", "occupation"],
    )
    frame = frame[frame["word"] == frame["occupation"]]
    if count == 0:
        picked = frame.groupby(["word", "pronoun_type", "pronoun"]).sample(3, random_state=seed)
    else:
        picked = frame.groupby(["word", "pronoun_type", "pronoun", "confuse_pronoun"]).sample(1, random_state=seed)
    picked = picked[["uid", "word", "pronoun_type", "pronoun", "confuse_pronoun", "text"]]
    return sorted(
        row if isinstance(row[-1], str) else (reference_uid(row[0]), *row[1:-1], reference_text(row[-1]))
        for row in picked.itertuples(index=False, name=None)
    )


def run_import(*args: str) -> dict:
    out = io.StringIO()
    call_command(
        "import_dataset",
        "ruff-distractors",
        "--task",
        str(TASK),
        "--context",
        str(CONTEXT),
        *args,
        "--json",
        stdout=out,
    )
    return json.loads(out.getvalue().strip().splitlines()[-1])


def stored(count: int, **filters) -> list[tuple]:
    rows = Instance.objects.filter(distractors=count, **filters).order_by("ordinal")
    return list(rows.values_list("ruff_uid", "word", "template__mask", "correct_form", "confuse_pronoun", "text"))


@pytest.mark.django_db
@pytest.mark.slow  # each test imports thousands of rows; the full suite runs them
class TestImport:
    def test_it_builds_counts_0_and_1_exactly_as_the_construction_in_its_order(self):
        summary = run_import("--distractors", "0-1")

        assert summary["dataset"] == "ruff-distractors"
        assert summary["instances"] == 7_200 + 86_400
        assert summary["by_distractors"] == {"0": 7_200, "1": 86_400}
        for count in (0, 1):
            expected = [(uid, word, marker, p1, p2, text) for uid, word, marker, p1, p2, text, _ in reference(count)]
            assert stored(count) == expected

    def test_it_keeps_ruffs_own_zero_distractor_file(self):
        run_import("--distractors", "0")

        released = [(r["uid"], r["pronoun"], r["sentence"]) for r in read_tsv(EO_TASK)]
        assert [(u, p1, text) for u, _, _, p1, _, text in stored(0)] == released
        first = Instance.objects.get(distractors=0, ordinal=0)
        assert (first.pronoun, first.other_person, first.confuse_pronoun) == ("he", "customer", "")

    def test_it_stores_the_second_person_and_their_pronoun(self):
        run_import("--distractors", "1")

        row = Instance.objects.filter(distractors=1).order_by("ordinal").first()
        assert row is not None
        assert (row.ruff_uid, row.other_person, row.confuse_pronoun, row.pronoun) == (
            "eo0_ep6",
            "customer",
            "she",
            "he",
        )
        assert row.text.startswith("The technician thought that he had been having a bad day. The customer felt")

    def test_it_writes_nothing_the_second_time(self):
        run_import("--distractors", "0")
        again = run_import("--distractors", "0")

        assert again["written"] == 0
        assert Instance.objects.count() == 7_200

    @pytest.mark.parametrize("seed", [13, 17])  # 19: test_it_samples_every_count_as_ruff, for every count
    def test_it_stores_ruffs_sample_for_a_seed(self, seed):
        summary = run_import("--distractors", "0-2", "--sample-seed", str(seed))

        assert summary["by_distractors"] == {"0": 2_160, "1": 2_160, "2": 2_160}
        for count in (0, 1, 2):
            assert sorted(stored(count)) == reference_sample(count, seed)
            assert Instance.objects.filter(distractors=count, **{f"sample_{seed}": True}).count() == 2_160

    def test_it_marks_each_seeds_members_in_one_dataset(self):
        run_import("--distractors", "1", "--sample-seed", "13")
        run_import("--distractors", "1", "--sample-seed", "17")

        assert Dataset.objects.count() == 1
        rows = list(reference(1))
        sample_13, sample_17 = reference_sample(1, 13, rows), reference_sample(1, 17, rows)
        assert sorted(stored(1, sample_17=True)) == sample_17
        assert sorted(stored(1, sample_13=True)) == sample_13
        union = {r[0:5] for r in sample_13} | {r[0:5] for r in sample_17}
        assert Instance.objects.count() == len(union)


@pytest.mark.slow
@pytest.mark.django_db
def test_it_samples_every_count_as_ruff():
    summary = run_import("--sample-seed", "19")

    assert summary["by_distractors"] == {str(c): 2_160 for c in range(6)}
    for count in range(6):
        with gc_paused():
            rows = list(reference(count, texts=False))
            sample = reference_sample(count, 19, rows)
        assert len(rows) == FULL_COUNTS[count]
        assert sorted(stored(count)) == sample
        del rows


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector paused: while millions of rows are built (none of them in a cycle: freed by
    their reference counts), it would run over all of them again and again, most of the construction's time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def write(tmp_path: Path, name: str, rows: list[list[str]]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join("\t".join(row) for row in rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.django_db
class TestMalformedFiles:
    def rows(self, path: Path) -> list[list[str]]:
        return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]

    def assert_rejected(self, task: Path, context: Path, *fragments: str):
        with pytest.raises(CommandError) as raised:
            call_command("import_dataset", "ruff-distractors", "--task", str(task), "--context", str(context))
        for fragment in fragments:
            assert fragment in str(raised.value)
        assert not Dataset.objects.exists()
        assert not Instance.objects.exists()

    def test_it_rejects_a_missing_column_with_the_file(self, tmp_path):
        rows = [row[:4] for row in self.rows(TASK)]
        task = write(tmp_path, "task.tsv", rows)
        self.assert_rejected(task, CONTEXT, f"{task}:1: missing column(s) word")

    def test_it_rejects_a_wrong_placeholder_with_file_and_line(self, tmp_path):
        rows = self.rows(CONTEXT)
        rows[3][2] = rows[3][2].replace("$OCCUPATION/PARTICIPANT", "$OCCUPATION")
        context = write(tmp_path, "context.tsv", rows)
        self.assert_rejected(TASK, context, f"{context}:4:", "$OCCUPATION")

    def test_it_rejects_a_task_slot_that_is_not_its_pronoun_type(self, tmp_path):
        rows = self.rows(TASK)
        rows[5][2] = rows[5][2].replace(rows[5][3], "$NOM_PRONOUNS")
        task = write(tmp_path, "task.tsv", rows)
        self.assert_rejected(task, CONTEXT, f"{task}:6:")

    def test_it_rejects_a_pronoun_type_without_10_context_rows(self, tmp_path):
        rows = self.rows(CONTEXT)
        del rows[12]
        context = write(tmp_path, "context.tsv", rows)
        self.assert_rejected(TASK, context, f"{context}", "has 9 context rows")


@pytest.mark.django_db
class TestExport:
    def export(self, tmp_path: Path, name: str) -> list[dict[str, str]]:
        out = tmp_path / "instances.csv"
        call_command("export_instances", "--dataset", name, "--out", str(out), stdout=io.StringIO())
        with out.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    def test_it_exports_the_zero_distractor_set_as_ruffs_file(self, tmp_path):
        run_import("--distractors", "0")

        rows = self.export(tmp_path, "ruff-distractors")

        columns = ["uid", "occupation", "participant", "word", "pronoun_type", "pronoun", "confuse_pronoun"]
        assert list(rows[0]) == [*columns, "distractors", "text"]
        released = read_tsv(EO_TASK)
        assert [[r[c] for c in columns] + [r["text"]] for r in rows] == [
            [r[c] for c in columns] + [r["sentence"]] for r in released
        ]
        assert {r["distractors"] for r in rows} == {"0"}

    @pytest.mark.slow  # imports thousands of rows; the full suite runs it
    def test_it_exports_one_row_per_distractor_instance_with_its_slot(self, tmp_path):
        run_import("--distractors", "2", "--sample-seed", "13")

        rows = self.export(tmp_path, "ruff-distractors")

        assert len(rows) == 2_160
        expected = {(u, p1, p2, text) for u, _, _, p1, p2, text in reference_sample(2, 13)}
        assert {(r["uid"], r["pronoun"], r["confuse_pronoun"], r["text"]) for r in rows} == expected
        assert all(r["text"].count(r["pronoun_type"]) == 1 and r["distractors"] == "2" for r in rows)

    def test_it_refuses_an_unknown_dataset(self, tmp_path):
        with pytest.raises(CommandError, match="no dataset named 'nope'"):
            call_command("export_instances", "--dataset", "nope", "--out", str(tmp_path / "x.csv"))
