"""TANGO through the ordinary jobs: one `open` setting, the heuristic with TANGO's Omega, and Prob-TANGO per
generation (rewritten, 4 candidates scored with the prefix-shared scorer, failures stored as failed)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from benchmarks.reference import sequence_loss
from generation.datasets.registry import codebook_for
from generation.datasets.tango import dataset_import_tango
from generation.heuristic import heuristic_verdict
from generation.jobs.services import JobParameterError, job_parameters_validate, job_run
from generation.models import Generation, Job, JobStatus, ProbResult, TangoTemplate
from generation.pronouns import BASES
from generation.rewriting import rewrite_continuations, template_fill
from generation.services.tango import contraction_chooser, tango_score
from tests.conftest import DEMO
from tests.factories import GenerationJobFactory


@pytest.fixture
def demo_tango(db):
    return dataset_import_tango(templates_path=DEMO / "tango_misgendering.jsonl", name="demo-tango").dataset


class TestParameters:
    def test_a_tango_job_has_the_open_setting_by_default(self, smollm2, demo_tango):
        params = job_parameters_validate(model="smollm2-135m", dataset="demo-tango")

        assert params.settings == ["open"]

    def test_it_refuses_pre_and_post_for_tango_and_open_for_the_others(self, smollm2, demo_tango, demo_ruff):
        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(model="smollm2-135m", dataset="demo-tango", settings=["pre"])
        assert "'pre'" in caught.value.errors["settings"] and "open" in caught.value.errors["settings"]

        with pytest.raises(JobParameterError) as caught:
            job_parameters_validate(model="smollm2-135m", dataset="demo-ruff", settings=["open"])
        assert "'open'" in caught.value.errors["settings"]


@pytest.mark.slow
@pytest.mark.django_db
def test_a_tango_job_samples_open_contexts_and_scores_prob_tango_per_generation(smollm2, demo_tango, loaded_model):
    smollm2.batch_size = 4
    smollm2.save()
    out = io.StringIO()
    call_command(
        "generate", "--dataset", "demo-tango", "--per-pronoun", "1", "--samples", "2", "--max-new-tokens", "16",
        "--seed", "7", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    summary = json.loads(out.getvalue().strip().splitlines()[-1])

    job = Job.objects.get(pk=summary["job"])
    assert summary == {"job": job.pk, "status": "done", "instances": 4, "generations": 8}
    assert job.generation_run.settings == ["open"] and job.done_units == 4
    assert not ProbResult.objects.filter(job=job).exists()  # TANGO has no mask to score
    generations = list(Generation.objects.filter(job=job).select_related("instance__template", "tango_template"))
    assert len(generations) == 8
    codebook = codebook_for("tango")
    for generation in generations:
        template_text = generation.instance.template.text.split(generation.instance.template.mask)[0]
        assert generation.setting == "open"
        assert generation.context == template_text.capitalize()
        verdict = heuristic_verdict(
            continuation=generation.continuation, codebook=codebook, pronoun=generation.instance.pronoun
        )
        assert generation.heuristic_correct == verdict.correct

        row = generation.tango_template
        [rewrite] = rewrite_continuations(
            [generation.continuation],
            choose_contraction=contraction_chooser(loaded=loaded_model, contexts=[generation.context]),
        )
        assert (row.cut, row.neutralized, row.template, row.failed) == (
            rewrite.cut,
            rewrite.neutralized,
            rewrite.template,
            rewrite.failed,
        )
        if row.failed:
            assert row.losses is None and row.correct is None and row.prediction == ""
            continue
        # Each candidate's loss equals the plain, one-text-at-a-time mean token loss.
        for base in BASES:
            text = generation.context + (row.neutralized if base == "they" else template_fill(row.template, base))
            assert row.losses[base] == pytest.approx(sequence_loss(loaded=loaded_model, text=text), abs=1e-3)
        assert row.prediction == min(BASES, key=row.losses.get)
        assert row.correct == (row.prediction == generation.instance.pronoun)

    # Running the chunks again writes nothing new.
    job.status = JobStatus.RUNNING
    job.save()
    job_run(job_id=job.pk)
    assert TangoTemplate.objects.filter(job=job).count() == 8


@pytest.mark.slow
@pytest.mark.django_db
def test_prob_tango_chooses_the_contraction_the_model_scores_lower(loaded_model):
    context = "Rowan keeps bees on the hill, and"
    [(rewrite, losses, prediction, correct)] = tango_score(
        loaded=loaded_model, contexts=[context], continuations=[" he's been busy all week."], pronouns=["he"]
    )

    with_re = sequence_loss(loaded=loaded_model, text=context + " they're been busy all week.")
    with_ve = sequence_loss(loaded=loaded_model, text=context + " they've been busy all week.")
    assert rewrite.neutralized == (
        " they're been busy all week." if with_re <= with_ve else " they've been busy all week."
    )
    assert rewrite.template == " {nom}'s been busy all week."
    assert set(losses) == set(BASES) and prediction in BASES and correct == (prediction == "he")


@pytest.mark.django_db
def test_the_export_carries_each_generations_prob_tango_verdict(demo_tango):
    from generation.models import LanguageModel
    from generation.selectors import job_export_rows

    model = LanguageModel.objects.create(name="m1", source_kind="hub", source="example/m1")
    job = GenerationJobFactory(
        model=model, dataset=demo_tango, pronouns=["xe"], settings=["open"], status=JobStatus.DONE
    )
    instance = demo_tango.instances.filter(pronoun="xe").first()
    made, failed = (
        Generation.objects.create(
            job=job,
            instance=instance,
            setting="open",
            sample_index=index,
            context="C",
            continuation=text,
            heuristic_correct=True,
        )  # fmt: skip
        for index, text in enumerate([" Xe smiles.", " Nobody came."])
    )
    TangoTemplate.objects.create(
        job=job, generation=made, cut=" Xe smiles.", neutralized=" They smile.", template=" {Nom} smiles.",
        failed=False, losses=dict.fromkeys(BASES, 1.0), prediction="xe", correct=True,
    )  # fmt: skip
    TangoTemplate.objects.create(
        job=job, generation=failed, cut=" Nobody came.", neutralized=" Nobody came.", template=None, failed=True
    )

    rows = {row["sample_index"]: row for row in job_export_rows(job=job)}

    assert (rows[0]["prob_prediction"], rows[0]["prob_correct"]) == ("xe", 1)
    assert (rows[0]["tango_template"], rows[0]["tango_failed"]) == (" {Nom} smiles.", 0)
    assert (rows[1]["prob_prediction"], rows[1]["prob_correct"], rows[1]["tango_failed"]) == ("", "", 1)


@pytest.mark.django_db
def test_the_job_page_shows_prob_tango_m_prob_failed_templates_and_each_rewrite(demo_tango, client, researcher):
    """The page shows Prob-TANGO's results as the export holds them (it once read "Probability-based: 0 / 0
    correct")."""
    from generation.models import LanguageModel

    model = LanguageModel.objects.create(name="m1", source_kind="hub", source="example/m1")
    job = GenerationJobFactory(
        model=model, dataset=demo_tango, pronouns=["xe"], settings=["open"], status=JobStatus.DONE
    )
    instance = demo_tango.instances.filter(pronoun="xe").first()
    texts = [" Xe smiles.", " Xe waves.", " Nobody came."]
    rows = [
        Generation.objects.create(
            job=job,
            instance=instance,
            setting="open",
            sample_index=index,
            context="C",
            continuation=text,
            heuristic_correct=True,
        )  # fmt: skip
        for index, text in enumerate(texts)
    ]
    for generation, (neutral, template, correct) in zip(
        rows[:2], [(" They smile.", " {Nom} smiles.", True), (" They wave.", " {Nom} waves.", False)], strict=True
    ):
        TangoTemplate.objects.create(
            job=job, generation=generation, cut=generation.continuation, neutralized=neutral, template=template,
            failed=False, losses=dict.fromkeys(BASES, 1.0), prediction="xe" if correct else "he", correct=correct,
        )  # fmt: skip
    TangoTemplate.objects.create(
        job=job, generation=rows[2], cut=" Nobody came.", neutralized=" Nobody came.", template=None, failed=True
    )

    client.force_login(researcher)
    html = client.get(f"/generation/jobs/{job.pk}/").content.decode()

    # By hand: 1 of the 2 templates that did not fail is correct; 1 of 3 templates failed.
    assert "m_prob 1 / 2 correct (0.500)" in html and "failed templates 1 of 3 (0.333)" in html
    assert "0 / 0 correct" not in html
    assert " They smile." in html and " {Nom} smiles." in html and " They wave." in html
    assert "no pronoun slot in “ Nobody came.”" in html
