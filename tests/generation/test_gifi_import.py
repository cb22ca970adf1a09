"""GIFI's files: `import_dataset gifi --templates DIR` (the four template files, GIFI's codebook), the released
generation files through `import_generations --format gifi`, and jobs over one part (`--part`). Every import checks
the whole file first, names file:line and writes nothing on a bad file. The files are written here."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from generation.datasets.gifi import CODEBOOK, FAMILIES, MASK, PART_FILES
from generation.models import Dataset, Generation, GenerationRun, Instance, Job, LanguageModel, PronounForm
from generation.parameters import JobParameterError, job_parameters_validate
from tests.generation.gifi_files import NOM, saof_file, template_folder, variants_file


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def import_templates(folder) -> dict:
    return json.loads(run("import_dataset", "gifi", "--templates", str(folder), "--json").strip().splitlines()[-1])


@pytest.mark.django_db
class TestTemplates:
    def test_it_imports_each_part_with_gifis_codebook(self, tmp_path):
        summary = import_templates(template_folder(tmp_path / "t"))

        assert summary["per_part"] == {"gdr": 22, "counterfactual": 22, "saof": 2, "pe": 11}
        assert summary["missing_parts"] == []
        dataset = Dataset.objects.get(name="gifi")
        assert dataset.kind == "gifi"
        stored = {(f.base, f.form): f.surface for f in PronounForm.objects.filter(dataset=dataset)}
        assert len({base for base, _ in stored}) == 11
        assert stored["ae", "nom"] == "aer" and stored["ey", "acc"] == "em" and stored["e", "acc"] == "em"
        gdr = Instance.objects.filter(dataset=dataset, template__meta__part="gdr").order_by("ordinal")
        assert [i.pronoun for i in gdr[:11]] == list(FAMILIES)
        first = gdr[0]
        assert first.text == "robin is a baker and he opens the shop early." + MASK
        assert first.template.meta == {"part": "gdr", "template_index": 0}
        saof = Instance.objects.filter(dataset=dataset, template__meta__part="saof").order_by("ordinal")
        assert [(i.pronoun, i.template.meta["state"], i.template.meta["rows"]) for i in saof] == [
            ("", "occupation", 11),
            ("", "hobby", 11),
        ]
        pe = Instance.objects.filter(dataset=dataset, template__meta__part="pe").first()
        assert pe.template.meta["simple_answer"] == 6

    def test_it_changes_nothing_the_second_time_and_says_which_files_are_missing(self, tmp_path):
        folder = template_folder(tmp_path / "t", parts=("gdr", "pe"))
        first = import_templates(folder)
        again = run("import_dataset", "gifi", "--templates", str(folder))

        assert first["missing_parts"] == ["counterfactual", "saof"]
        assert "already imported, unchanged" in again
        assert "no file for: counterfactual (real-toxicity-prompts-all-genders.csv)" in again
        assert Instance.objects.count() == 33

    def test_a_bad_file_names_file_line_and_field_and_writes_nothing(self, tmp_path):
        folder = template_folder(tmp_path / "t")
        tango = folder / PART_FILES["gdr"]
        lines = tango.read_text().splitlines()
        lines[2] = "0,fae,robin is a baker and fae opens the shop early."
        lines[3] = "x,they,kai writes."
        tango.write_text("\n".join(lines) + "\n")
        math = folder / PART_FILES["pe"]
        math.write_text(math.read_text().replace(",6\n", ",7\n", 1).replace(",6\n", ",6\n"))

        with pytest.raises(CommandError) as caught:
            run("import_dataset", "gifi", "--templates", str(folder))

        message = str(caught.value)
        assert f"{tango}:3: pronoun_family: 'fae' is not one of GIFI's families" in message
        assert f"{tango}:4: template_index: expected a whole number (got 'x')" in message
        assert f"{math}:3: simple_answer: 6 differs from line 2's for template_index 0" in message
        assert not Dataset.objects.exists() and not Instance.objects.exists()

    def test_a_folder_without_gifi_files_is_refused(self, tmp_path):
        with pytest.raises(CommandError, match="none of GIFI's template files"):
            run("import_dataset", "gifi", "--templates", str(tmp_path))


def import_generations(path, part: str, model: str = "gpt-x") -> str:
    return run("import_generations", str(path), "--format", "gifi", "--part", part, "--model", model, "--json")


@pytest.mark.django_db
class TestGenerations:
    @pytest.fixture
    def dataset(self, tmp_path):
        import_templates(template_folder(tmp_path / "t"))
        return Dataset.objects.get(name="gifi")

    def test_it_imports_a_released_file_as_one_finished_job_of_the_model(self, dataset, tmp_path):
        texts = {
            (0, "he"): ["He opens it.\nThen he bakes."],
            (0, "xe"): ["Xe opens it.", "NA"],
            (1, "ze"): ["Zir poem."],
        }
        path = variants_file(tmp_path / "gen.csv", "gdr", texts)

        out = import_generations(path, "gdr")

        assert json.loads(out.strip().splitlines()[-1])["rows"] == 4
        job = Job.objects.get()
        assert job.status == "done" and job.model.name == "gpt-x"
        assert job.model.source_kind == LanguageModel.SourceKind.EXTERNAL
        run_row = GenerationRun.objects.get(job=job)
        assert (run_row.part, run_row.settings, run_row.samples) == ("gdr", ["open"], 2)
        rows = Generation.objects.filter(job=job).order_by("instance__ordinal", "sample_index")
        assert [(g.instance.pronoun, g.sample_index, g.continuation) for g in rows] == [
            ("he", 0, "He opens it.\nThen he bakes."),
            ("xe", 0, "Xe opens it."),
            ("xe", 1, ""),
            ("ze", 0, "Zir poem."),
        ]
        assert rows[0].context == f"robin is a baker and {NOM['he']} opens the shop early."

    def test_saof_rows_are_matched_by_their_template_even_under_other_indices(self, dataset, tmp_path):
        path = saof_file(tmp_path / "saof.csv", {0: ["she welds."] * 3, 1: ["he plays."]}, renumber=True)

        import_generations(path, "saof")

        rows = Generation.objects.order_by("instance__ordinal", "sample_index")
        assert [(g.instance.template.meta["state"], g.sample_index) for g in rows] == [
            ("occupation", 0),
            ("occupation", 1),
            ("occupation", 2),
            ("hobby", 0),
        ]

    def test_the_same_file_again_changes_nothing(self, dataset, tmp_path):
        path = variants_file(tmp_path / "gen.csv", "counterfactual", {(0, "he"): ["a"], (1, "she"): ["b"]})
        import_generations(path, "counterfactual")

        again = import_generations(path, "counterfactual")

        assert "already imported, unchanged" in again
        assert Job.objects.count() == 1 and Generation.objects.count() == 2

    def test_a_bad_row_names_file_line_and_field_and_writes_nothing(self, dataset, tmp_path):
        path = variants_file(tmp_path / "gen.csv", "gdr", {(0, "he"): ["ok"], (5, "he"): ["no such"], (1, "qq"): ["x"]})
        saof = saof_file(tmp_path / "saof.csv", {0: ["fine"]})
        saof.write_text(saof.read_text().replace(",occupation", ",hobby"))

        with pytest.raises(CommandError) as caught:
            import_generations(path, "gdr")
        with pytest.raises(CommandError) as caught_saof:
            import_generations(saof, "saof")

        # Each row's results cell spans 11 lines: the second row starts on line 13, the third on line 24.
        assert f"{path}:13: template_index '5', he: no such gdr prompt" in str(caught.value)
        assert f"{path}:24: pronoun_family: 'qq' is not one of GIFI's families" in str(caught.value)
        assert f"{saof}:2: state: 'hobby', but the template's is 'occupation'" in str(caught_saof.value)
        assert not Job.objects.exists() and not Generation.objects.exists()
        assert not LanguageModel.objects.filter(name="gpt-x").exists()

    def test_it_needs_a_part_and_a_model_and_takes_no_pool(self, dataset, tmp_path):
        path = variants_file(tmp_path / "gen.csv", "gdr", {(0, "he"): ["ok"]})
        with pytest.raises(CommandError, match="needs --part and --model"):
            run("import_generations", str(path), "--format", "gifi", "--part", "gdr")
        with pytest.raises(CommandError, match="no --pool"):
            run("import_generations", str(path), "--format", "gifi", "--part", "gdr", "--model", "m", "--pool", "p")
        with pytest.raises(CommandError, match="--pool is required"):
            run("import_generations", str(path))


@pytest.mark.django_db
class TestJobsOverAPart:
    @pytest.fixture
    def dataset(self, tmp_path):
        import_templates(template_folder(tmp_path / "t"))
        return Dataset.objects.get(name="gifi")

    def test_a_job_over_one_part_takes_its_prompts_and_saof_has_no_declared_family(self, dataset):
        from generation.jobs.generation_kind import GenerationKind

        model = LanguageModel.objects.get(name="smollm2-135m")
        saof = job_parameters_validate(model=model, dataset=dataset, part="saof", samples=11)
        gdr = job_parameters_validate(model=model, dataset=dataset, part="gdr", pronouns="he,ze")

        assert saof.pronouns == list(CODEBOOK.bases) and saof.settings == ["open"]
        assert len(GenerationKind().units(params=saof)) == 2
        units = Instance.objects.filter(pk__in=GenerationKind().units(params=gdr))
        assert sorted(units.values_list("pronoun", flat=True)) == ["he", "he", "ze", "ze"]

    def test_part_is_refused_on_a_dataset_without_it(self, dataset, tmp_path):
        model = LanguageModel.objects.get(name="smollm2-135m")
        Instance.objects.filter(template__meta__part="pe").delete()
        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(model=model, dataset=dataset, part="pe")
        assert "part" in caught.value.errors
        with pytest.raises(JobParameterError, match="part"):
            job_parameters_validate(model=model, dataset=dataset, part="nope")


@pytest.mark.slow
@pytest.mark.django_db
def test_generate_runs_a_job_over_one_gifi_part_and_the_report_reads_it(smollm2, tmp_path):
    from analysis.gifi.report import gifi_report_build, gifi_sources

    import_templates(template_folder(tmp_path / "t"))
    out = io.StringIO()
    call_command(
        "generate", "--dataset", "gifi", "--part", "saof", "--samples", "2", "--max-new-tokens", "8", "--seed", "3",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    summary = json.loads(out.getvalue().strip().splitlines()[-1])

    assert summary["status"] == "done" and summary["instances"] == 2 and summary["generations"] == 4
    job = Job.objects.get(pk=summary["job"])
    assert job.generation_run.part == "saof"
    rows = Generation.objects.filter(job=job).select_related("instance__template")
    assert {g.context for g in rows} == {"My neighbour is a welder, and", "My cousin likes chess, and"}
    report = gifi_report_build(model=smollm2, sources=gifi_sources(), score=False)
    assert report["n"]["OF"] + report["n"]["SA"] == sum(1 for g in rows if g.continuation)
    assert "no generations of part gdr" in report["not_scored"]["GDR"]
