"""Importing generations in the released sample format, from small files written here (never the datasets)."""

import csv
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import PoolItem
from annotation.services import GenerationImportError, generations_import

MIS = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it at the market."
MIS_PRE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "
MIS_POST = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. Xe sold it at the market."
RUFF_NOM = "The technician said that $NOM_PRONOUN had completed the repair."
RUFF_ACC = "The nurse thanked $ACC_PRONOUN for the help."
BRACKET = "Sam/'s pronouns are he/him/his. Sam thanked [MASK] later."


def write(path, column, rows, *, header=None):
    header = header or ["template", column, "correct", "pronoun", "model"]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def pre_file(tmp_path):
    return write(
        tmp_path / "pre.csv",
        "random_pre_gen",
        [
            [MIS, MIS_PRE + "Xe smiled at everyone.", "1.0", "xe", "model-a"],
            [MIS, MIS_PRE + "xe xe xe xe", "1.0", "xe", "model-a"],
            [MIS, MIS_PRE + "xe xe xe xe", "1.0", "xe", "model-a"],  # a degenerate repeat: its own item
            [RUFF_NOM, "The technician said that she was tired.", "1.0", "she", "model-b"],
        ],
    )


@pytest.fixture
def post_file(tmp_path):
    return write(
        tmp_path / "post.csv",
        "random_post_gen",
        [
            # The file says correct, the heuristic says "He" misgenders Robin: a mismatch.
            [MIS, MIS_POST + " He left early.", "1.0", "xe", "model-a"],
            [RUFF_ACC, "The nurse thanked her for the help. She smiled.", "1.0", "she", "model-b"],
            [BRACKET, "Sam/'s pronouns are he/him/his. Sam thanked himself later. Then she", "0.0", "he", "model-a"],
        ],
    )


@pytest.mark.django_db
class TestImportGenerations:
    def test_it_imports_both_settings_and_both_datasets(self, pre_file, post_file):
        result = generations_import(paths=[pre_file, post_file], pool_name="imported")

        assert (result.rows, result.items, result.heuristic_mismatches) == (7, 7, 1)
        items = {(i.source_file.split("/")[-1], i.source_line): i for i in PoolItem.objects.all()}
        first = items[("pre.csv", 2)]
        assert (first.dataset, first.setting, first.pronoun, first.model_name) == (
            "misgendered",
            "pre",
            "xe",
            "model-a",
        )
        assert first.context == MIS_PRE and first.continuation == "Xe smiled at everyone."
        assert first.template == MIS and first.generation is None and first.source_correct is True
        ruff_pre = items[("pre.csv", 5)]
        assert (ruff_pre.dataset, ruff_pre.context, ruff_pre.continuation) == (
            "ruff",
            "The technician said that ",
            "she was tired.",
        )
        post = items[("post.csv", 2)]
        assert (post.setting, post.context, post.continuation) == ("post", MIS_POST, " He left early.")
        assert post.heuristic_correct is False and post.source_correct is True and post.first_pronoun == "He"
        ruff_post = items[("post.csv", 3)]
        assert ruff_post.context == "The nurse thanked her for the help." and ruff_post.continuation == " She smiled."
        bracket = items[("post.csv", 4)]
        # "[MASK]" marks MISGENDERED; the reflexive form is found by trying the base's forms.
        assert (
            bracket.dataset == "misgendered"
            and bracket.context == "Sam/'s pronouns are he/him/his. Sam thanked himself later."
        )
        assert bracket.heuristic_correct is False and bracket.source_correct is False

    def test_it_keeps_rows_with_identical_text_as_separate_items(self, pre_file):
        generations_import(paths=[pre_file], pool_name="imported")

        assert PoolItem.objects.filter(continuation="xe xe xe xe").count() == 2

    def test_it_adds_nothing_when_the_same_files_are_imported_again(self, pre_file, post_file):
        generations_import(paths=[pre_file, post_file], pool_name="imported")
        ids = set(PoolItem.objects.values_list("pk", flat=True))

        again = generations_import(paths=[post_file, pre_file], pool_name="imported")

        assert again.items == 0 and again.rows == 7
        assert set(PoolItem.objects.values_list("pk", flat=True)) == ids

    def test_it_ends_with_a_json_line(self, pre_file, post_file, capsys):
        call_command("import_generations", str(pre_file), str(post_file), "--pool", "imported", "--json")

        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert json.loads(last) == {"pool": "imported", "items": 7, "heuristic_mismatches": 1}

    def test_it_writes_nothing_when_any_file_is_bad(self, pre_file, tmp_path):
        bad = write(tmp_path / "bad.csv", "random_pre_gen", [[MIS, MIS_PRE + "ok", "1.0", "ze", "m"]])

        with pytest.raises(GenerationImportError):
            generations_import(paths=[pre_file, bad], pool_name="imported")

        assert not PoolItem.objects.exists()


