"""A judge run over a whole generation job: a job of kind `judge` whose units are the job's generations; its labels
as a file (one row per generation) and through the API; the jobs page starts one; annotators see none of it."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from django.core.management import call_command

from annotation.models import Assignment
from generation.models import Generation, Job, JobChunk
from generation.parameters import JobParameterError
from judging.models import JudgeRun, MachineLabel
from judging.selectors import generation_prompt, item_prompt
from judging.services.runs import judge_run_create
from tests.factories import GenerationFactory, GenerationJobFactory, PoolFactory, PoolItemFactory
from tests.judging.verdict_study import build_study

pytestmark = pytest.mark.django_db

COLUMNS = [
    "generation", "model", "dataset", "setting", "pronoun", "context", "sample_index", "item", "label", "confidence",
    "prob_correct", "prob_misgendering", "prob_no_pronoun", "score_correct", "score_misgendering", "score_no_pronoun",
]  # fmt: skip


@pytest.fixture
def study(judge):
    return build_study(judge=judge)


def _softmax(scores: dict) -> dict:
    top = max(scores.values())
    weights = {label: math.exp(value - top) for label, value in scores.items()}
    return {label: weight / sum(weights.values()) for label, weight in weights.items()}


def test_a_run_over_a_job_is_a_judge_job_whose_units_are_the_jobs_generations(judge):
    job = GenerationJobFactory()
    generations = [GenerationFactory(job=job, sample_index=index) for index in range(3)]
    run, created = judge_run_create(job=job.pk, judge=judge.name, queue=False)
    assert created and run.pool is None and run.source_job == job and run.total_items == 3
    assert run.job.kind == "judge" and run.job.options == {}  # the run's parameters are its own row's, stored once
    units = [unit for chunk in JobChunk.objects.filter(job=run.job).order_by("index") for unit in chunk.unit_ids]
    assert units == [generation.pk for generation in generations]
    again, created_again = judge_run_create(job=job.pk, judge=judge.name, queue=False)
    assert again.pk == run.pk and not created_again


def test_a_cancelled_run_over_a_job_writes_nothing_and_is_not_resumed(judge):
    from generation.jobs.services import JobStateError, job_cancel, job_resume, job_run

    job = GenerationJobFactory()
    GenerationFactory(job=job)
    run, _ = judge_run_create(job=job.pk, judge=judge.name, queue=False)
    job_cancel(job=run.job)
    job_run(job_id=run.job_id)
    assert not MachineLabel.objects.filter(run=run).exists()
    assert JudgeRun.objects.get(pk=run.pk).state == "cancelled"
    with pytest.raises(JobStateError):
        job_resume(job_id=run.job_id, queue=False)
    again, created = judge_run_create(job=job.pk, judge=judge.name, queue=False)
    assert created and again.pk != run.pk  # a cancelled run stays cancelled: a new one is made


def test_a_run_needs_one_finished_generation_job_or_one_pool(judge, judged_pool):
    pool, _ = judged_pool
    running = GenerationJobFactory(status="running")
    GenerationFactory(job=running)
    empty = GenerationJobFactory()
    cases = [
        ({"job": running.pk}, "job", "running"),
        ({"job": empty.pk}, "job", "no generations"),
        ({"job": 99999}, "job", "no generation job"),
        ({"job": running.pk, "pool": pool.name}, "pool", "not both"),
        ({}, "pool", "--pool or --job"),
    ]
    for arguments, field, words in cases:
        with pytest.raises(JobParameterError) as caught:
            judge_run_create(judge=judge.name, queue=False, **arguments)
        assert words in caught.value.errors[field], arguments
    judge_job = judge_run_create(pool=pool.name, judge=judge.name, queue=False)[0].job
    with pytest.raises(JobParameterError, match="generation job"):
        judge_run_create(job=judge_job.pk, judge=judge.name, queue=False)
    assert not JudgeRun.objects.filter(source_job__isnull=False).exists()


def test_a_generations_prompt_is_the_prompt_of_the_pool_item_drawn_from_it(judge, study):
    generation_id = next(iter(study.items.values()))
    item_id = next(iter(study.items))
    from annotation.models import PoolItem

    item = PoolItem.objects.get(pk=item_id)
    generation = Generation.objects.get(pk=generation_id)
    assert generation_prompt(judge=judge, generation=generation) == item_prompt(judge=judge, item=item)


def test_export_judge_labels_writes_one_row_per_generation(study, tmp_path):
    second = PoolFactory(name="second")
    shared = study.generations[0]
    again = PoolItemFactory(pool=second, generation=shared)
    out = tmp_path / "labels.csv"
    call_command("export_judge_labels", run=study.run.pk, out=str(out))
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == COLUMNS
    assert [int(row["generation"]) for row in rows] == sorted(g.pk for g in study.generations)
    item_of = {generation: item for item, generation in study.items.items()}
    from annotation.models import PoolItem

    public = dict(PoolItem.objects.values_list("id", "public_id"))
    for row in rows:
        generation = int(row["generation"])
        scores = study.scores[generation]
        expected_items = [public[item_of[generation]]] if generation in item_of else []
        if generation == shared.pk:
            expected_items.append(again.public_id)
        assert row["item"] == ";".join(expected_items)
        assert (row["model"], row["dataset"], row["setting"]) == ("m1", "misgendered", "pre")
        for label, probability in _softmax(scores).items():
            assert float(row[f"prob_{label}"]) == pytest.approx(probability)
            assert float(row[f"score_{label}"]) == pytest.approx(scores[label])
        assert float(row["confidence"]) == pytest.approx(max(_softmax(scores).values()))
    # with --pool, only that pool's items; JSON lines keep numbers and nulls
    out = tmp_path / "labels.jsonl"
    call_command("export_judge_labels", run=study.run.pk, out=str(out), pool="second")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == len(study.generations) and list(records[0]) == COLUMNS
    assert {r["generation"]: r["item"] for r in records if r["item"]} == {shared.pk: again.public_id}
    assert isinstance(records[0]["sample_index"], int)


def test_researchers_list_a_jobs_runs_and_fetch_their_labels(api, researcher, annotator, study):
    api.force_authenticate(researcher)
    (row,) = api.get(f"/api/generation-jobs/{study.job.pk}/judges/").json()
    assert (row["id"], row["source_job"], row["pool"], row["state"]) == (study.run.pk, study.job.pk, None, "done")
    assert row["labels"] == len(study.generations)
    response = api.get(f"/api/judge-runs/{study.run.pk}/labels/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == len(study.generations) and list(rows[0]) == COLUMNS
    lines = api.get(f"/api/judge-runs/{study.run.pk}/labels/?format=jsonl&pool={study.pool.name}").content.decode()
    assert len(lines.splitlines()) == len(study.generations)
    assert api.get(f"/api/judge-runs/{study.run.pk}/labels/?pool=nope").status_code == 404
    assert api.get(f"/api/judge-runs/{study.run.pk + 999}/labels/").status_code == 404
    api.force_authenticate(annotator)
    assert api.get(f"/api/generation-jobs/{study.job.pk}/judges/").status_code == 403
    assert api.get(f"/api/judge-runs/{study.run.pk}/labels/").status_code == 403


def test_admins_start_a_run_over_a_finished_job_from_the_jobs_page(client, admin_user, researcher, judge, monkeypatch):
    monkeypatch.setattr("generation.jobs.services.job_dispatch", lambda **kwargs: None)
    job = GenerationJobFactory()
    GenerationFactory(job=job)
    client.force_login(admin_user)
    page = client.get("/generation/jobs/").content.decode()
    assert f'action="/generation/jobs/{job.pk}/judge/"' in page and f'<option value="{judge.name}">' in page
    response = client.post(f"/generation/jobs/{job.pk}/judge/", {"judge": judge.name})
    assert response.status_code == 302
    run = JudgeRun.objects.get(source_job=job)
    assert run.judge == judge and run.job.kind == "judge" and run.created_by == admin_user
    assert Job.objects.filter(kind="judge").count() == 1
    client.force_login(researcher)
    assert client.post(f"/generation/jobs/{job.pk}/judge/", {"judge": judge.name}).status_code == 403
    assert f'/generation/jobs/{job.pk}/judge/"' not in client.get("/generation/jobs/").content.decode()


def test_no_annotator_response_shows_a_label_from_a_run_over_the_job(client, annotator, study):
    items = list(study.items)[:3]
    from annotation.models import PoolItem

    for position, item in enumerate(PoolItem.objects.filter(pk__in=items)):
        Assignment.objects.create(pool=study.pool, item=item, annotator=annotator, position=position)
    client.force_login(annotator)
    responses = [client.get("/api/annotate/next/"), client.get(f"/annotate/{study.pool.name}/")]
    responses += [
        client.get(f"/api/annotate/items/{item.public_id}/") for item in PoolItem.objects.filter(pk__in=items)
    ]
    assert all(response.status_code == 200 for response in responses)
    confidences = {f"{study.confidence[study.items[i]]:.4f}" for i in items}
    for response in responses:
        text = response.content.decode()
        assert "smol-judge" not in text and "judge:" not in text and "Answer:" not in text
        assert not any(confidence in text for confidence in confidences)
        assert "prob_" not in text and "omega" not in text


@pytest.mark.slow
def test_judge_job_labels_every_generation_with_the_model(judge, loaded_model):
    job = GenerationJobFactory()
    generations = [
        GenerationFactory(job=job, sample_index=index, continuation=text)
        for index, text in enumerate([" Xe smiled.", " She smiled.", " The baker smiled."])
    ]
    out = io.StringIO()
    call_command("judge", "--job", str(job.pk), "--judge", judge.name, stdout=out, stderr=io.StringIO())
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["state"] == "done" and summary["job"] == job.pk and summary["labels"] == 3
    run = JudgeRun.objects.get(pk=summary["run"])
    labels = {label.generation_id: label for label in MachineLabel.objects.filter(run=run)}
    assert set(labels) == {generation.pk for generation in generations}
    for generation in generations:
        label = labels[generation.pk]
        assert label.item_id is None and label.prompt == generation_prompt(judge=judge, generation=generation)
        assert label.label == max(judge.option_map, key=lambda key: label.scores[key])


def test_adding_a_run_over_a_job_in_the_admin_queues_it(client, admin_user, judge, judged_pool, monkeypatch):
    monkeypatch.setattr("generation.jobs.services.job_dispatch", lambda **kwargs: None)
    job = GenerationJobFactory()
    GenerationFactory(job=job)
    client.force_login(admin_user)
    form = {"judge": judge.pk, "source_job": job.pk, "mode": "likelihood", "k": 1, "temperature": 1.0, "seed": 0}
    assert client.post("/admin/judging/judgerun/add/", form).status_code == 302
    run = JudgeRun.objects.get()
    assert run.source_job == job and run.pool is None and run.job.options == {}
    both = {**form, "pool": judged_pool[0].pk}
    assert client.post("/admin/judging/judgerun/add/", both).status_code == 200  # not both: the form says so
    assert JudgeRun.objects.count() == 1


def test_a_run_over_the_pools_job_gives_the_report_a_new_version(study):
    from analysis.services import report_data_version
    from generation.jobs.services import job_cancel

    before = report_data_version(pool=study.pool)
    other, _ = judge_run_create(job=study.job.pk, judge=study.run.judge.name, rerun=True, queue=False)
    assert report_data_version(pool=study.pool) != before
    during = report_data_version(pool=study.pool)
    job_cancel(job=other.job)  # the run ends: its job's state changed
    assert report_data_version(pool=study.pool) != during
