"""The `templates` dataset kind (docs/domain.md, 'Your own templates'): the import builds template x family x name
instances from a codebook and a templates file, export_instances writes their contexts and candidates, a bad file is
refused whole with its line and field, and a job scores and checks them with the dataset's own codebook."""

from __future__ import annotations

import csv
import functools
import io
import json
import random
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchmarks.reference import sequence_loss
from generation.engines.hf.scoring import ScoreItem, score_instances
from generation.jobs.services import JobParameterError, job_parameters_validate
from generation.models import Dataset, Generation, Instance, Job, ProbResult, PronounForm, Template
from generation.pronouns import Codebook

CODEBOOK = """base,nom,acc,pos_dep,pos_ind,ref
he,he,him,his,his,himself
she,she,her,her,hers,herself
ey,ey,em,eir,eirs,emself
fae,fae,faer,faer,faers,faerself
"""
# One slot after a full stop (its candidates are capitalised), one inside a sentence; {nom} declared outside the slot.
TEMPLATES = [
    ("a1", "{name} goes by {nom}. {name} baked bread all night. {target:nom} sold it at dawn.", "bakery"),
    ("a2", "{name} goes by {nom}. The neighbours thanked {target:acc} for the bread.", "bakery"),
    ("b1", "Everyone admired the garden, which was {target:pos_ind} alone.", ""),
]
NAMES = ["Robin", "Sasha", "Kai"]
FAMILIES = {
    "he": {"nom": "he", "acc": "him", "pos_dep": "his", "pos_ind": "his", "ref": "himself"},
    "she": {"nom": "she", "acc": "her", "pos_dep": "her", "pos_ind": "hers", "ref": "herself"},
    "ey": {"nom": "ey", "acc": "em", "pos_dep": "eir", "pos_ind": "eirs", "ref": "emself"},
    "fae": {"nom": "fae", "acc": "faer", "pos_dep": "faer", "pos_ind": "faers", "ref": "faerself"},
}


def write_files(folder: Path, *, templates=TEMPLATES, codebook: str = CODEBOOK, names=NAMES) -> dict[str, Path]:
    paths = {"codebook": folder / "codebook.csv", "templates": folder / "templates.csv", "names": folder / "names.txt"}
    paths["codebook"].write_text(codebook, encoding="utf-8")
    with paths["templates"].open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "template", "group"])
        writer.writerows(templates)
    paths["names"].write_text("\n".join(names) + "\n", encoding="utf-8")
    return paths


