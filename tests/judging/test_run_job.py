"""A judge run is a job of kind `judge`: it labels every item once, with its prompt and scores, and a finished run
is not run again unless asked."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from generation.jobs.services import job_cancel, job_run
from generation.models import Job
from judging.models import JudgeRun, MachineLabel
from judging.selectors import item_prompt
from judging.services.runs import judge_run_create
from tests.factories import PoolFactory, PoolItemFactory
from tests.judging.conftest import CONTINUATIONS

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def two_items(db):
    """A pool of two items, which a small job cuts into two chunks of one item each (each chunk with its own seed), so
    that "every item once" still spans more than one chunk. No more: each item's prompt costs a forward pass of its
    whole text in every run of a test (about a second on the CPU)."""
    pool = PoolFactory(name="judged")
    return pool, [PoolItemFactory(pool=pool, continuation=text) for text in CONTINUATIONS[:2]]


def _judge(*arguments: str) -> dict:
    out = io.StringIO()
    call_command("judge", *arguments, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_it_labels_every_item_once_as_a_judge_job(judge, two_items, loaded_model):
    pool, items = two_items
    summary = _judge("--pool", pool.name, "--judge", judge.name)
    assert summary["state"] == "done" and summary["labels"] == len(items) and summary["created"]
    run = JudgeRun.objects.get(pk=summary["run"])
    job = Job.objects.get(pk=run.job_id)
    assert (job.kind, job.status, job.done_units, job.total_units) == ("judge", "done", len(items), len(items))
    assert job.dataset is None and job.model_id == judge.model_id
    labels = {label.item_id: label for label in MachineLabel.objects.filter(run=run)}
    assert set(labels) == {item.pk for item in items}
    for item in items:
        label = labels[item.pk]
        assert label.prompt == item_prompt(judge=judge, item=item)
        assert set(label.scores) == set(judge.option_map)
        assert label.label == max(judge.option_map, key=lambda key: label.scores[key])
        assert 1 / len(judge.option_map) <= label.confidence <= 1


def test_a_finished_run_is_not_run_again_unless_asked(judge, two_items, loaded_model):
    pool, items = two_items
    first = _judge("--pool", pool.name, "--judge", judge.name)
    again = _judge("--pool", pool.name, "--judge", judge.name)
    assert again["run"] == first["run"] and not again["created"]
    assert JudgeRun.objects.count() == 1 and Job.objects.filter(kind="judge").count() == 1
    rerun = _judge("--pool", pool.name, "--judge", judge.name, "--rerun")
    assert rerun["run"] != first["run"] and rerun["created"] and rerun["state"] == "done"
    assert MachineLabel.objects.filter(run_id=rerun["run"]).count() == len(items)


def test_sampling_runs_give_the_same_labels_with_the_same_seed(judge, two_items, loaded_model):
    pool, _ = two_items
    arguments = ("--pool", pool.name, "--judge", judge.name, "--mode", "sampling", "--k", "3", "--seed", "11")
    first = _judge(*arguments)
    second = _judge(*arguments, "--rerun")
    assert first["state"] == second["state"] == "done"

    def labels(run_id: int) -> list:
        rows = MachineLabel.objects.filter(run_id=run_id).order_by("item_id")
        return [(row.item_id, row.label, row.confidence, row.samples) for row in rows]

    assert labels(first["run"]) == labels(second["run"])
    assert all(len(samples) == 3 for *_, samples in labels(first["run"]))


def test_a_cancelled_run_writes_nothing_more(judge, judged_pool):
    pool, _ = judged_pool
    run, _ = judge_run_create(pool=pool.name, judge=judge.name, queue=False)
    job_cancel(job=run.job)
    job_run(job_id=run.job_id)
    assert not MachineLabel.objects.filter(run=run).exists()
    assert JudgeRun.objects.get(pk=run.pk).state == "cancelled"
