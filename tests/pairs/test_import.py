"""`import_dataset crows-pairs|stereoset`: pairs turned as docs/domain.md says, bias types kept apart, idempotence,
and bad files refused with file:line and nothing written."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from generation.models import Dataset, Pair
from tests.pairs.files import CROWS_HEADER, CROWS_ROWS, STEREOSET_ITEMS, crows_file, stereoset_file, stereoset_item

pytestmark = pytest.mark.django_db


def run(*args) -> dict:
    out = io.StringIO()
    call_command("import_dataset", *map(str, args), "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_it_imports_crows_pairs_turning_antistereo_rows_so_the_stereotype_comes_first(tmp_path):
    summary = run("crows-pairs", "--file", crows_file(tmp_path / "crows.csv"), "--bias-type", "gender", "--name", "cp")
    assert summary == {"dataset": "cp", "kind": "crows-pairs", "pairs": 4, "skipped_bias_types": {"socioeconomic": 1}}
    pairs = {p.source_id: p for p in Pair.objects.filter(dataset__name="cp")}
    assert sorted(pairs) == ["0", "1", "2", "4"]
    assert (pairs["0"].stereotypical, pairs["0"].anti_stereotypical) == CROWS_ROWS[0][1:3]
    # antistereo: sent_less is the stereotypical sentence
    assert (pairs["2"].stereotypical, pairs["2"].anti_stereotypical) == ("Grandma cried at the film.",
                                                                         "Grandpa cried at the film.")  # fmt: skip
    assert pairs["2"].extra["stereo_antistereo"] == "antistereo"
    assert pairs["2"].line == 4 and pairs["2"].bias_type == "gender" and pairs["2"].unrelated == ""


def test_it_imports_every_bias_type_without_the_flag(tmp_path):
    assert run("crows-pairs", "--file", crows_file(tmp_path / "crows.csv"), "--name", "all")["pairs"] == 5


def test_it_imports_stereoset_intrasentence_items_keeping_the_unrelated_option(tmp_path):
    path = stereoset_file(tmp_path / "dev.json")
    summary = run("stereoset", "--file", path, "--bias-type", "gender", "--name", "ss")
    assert summary["pairs"] == 3 and summary["skipped_bias_types"] == {"profession": 1}
    pair = Pair.objects.get(dataset__name="ss", source_id="b2")
    assert (pair.stereotypical, pair.anti_stereotypical, pair.unrelated) == (
        "His sister is emotional.", "His sister is stoic.", "His sister is tarmac.")  # fmt: skip
    # the line of the item's id in the file
    text = path.read_text().splitlines()
    assert '"id": "b2"' in text[pair.line - 1]
    assert Dataset.objects.get(name="ss").kind == "stereoset"


def test_it_changes_nothing_when_the_same_file_is_imported_again_and_refuses_another_under_the_name(tmp_path):
    path = crows_file(tmp_path / "crows.csv")
    run("crows-pairs", "--file", path, "--name", "cp")
    ids = list(Pair.objects.values_list("pk", flat=True))
    out = io.StringIO()
    call_command("import_dataset", "crows-pairs", "--file", str(path), "--name", "cp", stdout=out)
    assert "already imported, unchanged" in out.getvalue()
    assert list(Pair.objects.values_list("pk", flat=True)) == ids
    with pytest.raises(CommandError, match="other files or arguments"):
        run("crows-pairs", "--file", path, "--name", "cp", "--bias-type", "gender")


def _crows_text(rows: list[list[str]]) -> str:
    handle = io.StringIO()
    writer = csv.writer(handle)
    writer.writerow(CROWS_HEADER)
    writer.writerows(rows)
    return handle.getvalue()


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (["7", "Women knit.", "", "stereo", "gender", "", "", ""], "sent_less is empty: a pair needs both sentences"),
        (["7", "Women knit.", "Men knit.", "sideways", "gender", "", "", ""], "stereo_antistereo 'sideways'"),
        (["0", "Women knit.", "Men knit.", "stereo", "gender", "", "", ""], "pair id '0' already on line 2"),
    ],
)
def test_it_refuses_a_bad_crows_pairs_file_naming_file_and_line_and_writes_nothing(tmp_path, row, problem):
    path = tmp_path / "bad.csv"
    good = ["0", "Girls like dolls.", "Boys like dolls.", "stereo", "gender", "", "", ""]
    path.write_text(_crows_text([good, good[:0] + ["1", *good[1:]], row]), encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        run("crows-pairs", "--file", path, "--name", "bad")
    assert f"{path}:4: {problem}" in str(caught.value)
    assert "nothing written" in str(caught.value)
    assert not Dataset.objects.filter(name="bad").exists() and not Pair.objects.exists()


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ({**stereoset_item("z9", "S.", "A.", "U."), "sentences": stereoset_item("z9", "S.", "A.", "U.")["sentences"][1:]},
         "no anti-stereotype sentence: a pair needs both sentences"),
        (stereoset_item("a1", "S.", "A.", "U."), "pair id 'a1' already on line"),
    ],
)  # fmt: skip
def test_it_refuses_a_bad_stereoset_file_naming_file_and_line_and_writes_nothing(tmp_path, item, problem):
    path = stereoset_file(tmp_path / "dev.json", [*STEREOSET_ITEMS, item])
    with pytest.raises(CommandError) as caught:
        run("stereoset", "--file", path, "--name", "bad")
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if f'"{item["id"]}"' in text and n > 40)
    assert f"{path}:{line}: intrasentence item 5: {problem}" in str(caught.value)
    assert not Dataset.objects.filter(name="bad").exists() and not Pair.objects.exists()


def test_it_refuses_an_unknown_gold_label(tmp_path):
    item = stereoset_item("q1", "S.", "A.", "U.")
    item["sentences"][2]["gold_label"] = "neutral"
    path = stereoset_file(tmp_path / "dev.json", [item])
    with pytest.raises(CommandError, match="gold_label 'neutral' is not one of stereotype"):
        run("stereoset", "--file", path)


def test_it_needs_a_file_and_refuses_the_template_options(tmp_path):
    with pytest.raises(CommandError, match="crows-pairs needs --file PATH"):
        run("crows-pairs")
    with pytest.raises(CommandError, match="reads --file only"):
        run("stereoset", "--file", tmp_path / "x.json", "--templates", tmp_path / "t.csv")


def test_it_exports_a_pair_dataset_with_export_instances(tmp_path):
    run("stereoset", "--file", stereoset_file(tmp_path / "dev.json"), "--name", "ss")
    out = tmp_path / "pairs.csv"
    call_command("export_instances", "--dataset", "ss", "--out", str(out), stdout=io.StringIO())
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["pair"] for r in rows] == ["a1", "b2", "c3", "d4"]
    assert (
        rows[0]["stereotypical"] == "The schoolgirl is gentle." and rows[0]["unrelated"] == "The schoolgirl is cheese."
    )