def run_import(paths: dict[str, Path], *extra: str, name: str = "mine") -> dict:
    out = io.StringIO()
    args = ["templates", "--codebook", str(paths["codebook"]), "--templates", str(paths["templates"])]
    call_command("import_dataset", *args, *extra, "--name", name, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def expected_rows(*, per_template: int, seed: int) -> list[dict]:
    """The instances as docs/domain.md describes them, built here from the strings above."""
    rng = random.Random(seed)  # MISGENDERED's rule: the same draws for every family
    drawn = {}
    for t in range(per_template):
        for j in range(len(TEMPLATES)):
            drawn[j, t] = rng.choice(NAMES)
    rows = []
    for j, (template_id, text, group) in enumerate(TEMPLATES):
        slot = text[text.index("{target:") : text.index("}", text.index("{target:")) + 1]
        form = slot[len("{target:") : -1]
        for base, forms in FAMILIES.items():
            for t in range(per_template):
                filled = text.replace("{name}", drawn[j, t]).replace("{nom}", forms["nom"])
                before, after = filled.split(slot)
                starts_sentence = before.endswith(". ")
                candidates = [family[form] for family in FAMILIES.values()]
                if starts_sentence:
                    candidates = [c[0].upper() + c[1:] for c in candidates]
                correct = candidates[list(FAMILIES).index(base)]
                rows.append(
                    {
                        "template_id": template_id,
                        "group": group,
                        "base": base,
                        "name": drawn[j, t],
                        "form": form,
                        "pre_context": before,
                        "post_context": before + correct + after,
                        "candidates": candidates,
                    }
                )
    return rows


def exported(tmp_path: Path, name: str = "mine") -> list[dict]:
    out = tmp_path / "instances.csv"
    call_command("export_instances", "--dataset", name, "--out", str(out), stdout=io.StringIO())
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["candidates"] = json.loads(row["candidates"])
    return rows


@pytest.mark.django_db
class TestImport:
    def test_it_builds_template_x_family_x_name_instances_as_the_spec_says(self, tmp_path):
        paths = write_files(tmp_path)

        summary = run_import(paths, "--names", str(paths["names"]), "--names-per-template", "4", "--seed", "5")

        assert summary["dataset"] == "mine" and summary["instances"] == 3 * 4 * 4
        assert summary["per_pronoun"] == dict.fromkeys(FAMILIES, 12)
        assert exported(tmp_path) == expected_rows(per_template=4, seed=5)

    def test_draw_t_of_a_template_has_the_same_name_under_every_family_and_names_repeat(self, tmp_path):
        paths = write_files(tmp_path)
        run_import(paths, "--names", str(paths["names"]), "--names-per-template", "4", "--seed", "5")

        for template_id, _, _ in TEMPLATES:
            per_family = {
                base: list(
                    Instance.objects.filter(template__source_id=template_id, pronoun=base)
                    .order_by("draw")
                    .values_list("name", flat=True)
                )
                for base in FAMILIES
            }
            assert len({tuple(names) for names in per_family.values()}) == 1
        all_names = list(Instance.objects.filter(pronoun="he").values_list("name", flat=True))
        assert len(set(all_names)) < len(all_names)  # 12 draws from 3 names

    def test_it_stores_the_codebook_in_its_order_and_the_slot_as_the_mask(self, tmp_path):
        paths = write_files(tmp_path)
        run_import(paths, "--names", str(paths["names"]), "--names-per-template", "1")

        dataset = Dataset.objects.get(name="mine")
        assert dataset.kind == "templates"
        stored = list(PronounForm.objects.filter(dataset=dataset).order_by("pk").values_list("base", "form", "surface"))
        assert stored == [(base, form, surface) for base, forms in FAMILIES.items() for form, surface in forms.items()]
        template = Template.objects.get(dataset=dataset, source_id="a2")
        assert (template.mask, template.form, template.meta) == ("{target:acc}", "acc", {"group": "bakery"})
        instance = Instance.objects.get(template=template, pronoun="fae")
        assert instance.correct_form == "faer" and "{target:acc}" in instance.text and "{nom}" not in instance.text

    def test_without_names_each_template_has_one_instance_per_family(self, tmp_path):
        paths = write_files(tmp_path, templates=[TEMPLATES[2]])

        summary = run_import(paths)

        assert summary["instances"] == 4
        assert list(Instance.objects.order_by("ordinal").values_list("pronoun", "name", "draw")) == [
            (base, "", 0) for base in FAMILIES
        ]

    def test_a_jsonl_file_gives_the_same_instances(self, tmp_path):
        paths = write_files(tmp_path)
        jsonl = tmp_path / "templates.jsonl"
        jsonl.write_text(
            "".join(json.dumps({"id": i, "template": t, "group": g}) + "\n" for i, t, g in TEMPLATES), encoding="utf-8"
        )
        run_import(paths, "--names", str(paths["names"]), "--names-per-template", "2", name="from-csv")
        run_import({**paths, "templates": jsonl}, "--names", str(paths["names"]), "--names-per-template", "2")

        assert exported(tmp_path, "mine") == exported(tmp_path, "from-csv")

    def test_the_same_import_again_changes_nothing(self, tmp_path):
        paths = write_files(tmp_path)
        first = run_import(paths, "--names", str(paths["names"]), "--names-per-template", "2")
        ids = list(Instance.objects.order_by("ordinal").values_list("pk", flat=True))

        assert run_import(paths, "--names", str(paths["names"]), "--names-per-template", "2") == first
        assert list(Instance.objects.order_by("ordinal").values_list("pk", flat=True)) == ids


BAD_FILES = [
    pytest.param(
        {"templates": [("x", "Nobody is here.", "")]}, "templates.csv:2: field template: no target slot", id="no-slot"
    ),
    pytest.param(
        {"templates": [("x", "{target:nom} saw {target:acc}.", "")]},
        "templates.csv:2: field template: 2 target slots",
        id="two-slots",
    ),
    pytest.param(
        {"templates": [("x", "{target:nom} met {friend}.", "")]},
        "templates.csv:2: field template: unknown placeholder {friend}",
        id="unknown-placeholder",
    ),
    pytest.param(
        {"templates": [("x", "They thanked {target:dat}.", "")]},
        "templates.csv:2: field template: unknown FORM 'dat'",
        id="unknown-form",
    ),
    pytest.param(
        {"codebook": CODEBOOK.replace("ey,ey,em,eir,eirs,emself", "ey,ey,em,eir,,emself")},
        "templates.csv:4: field template: the slot {target:pos_ind} needs a pos_ind form, which the codebook lacks "
        "for ey",
        id="family-lacks-the-slots-form",
    ),
    pytest.param(
        {"names": None}, "templates.csv:2: field template: {name} needs a names file", id="name-without-names"
    ),
    pytest.param(
        {"templates": [("x", "{target:nom} left.", ""), ("x", "{target:acc} stayed.", "")]},
        "templates.csv:3: field id: duplicate template id 'x' (already on line 2)",
        id="duplicate-id",
    ),
    pytest.param(
        {"codebook": CODEBOOK + "he,hi,hin,hiz,hiz,hinself\n"},
        "codebook.csv:6: field base: duplicate base 'he' (already on line 2)",
        id="duplicate-base",
    ),
    pytest.param(
        {"codebook": "base,nom,acc,pos_dep,pos_ind,ref\n"}, "codebook.csv: empty codebook", id="empty-codebook"
    ),
    pytest.param({"names": []}, "names.txt: the names file is empty", id="empty-names"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), BAD_FILES)
def test_a_malformed_file_is_refused_with_its_line_and_field_and_nothing_is_written(tmp_path, change, message):
    names = change.get("names", NAMES)
    paths = write_files(
        tmp_path,
        templates=change.get("templates", TEMPLATES),
        codebook=change.get("codebook", CODEBOOK),
        names=names or [],
    )
    extra = [] if names is None else ["--names", str(paths["names"])]

    with pytest.raises(CommandError) as caught:
        run_import(paths, *extra)

    assert "nothing written" in str(caught.value)
    assert f"{tmp_path}/{message}" in str(caught.value)
    assert not Dataset.objects.exists() and not Instance.objects.exists() and not PronounForm.objects.exists()


@pytest.mark.django_db
def test_a_failure_while_writing_leaves_nothing_behind(tmp_path, monkeypatch):
    paths = write_files(tmp_path)

    def fail(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr("generation.datasets.templates.instances_write", fail)
    with pytest.raises(RuntimeError):
        run_import(paths, "--names", str(paths["names"]))

    assert not Dataset.objects.exists() and not Template.objects.exists() and not PronounForm.objects.exists()


@pytest.mark.django_db
class TestJobParameters:
    def test_a_templates_job_takes_the_datasets_own_families_in_codebook_order(self, tmp_path, smollm2):
        paths = write_files(tmp_path, templates=[TEMPLATES[2]])
        run_import(paths)

        assert job_parameters_validate(dataset="mine").pronouns == list(FAMILIES)
        assert job_parameters_validate(dataset="mine", pronouns="fae,he").pronouns == ["he", "fae"]
        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(dataset="mine", pronouns=["xe"])
        assert "'xe'" in caught.value.errors["pronouns"] and "ey" in caught.value.errors["pronouns"]

    def test_prob_score_is_mean_by_default_and_takes_sum(self, tmp_path, smollm2):
        paths = write_files(tmp_path, templates=[TEMPLATES[2]])
        run_import(paths)

        assert job_parameters_validate(dataset="mine").prob_score == "mean"
        assert job_parameters_validate(dataset="mine", prob_score="sum").prob_score == "sum"
        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(dataset="mine", prob_score="max")
        assert "prob_score" in caught.value.errors


@functools.cache
def _blank_english():
    import spacy  # here, not at collection: spaCy loads torch

    return spacy.blank("en")


def first_pronoun_rule(continuation: str, base: str) -> bool:
    """Eq. 4 written out for this codebook: the first word (spaCy's tokens) that is a form of any family decides."""
    owner = {surface: family for family, forms in FAMILIES.items() for surface in forms.values()}
    for token in _blank_english()(continuation):
        if token.lower_ in owner:
            return owner[token.lower_] == base
    return True


@pytest.mark.slow
@pytest.mark.django_db
def test_a_job_scores_the_slots_candidates_and_checks_with_the_codebooks_omega(tmp_path, smollm2, loaded_model):
    paths = write_files(tmp_path)
    run_import(paths, "--names", str(paths["names"]), "--names-per-template", "1")
    out = io.StringIO()
    call_command(
        "generate", "--dataset", "mine", "--per-pronoun", "2", "--samples", "1", "--max-new-tokens", "6",
        "--seed", "3", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    # 6 new tokens are enough: with this seed, continuations name a family both rightly ("He" for he) and wrongly
    # ("He" for ey), so the heuristic's check below meets both answers (12 tokens cost 5 s more).
    job = Job.objects.get(pk=json.loads(out.getvalue().strip().splitlines()[-1])["job"])

    assert job.generation_run.prob_score == "mean" and job.status == "done"
    # The first 2 instances per family in file order: templates a1 and a2.
    chosen = Instance.objects.filter(prob_results__job=job)
    assert sorted(chosen.values_list("template__source_id", "pronoun")) == sorted(
        (t, base) for t in ("a1", "a2") for base in FAMILIES
    )
    expected = {row["post_context"]: row for row in expected_rows(per_template=1, seed=42)}
    for result in ProbResult.objects.filter(job=job).select_related("instance__template"):
        instance = result.instance
        slot = instance.template.mask
        before, after = instance.text.split(slot)
        texts = {
            base: before + candidate + after
            for base, candidate in zip(FAMILIES, expected_candidates(instance.text, slot), strict=True)
        }
        losses = {base: sequence_loss(loaded=loaded_model, text=text) for base, text in texts.items()}
        assert result.losses == pytest.approx(losses, abs=2e-3)
        assert result.prediction == min(losses, key=losses.get)
        assert result.correct == (result.prediction == instance.pronoun)
        assert texts[instance.pronoun] in expected  # the post context of the spec's own construction
    generations = Generation.objects.filter(job=job).select_related("instance")
    assert generations.count() == 8 * 2  # 8 instances x pre and post x 1 sample
    for generation in generations:
        assert generation.heuristic_correct == first_pronoun_rule(generation.continuation, generation.instance.pronoun)


def expected_candidates(text: str, slot: str) -> list[str]:
    form = slot[len("{target:") : -1]
    candidates = [forms[form] for forms in FAMILIES.values()]
    if text[text.index(slot) - 2] == ".":
        candidates = [c.capitalize() for c in candidates]
    return candidates


@pytest.mark.slow
def test_summed_scoring_is_ruffs_summed_log_probability(loaded_model):
    """prob_score "sum": each candidate's -sum log p over the whole sequence (the plain loop's mean loss times the
    number of predicted tokens); multi-token forms such as faer are not divided by their length."""
    codebook = Codebook(dataset="mine", table=FAMILIES)
    text = "Robin goes by fae. The neighbours thanked {target:acc} for the bread."
    items = [
        ScoreItem(text=text, mask="{target:acc}", form="acc", correct_form="faer", codebook=codebook, prob_score=p)
        for p in ("mean", "sum")
    ]

    mean, summed = score_instances(loaded=loaded_model, items=items)

    for base, surface in codebook.candidates("acc"):
        filled = text.replace("{target:acc}", surface)
        tokens = len(loaded_model.tokenizer(filled).input_ids)
        plain = sequence_loss(loaded=loaded_model, text=filled)
        assert mean.losses[base] == pytest.approx(plain, abs=2e-3)
        assert summed.losses[base] == pytest.approx(plain * (tokens - 1), abs=2e-2)
    assert summed.prediction == min(summed.losses, key=summed.losses.get)


@pytest.mark.django_db
class TestDatasetPage:
    URL = "/generation/datasets/"

    def upload(self, tmp_path: Path, **changes) -> dict:
        paths = write_files(tmp_path, **changes)
        return {
            "name": "uploaded",
            "codebook": paths["codebook"].open("rb"),
            "templates": paths["templates"].open("rb"),
            "names": paths["names"].open("rb"),
            "names_per_template": 2,
            "seed": 5,
        }

    def test_an_admin_imports_a_templates_dataset_as_the_command_does(self, client, admin_user, tmp_path):
        client.force_login(admin_user)

        response = client.post(self.URL, self.upload(tmp_path))

        assert response.status_code == 302
        (tmp_path / "again").mkdir()
        paths = write_files(tmp_path / "again")
        run_import(paths, "--names", str(paths["names"]), "--names-per-template", "2", "--seed", "5")
        assert exported(tmp_path, "uploaded") == exported(tmp_path, "mine")
        listing = client.get(self.URL).content.decode()
        assert "uploaded" in listing and "he, she, ey, fae" in listing

    def test_a_bad_upload_shows_the_line_and_field_and_writes_nothing(self, client, admin_user, tmp_path):
        client.force_login(admin_user)

        response = client.post(self.URL, self.upload(tmp_path, templates=[("x", "Nobody is here.", "")]))

        assert response.status_code == 400
        assert "templates.csv:2: field template: no target slot" in response.content.decode()
        assert not Dataset.objects.exists()

    def test_a_researcher_sees_the_list_but_cannot_import(self, client, researcher, tmp_path):
        client.force_login(researcher)

        assert client.get(self.URL).status_code == 200
        assert "Import your own templates" not in client.get(self.URL).content.decode()
        assert client.post(self.URL, self.upload(tmp_path)).status_code == 403
        assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_a_templates_dataset_goes_through_the_pool_the_report_the_explorer_and_a_judges_prompt(tmp_path):
    """Downstream treats it like RUFF, under its own name and families (a job's rows are written here by hand)."""
    from analysis.report.build import report_data
    from analysis.report.exports.render import report_render
    from analysis.selectors.explorer import pool_cells
    from annotation.services import pool_sample
    from judging.prompts import PromptItem, pronouns_text
    from tests.factories import GenerationJobFactory

    paths = write_files(tmp_path)
    run_import(paths, "--names", str(paths["names"]), "--names-per-template", "1")
    dataset = Dataset.objects.get(name="mine")
    job = GenerationJobFactory(dataset=dataset, pronouns=list(FAMILIES), settings=["pre"], samples=1, prob_score="sum")
    for instance in dataset.instances.select_related("template"):
        ProbResult.objects.create(
            job=job,
            instance=instance,
            losses=dict.fromkeys(FAMILIES, 1.0),
            prediction="he",
            correct=instance.pronoun == "he",
        )
        Generation.objects.create(
            job=job,
            instance=instance,
            setting="pre",
            sample_index=0,
            context=instance.text.split(instance.template.mask)[0],
            continuation=" Fae smiled.",
            heuristic_correct=first_pronoun_rule(" Fae smiled.", instance.pronoun),
            first_pronoun="Fae",
        )

    pool = pool_sample(name="mine-pool", job_ids=[job.pk], instances=1, seed=0).pool

    assert pool is not None
    assert set(pool.items.values_list("dataset", "pronoun")) == {("mine", base) for base in FAMILIES}
    report = report_data(pool=pool)
    accuracy = {row["pronoun"]: row for row in report["accuracy"]}
    assert set(accuracy) == set(FAMILIES) and {row["dataset"] for row in report["accuracy"]} == {"mine"}
    assert {base: (row["prob"], row["gen"], row["prob_score"]) for base, row in accuracy.items()} == {
        base: (float(base == "he"), float(base == "fae"), "sum") for base in FAMILIES
    }
    html = report_render(report=report, fmt="html").body  # the plots and every table, with ey and fae
    assert "Rankings across benchmarks" in html and ">fae<" in html
    cells = pool_cells(pool=pool)
    assert {(cell["dataset"], cell["pronoun"], cell["instances"]) for cell in cells} == {
        ("mine", base, 3) for base in FAMILIES
    }
    prompt = PromptItem(context="", generation="", dataset="mine", pronoun="ey")
    assert pronouns_text(prompt) == "The person's declared pronouns are ey/em/eir/eirs/emself."


@pytest.mark.django_db
def test_a_judge_over_a_whole_templates_job_is_prompted_with_the_datasets_own_families(tmp_path, smollm2):
    """A generation of the job is shown to the judge under its dataset's label (its name), so the prompt declares the
    dataset's own family, as a pool item drawn from it would; under the stored kind it fell back to MISGENDERED's."""
    from annotation.services import pool_sample
    from judging.selectors import generation_prompt, item_prompt
    from judging.services.judges import judge_add
    from tests.factories import GenerationJobFactory

    paths = write_files(tmp_path)
    run_import(paths, "--names", str(paths["names"]), "--names-per-template", "1")
    dataset = Dataset.objects.get(name="mine")
    job = GenerationJobFactory(dataset=dataset, pronouns=["ey", "fae"], settings=["pre"], samples=1)
    for instance in dataset.instances.select_related("template").filter(pronoun__in=["ey", "fae"]):
        Generation.objects.create(
            job=job,
            instance=instance,
            setting="pre",
            sample_index=0,
            context=instance.text.split(instance.template.mask)[0],
            continuation=" Fae smiled.",
            heuristic_correct=first_pronoun_rule(" Fae smiled.", instance.pronoun),
            first_pronoun="Fae",
        )
    judge = judge_add(name="smol-judge", model=smollm2)[0]
    pool = pool_sample(name="mine-pool", job_ids=[job.pk], instances=1, seed=0).pool
    assert pool is not None

    for generation in Generation.objects.filter(job=job).select_related("instance", "job__generation_run__dataset"):
        prompt = generation_prompt(judge=judge, generation=generation)
        declared = {"ey": "ey/em/eir/eirs/emself", "fae": "fae/faer/faers/faerself"}[generation.instance.pronoun]
        assert f"declared pronouns are {declared}" in prompt
        item = pool.items.filter(generation=generation).first()
        if item is not None:
            assert prompt == item_prompt(judge=judge, item=item)