def error_of(paths) -> str:
    with pytest.raises(CommandError) as error:
        call_command("import_generations", *map(str, paths), "--pool", "imported")
    assert not PoolItem.objects.exists()
    return str(error.value)


@pytest.mark.django_db
class TestImportErrors:
    def test_it_names_a_missing_column(self, tmp_path):
        path = write(tmp_path / "f.csv", "", [["x", "1.0", "he"]], header=["template", "correct", "pronoun"])

        assert f"{path}:1: missing column(s): model, random_pre_gen or random_post_gen" in error_of([path])

    def test_it_names_an_unknown_pronoun(self, tmp_path):
        path = write(
            tmp_path / "f.csv",
            "random_pre_gen",
            [[MIS, MIS_PRE + "x", "1.0", "he", "m"], [MIS, MIS_PRE, "1.0", "ze", "m"]],
        )

        assert f"{path}:3: unknown pronoun 'ze'" in error_of([path])

    def test_it_names_a_template_without_a_mask(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [["No mask here.", "No mask here. x", "1.0", "he", "m"]])

        assert f"{path}:2: template has no mask marker" in error_of([path])

    def test_it_names_a_generation_that_does_not_start_with_the_pre_context(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [[MIS, "Something else entirely", "1.0", "xe", "m"]])

        assert f"{path}:2: random_pre_gen does not start with the pre-[MASK] context" in error_of([path])

    def test_it_names_a_generation_that_does_not_start_with_the_post_context(self, tmp_path):
        # The mask is filled with "he", not a form of "xe".
        path = write(
            tmp_path / "f.csv", "random_post_gen", [[MIS, MIS_POST.replace("Xe", "He") + " x", "1.0", "xe", "m"]]
        )

        assert f"{path}:2: random_post_gen does not start with the template filled with any form of 'xe'" in error_of(
            [path]
        )

    def test_it_names_a_bad_correct_value(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [[MIS, MIS_PRE + "x", "yes", "xe", "m"]])

        assert f"{path}:2: correct must be 1.0 or 0.0, not 'yes'" in error_of([path])

    def test_it_names_a_bad_encoding(self, tmp_path):
        path = tmp_path / "f.csv"
        path.write_bytes(
            b"template,random_pre_gen,correct,pronoun,model\n" + "caf\u00e9".encode("latin-1") + b",x,1.0,he,m\n"
        )

        assert f"{path}:2: not UTF-8" in error_of([path])

    def test_it_names_a_short_row(self, tmp_path):
        path = tmp_path / "f.csv"
        path.write_text("template,random_pre_gen,correct,pronoun,model\nonly,two\n", encoding="utf-8")

        assert f"{path}:2: 2 fields where the header has 5" in error_of([path])

    def test_it_names_a_file_with_both_settings(self, tmp_path):
        path = write(
            tmp_path / "f.csv",
            "",
            [],
            header=["template", "random_pre_gen", "random_post_gen", "correct", "pronoun", "model"],
        )

        assert f"{path}:1: both random_pre_gen and random_post_gen" in error_of([path])

    def test_it_names_a_missing_file(self, tmp_path):
        assert f"{tmp_path / 'absent.csv'}: cannot be read" in error_of([tmp_path / "absent.csv"])
