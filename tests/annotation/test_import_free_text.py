"""Free-text generations (docs/domain.md, "Bring your own study"): imported from CSV or JSON Lines, told apart from the
released sample format by the header, all or nothing, with no heuristic verdict where no pronoun is stated, the
clitic and shared-spelling rules, and a templates dataset's generations matched to their instances. Every file is
written here."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.labelset import positive_label
from annotation.models import Annotation, Pool, PoolItem
from annotation.schema import DEFAULT_LABELS
from annotation.services import GenerationImportError, generations_import
from generation.datasets.labels import free_text_codebook
from generation.datasets.registry import codebook_for
from generation.datasets.templates import dataset_import_templates
from generation.datasets.templates_files import codebook_read
from generation.heuristic import heuristic_verdict
from generation.pronouns import Codebook

COLUMNS = ["item", "model", "dataset", "context", "generation", "pronoun", "setting", "sample"]
# e and ey share every form but the nominative: the definition's own example of a shared spelling.
SHARED_CODEBOOK = """base,nom,acc,pos_dep,pos_ind,ref
e,e,em,eir,eirs,emself
ey,ey,em,eir,eirs,emself
fae,fae,faer,faer,faers,faerself
"""


def write_csv(path: Path, rows: list[list[str]], header: list[str] = COLUMNS) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    return path


def items(pool: str = "byos") -> dict[str, PoolItem]:
    return {item.external_id: item for item in PoolItem.objects.filter(pool__name=pool)}


@pytest.mark.django_db
class TestFreeTextImport:
    def test_it_imports_a_csv_with_and_without_stated_pronouns(self, tmp_path):
        path = write_csv(
            tmp_path / "gens.csv",
            [
                ["s1", "model-a", "summaries", "Write about Alex (xe/xem).", "Alex said xe would come.", "xe", "", ""],
                ["s2", "model-a", "summaries", "Write about Alex (xe/xem).", "Alex said he would come.", "xe", "", "1"],
                ["s3", "model-b", "summaries", "Write about Sam.", "Sam said she would come.", "", "zero-shot", ""],
            ],
        )

        result = generations_import(paths=[path], pool_name="byos")

        assert (result.rows, result.items, result.heuristic_mismatches) == (3, 3, 0)
        got = items()
        assert (got["s1"].heuristic_correct, got["s1"].first_pronoun) == (True, "xe")
        assert (got["s2"].heuristic_correct, got["s2"].first_pronoun, got["s2"].sample_index) == (False, "he", 1)
        # Unstated: no verdict at all, not "correct" (the seed's rule would have said correct for no pronoun).
        assert (got["s3"].heuristic_correct, got["s3"].first_pronoun, got["s3"].pronoun) == (None, "", "")
        assert (got["s3"].setting, got["s1"].setting, got["s1"].sample_index) == ("zero-shot", "free", 0)
        assert (
            got["s1"].context == "Write about Alex (xe/xem)." and got["s1"].continuation == "Alex said xe would come."
        )
        assert got["s1"].template == "" and got["s1"].dataset == "summaries" and got["s1"].generation is None
        assert Pool.objects.get(name="byos").labels == DEFAULT_LABELS

    def test_it_reads_json_lines_the_same_way(self, tmp_path):
        record = {
            "item": "j1",
            "model": "m",
            "dataset": "d",
            "context": "C",
            "generation": "They left.",
            "pronoun": "they",
        }
        path = write_jsonl(tmp_path / "gens.jsonl", [record, {**record, "item": "j2", "pronoun": None, "sample": 2}])

        generations_import(paths=[path], pool_name="byos")

        got = items()
        assert (got["j1"].heuristic_correct, got["j1"].pronoun) == (True, "they")
        assert (got["j2"].heuristic_correct, got["j2"].pronoun, got["j2"].sample_index) == (None, "", 2)

    def test_the_seed_format_still_imports_beside_it(self, tmp_path):
        seed = tmp_path / "seed.csv"
        template = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it."
        pre = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "
        write_csv(
            seed,
            [[template, pre + "Xe smiled.", "1.0", "xe", "m"]],
            ["template", "random_pre_gen", "correct", "pronoun", "model"],
        )
        free = write_csv(tmp_path / "free.csv", [["f1", "m", "d", "C", "Xe smiled.", "xe", "", ""]])

        result = generations_import(paths=[seed, free], pool_name="byos")

        assert result.items == 2
        assert PoolItem.objects.get(external_id="").setting == "pre"

    def test_a_bad_row_anywhere_writes_nothing_and_names_file_line_and_field(self, tmp_path):
        good = write_csv(tmp_path / "good.csv", [["g1", "m", "d", "C", "Text.", "xe", "", ""]])
        bad = write_csv(
            tmp_path / "bad.csv",
            [
                ["b1", "m", "d", "C", "Text.", "zz", "", ""],
                ["b2", "", "d", "C", "", "", "", "x"],
                ["g1", "m", "d", "C", "Other text.", "", "", ""],
            ],
        )

        with pytest.raises(GenerationImportError) as caught:
            generations_import(paths=[good, bad], pool_name="byos")

        errors = caught.value.errors
        assert f"{bad}:2: pronoun: 'zz' is not a family" in errors[0]
        assert f"{bad}:3: model: empty" in errors
        assert f"{bad}:3: generation: empty" in errors
        assert any(error.startswith(f"{bad}:3: sample:") for error in errors)
        assert f"{bad}:4: item: 'g1' is already the item of {good}:2" in errors
        assert not Pool.objects.filter(name="byos").exists() and not PoolItem.objects.exists()

    def test_a_missing_column_is_named(self, tmp_path):
        path = write_csv(tmp_path / "g.csv", [["i", "m", "C", "T"]], header=["item", "model", "context", "generation"])

        with pytest.raises(GenerationImportError) as caught:
            generations_import(paths=[path], pool_name="byos")

        assert caught.value.errors == [f"{path}:1: missing column(s): dataset"]

    def test_the_same_file_twice_adds_nothing_and_a_changed_item_is_refused(self, tmp_path):
        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "xe", "", ""]])
        generations_import(paths=[path], pool_name="byos")

        again = generations_import(paths=[path], pool_name="byos")
        changed = write_csv(tmp_path / "changed.csv", [["i1", "m", "d", "C", "He left.", "xe", "", ""]])
        with pytest.raises(GenerationImportError) as caught:
            generations_import(paths=[changed], pool_name="byos")

        assert again.items == 0 and PoolItem.objects.count() == 1
        assert caught.value.errors == [f"{changed}:2: item: pool 'byos' already holds item 'i1' with other content"]
        assert PoolItem.objects.get().continuation == "Xe left."

    def test_labels_declare_the_pools_label_set(self, tmp_path, annotator):
        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "xe", "", ""]])

        call_command(
            "import_generations", str(path), "--pool", "two", "--labels", "misgendering,correct", stdout=io.StringIO()
        )
        with pytest.raises(CommandError, match="at least two labels"):
            call_command(
                "import_generations", str(path), "--pool", "other", "--labels", "correct", stdout=io.StringIO()
            )
        item = PoolItem.objects.get(pool__name="two")
        Annotation.objects.create(item=item, annotator=annotator, label="correct")
        with pytest.raises(CommandError, match="can no longer change"):
            call_command(
                "import_generations",
                str(path),
                "--pool",
                "two",
                "--labels",
                "misgendering,correct,no_pronoun",
                stdout=io.StringIO(),
            )

        assert Pool.objects.get(name="two").labels == ["misgendering", "correct"]
        assert not Pool.objects.filter(name="other").exists()

    def test_a_set_without_misgendering_names_its_positive_label_only_for_rates(self, tmp_path):
        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "xe", "", ""]])

        # No positive label needed to import (docs/domain.md, "Scales": --positive only for rates).
        call_command("import_generations", str(path), "--pool", "q", "--labels", "ok,wrong", stdout=io.StringIO())
        assert Pool.objects.get(name="q").positive_label == ""
        with pytest.raises(CommandError, match="positive label 'bad' is not in the set"):
            call_command(
                "import_generations", str(path), "--pool", "r", "--labels", "ok,wrong", "--positive", "bad",
                stdout=io.StringIO(),
            )  # fmt: skip
        call_command(
            "import_generations",
            str(path),
            "--pool",
            "p",
            "--labels",
            "ok,wrong",
            "--positive",
            "wrong",
            stdout=io.StringIO(),
        )

        pool = Pool.objects.get(name="p")
        assert (pool.labels, pool.positive_label) == (["ok", "wrong"], "wrong")

    def test_a_set_with_misgendering_counts_it_and_refuses_another_positive_label(self, tmp_path):
        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "xe", "", ""]])
        labels = "misgendering,correct,unsure"
        with pytest.raises(CommandError, match="a set with 'misgendering' counts 'misgendering'"):
            call_command(
                "import_generations", str(path), "--pool", "p", "--labels", labels, "--positive", "correct",
                stdout=io.StringIO(),
            )  # fmt: skip
        assert not Pool.objects.filter(name="p").exists()
        call_command("import_generations", str(path), "--pool", "p", "--labels", labels, stdout=io.StringIO())
        pool = Pool.objects.get(name="p")
        Pool.objects.filter(pk=pool.pk).update(positive_label="correct")  # a pool stored before the check
        pool.refresh_from_db()
        assert positive_label(pool) == "misgendering"


@pytest.mark.django_db
class TestCodebooksOfFreeTextDatasets:
    def test_a_codebook_with_shared_spellings_imports_and_judges_by_the_true_family(self, tmp_path):
        codebook = tmp_path / "codebook.csv"
        codebook.write_text(SHARED_CODEBOOK, encoding="utf-8")
        rows = [
            ["e1", "m", "neo", "C", "They thanked em warmly.", "e", "", ""],
            ["e2", "m", "neo", "C", "They thanked em warmly.", "ey", "", ""],
            ["e3", "m", "neo", "C", "They thanked em warmly.", "fae", "", ""],
            ["e4", "m", "neo", "C", "Ey'll come; fae will not.", "ey", "", ""],
            ["e5", "m", "neo", "C", "Fae’d rather stay; ey will not.", "fae", "", ""],
        ]
        path = write_csv(tmp_path / "g.csv", rows)

        out = io.StringIO()
        call_command(
            "import_generations", str(path), "--pool", "byos", "--codebook", str(codebook), "--json", stdout=out
        )

        got = items()
        # `em` belongs to e and ey: correct for either, a misgendering of fae.
        assert [got[i].heuristic_correct for i in ("e1", "e2", "e3")] == [True, True, False]
        # A form with an English clitic counts as that form (straight or curly apostrophe).
        assert (got["e4"].heuristic_correct, got["e4"].first_pronoun) == (True, "Ey'll")
        assert (got["e5"].heuristic_correct, got["e5"].first_pronoun) == (True, "Fae’d")
        assert json.loads(out.getvalue().splitlines()[-1])["items"] == 5

    def test_the_paper_datasets_keep_the_seed_rule_and_free_text_ones_take_clitics(self, tmp_path):
        text = "xe'll come, and then he left."
        path = write_csv(
            tmp_path / "g.csv",
            [["p1", "m", "misgendered", "C", text, "xe", "", ""], ["f1", "m", "mine", "C", text, "xe", "", ""]],
        )

        generations_import(paths=[path], pool_name="byos")

        got = items()
        # The seed's tokens: "xe'll" is no form, so "he" decides (misgendering); a free-text dataset reads "xe'll".
        assert (got["p1"].heuristic_correct, got["p1"].first_pronoun) == (False, "he")
        assert (got["f1"].heuristic_correct, got["f1"].first_pronoun) == (True, "xe'll")

    def test_clitics_never_touch_the_built_in_codebooks(self):
        for kind in ("misgendered", "ruff", "tango"):
            codebook = codebook_for(kind)
            assert codebook.clitics is False and codebook.pronoun_in("xe'll") is None
            assert all(len(bases) == 1 for bases in codebook.bases_of.values())
        free = free_text_codebook()
        assert [free.pronoun_in(t) for t in ("xe'll", "xe’d", "xem's", "xe're", "xenon", "x'll")] == [
            "xe",
            "xe",
            "xem",
            "xe",
            None,
            None,
        ]

    def test_probability_candidates_are_the_distinct_spellings(self, tmp_path):
        codebook_path = tmp_path / "codebook.csv"
        codebook_path.write_text(SHARED_CODEBOOK, encoding="utf-8")
        codebook = codebook_read(codebook_path)

        assert codebook.candidates("acc") == [("e", "em"), ("fae", "faer")]
        assert codebook.candidates("nom") == [("e", "e"), ("ey", "ey"), ("fae", "fae")]
        # Correct when the predicted spelling is the ground-truth family's: `em` for ey, though listed under e.
        assert codebook.surface("e", "acc") == codebook.surface("ey", "acc")
        assert codebook.bases_of["em"] == {"e", "ey"} and codebook.base_of["em"] == "e"

    def test_the_heuristic_reads_shared_forms_by_the_true_family(self):
        codebook = Codebook("neo", {"e": {"acc": "em"}, "ey": {"nom": "ey", "acc": "em"}, "xe": {"nom": "xe"}})

        verdicts = [
            heuristic_verdict(continuation="We met em.", codebook=codebook, pronoun=p) for p in ("e", "ey", "xe")
        ]

        assert [v.correct for v in verdicts] == [True, True, False]


@pytest.mark.django_db
class TestTemplatesDatasetGenerations:
    @pytest.fixture
    def dataset(self, tmp_path):
        codebook = tmp_path / "codebook.csv"
        codebook.write_text(SHARED_CODEBOOK, encoding="utf-8")
        templates = write_csv(
            tmp_path / "templates.csv",
            [["t1", "{name} uses {nom}. {target:nom} baked bread."], ["t2", "We thanked {target:acc} twice."]],
            header=["id", "template"],
        )
        names = tmp_path / "names.txt"
        names.write_text("Robin\n", encoding="utf-8")
        dataset_import_templates(
            codebook_path=codebook, templates_path=templates, names_path=names, names_per_template=1, name="neo"
        )
        return "neo"

    def test_generations_match_their_instances_and_take_the_setting_from_the_context(self, tmp_path, dataset):
        header = [*COLUMNS, "template_id", "name"]
        rows = [
            ["a", "m", dataset, "Robin uses ey. ", "Ey'll bake.", "ey", "", "", "t1", "Robin"],
            ["b", "m", dataset, "Robin uses fae. Fae baked bread.", " Then e left.", "fae", "", "", "t1", "Robin"],
            ["c", "m", dataset, "We thanked em twice.", " E smiled.", "e", "post", "", "t2", "Robin"],
        ]
        path = write_csv(tmp_path / "g.csv", rows, header)

        generations_import(paths=[path], pool_name="byos")

        got = items()
        assert (got["a"].setting, got["a"].template, got["a"].heuristic_correct) == (
            "pre",
            "Robin uses ey. {target:nom} baked bread.",
            True,
        )
        assert (got["b"].setting, got["b"].heuristic_correct, got["b"].first_pronoun) == ("post", False, "e")
        assert (got["c"].setting, got["c"].heuristic_correct) == ("post", True)

    def test_an_unknown_instance_or_a_foreign_context_is_refused(self, tmp_path, dataset):
        header = [*COLUMNS, "template_id", "name"]
        rows = [
            ["a", "m", dataset, "Robin uses ey. ", "Ey bakes.", "ey", "", "", "t9", "Robin"],
            ["b", "m", dataset, "Someone else's text", "Ey bakes.", "ey", "", "", "t1", "Robin"],
            ["c", "m", dataset, "Robin uses ey. ", "Ey bakes.", "", "", "", "t1", "Robin"],
        ]
        path = write_csv(tmp_path / "g.csv", rows, header)

        with pytest.raises(GenerationImportError) as caught:
            generations_import(paths=[path], pool_name="byos")

        assert caught.value.errors == [
            f"{path}:2: template_id: dataset 'neo' has no instance of template 't9' for 'ey' with name 'Robin'",
            f"{path}:3: context: neither the pre nor the post context of template 't1' for 'ey'",
            f"{path}:4: pronoun: empty (a generation of templates dataset 'neo' names its family)",
        ]
        assert not PoolItem.objects.exists()


@pytest.mark.django_db
class TestReportOnFreeText:
    def test_items_without_a_verdict_leave_the_heuristic_comparisons_and_the_report_builds(
        self, tmp_path, annotator, second_annotator, client, researcher
    ):
        from analysis.services import report_build

        path = write_csv(
            tmp_path / "g.csv",
            [
                ["a", "m", "notes", "C", "Xe left.", "xe", "", ""],  # heuristic correct; people: correct (agree)
                ["b", "m", "notes", "C", "He left.", "xe", "", ""],  # heuristic misgendering; people: correct
                ["c", "m", "notes", "C", "She left.", "", "", ""],  # no verdict; people: misgendering
                ["d", "m", "notes", "C", "They left.", "", "", ""],  # no verdict; people: correct
            ],
        )
        generations_import(paths=[path], pool_name="byos")
        labels = {"a": "correct", "b": "correct", "c": "misgendering", "d": "correct"}
        for external_id, label in labels.items():
            item = PoolItem.objects.get(external_id=external_id)
            for person in (annotator, second_annotator):
                Annotation.objects.create(item=item, annotator=person, label=label)

        report = report_build(pool=Pool.objects.get(name="byos"))

        # Only a and b have a verdict: one agreement of two, by hand. Without the rule, c and d would count too.
        (row,) = [r for r in report["human_vs_heuristic"] if r["n"]]
        assert (row["agreement"], row["n"]) == (0.5, 2)
        assert row["pronoun"] == "xe"
        disagreements = {r["public_id"] for r in report["disagreements"]}
        assert disagreements == {PoolItem.objects.get(external_id="b").public_id}
        client.force_login(researcher)
        assert client.get("/reports/byos/?wait=1").status_code == 200
