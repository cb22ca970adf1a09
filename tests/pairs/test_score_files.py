"""`import_pair_scores` and `export_pair_scores`: scores made elsewhere come in whole or not at all, and go out with
both sentences."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import CommandError, call_command

from generation.models import PairScore
from tests.pairs.files import crows_file, stereoset_file

pytestmark = pytest.mark.django_db

HEADER = "model,dataset,pair,score_stereotypical,score_anti_stereotypical\n"


@pytest.fixture
def datasets(tmp_path):
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c.csv")), "--bias-type",
                 "gender", "--name", "cp", stdout=io.StringIO())  # fmt: skip
    call_command("import_dataset", "stereoset", "--file", str(stereoset_file(tmp_path / "s.json")), "--name", "ss",
                 stdout=io.StringIO())  # fmt: skip


def write(tmp_path, body: str, name="scores.csv"):
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_it_imports_scores_and_exports_them_with_both_sentences(tmp_path, datasets):
    path = write(tmp_path, "bert,cp,2,-10.5,-12.25\nbert,cp,0,-3,-1\nbert,ss,a1,-4,-4\n")
    out = io.StringIO()
    call_command("import_pair_scores", str(path), stdout=out)
    assert "3 scores read: 3 new" in out.getvalue()
    score = PairScore.objects.get(pair__source_id="2", model="bert")
    assert (score.method, score.score_stereotypical, score.score_anti_stereotypical) == ("imported", -10.5, -12.25)
    target = tmp_path / "out.csv"
    call_command("export_pair_scores", "--dataset", "cp", "--model", "bert", "--out", str(target), stdout=io.StringIO())
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert list(rows[0]) == ["pair", "dataset", "stereotypical", "anti_stereotypical", "score_stereotypical",
                             "score_anti_stereotypical"]  # fmt: skip
    assert [(r["pair"], r["dataset"], float(r["score_stereotypical"])) for r in rows] == [("0", "cp", -3.0),
                                                                                          ("2", "cp", -10.5)]  # fmt: skip
    assert rows[1]["stereotypical"] == "Grandma cried at the film."


def test_it_changes_nothing_on_the_same_file_and_refuses_other_scores_for_a_stored_pair(tmp_path, datasets):
    call_command("import_pair_scores", str(write(tmp_path, "bert,cp,0,-3,-1\n")), stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_pair_scores", str(write(tmp_path, "bert,cp,0,-3,-1\n")), stdout=out)
    assert "0 new, 1 already stored" in out.getvalue()
    path = write(tmp_path, "bert,cp,1,-2,-2\nbert,cp,0,-3,-9\n", "other.csv")
    with pytest.raises(CommandError, match=rf"{path}:3: model bert has other scores stored"):
        call_command("import_pair_scores", str(path))
    assert PairScore.objects.count() == 1


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("bert,cp,99,-1,-2", "dataset cp has no pair '99'"),
        ("bert,nope,0,-1,-2", "dataset 'nope' is not a dataset of pairs"),
        ("bert,cp,0,minus one,-2", "score_stereotypical 'minus one' is not a number"),
        ("bert,cp,0,-1,inf", "score_anti_stereotypical 'inf' is not a finite number"),
        ("bert,cp,1,-1,-2", "model bert, dataset cp, pair 1 already on line 2"),
    ],
)
def test_it_refuses_a_bad_scores_file_naming_file_and_line_and_writes_nothing(tmp_path, datasets, row, problem):
    path = write(tmp_path, f"bert,cp,1,-1,-2\n{row}\n")
    with pytest.raises(CommandError) as caught:
        call_command("import_pair_scores", str(path))
    assert f"{path}:3: {problem}" in str(caught.value)
    assert not PairScore.objects.exists()


def test_it_asks_for_the_method_when_a_model_has_several(tmp_path, datasets):
    path = tmp_path / "m.csv"
    path.write_text("model,dataset,pair,method,score_stereotypical,score_anti_stereotypical\n"
                    "bert,cp,0,pll,-1,-2\nbert,cp,0,pll-word-l2r,-1.5,-2\n", encoding="utf-8")  # fmt: skip
    call_command("import_pair_scores", str(path), stdout=io.StringIO())
    with pytest.raises(CommandError, match="choose one with --method"):
        call_command("export_pair_scores", "--dataset", "cp", "--model", "bert", "--out", str(tmp_path / "o.csv"))
    call_command("export_pair_scores", "--dataset", "cp", "--model", "bert", "--method", "pll-word-l2r",
                 "--out", str(tmp_path / "o.csv"), stdout=io.StringIO())  # fmt: skip
    assert "-1.5" in (tmp_path / "o.csv").read_text()
