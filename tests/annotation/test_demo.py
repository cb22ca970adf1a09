"""The demo: the hand-written pool is ready as soon as `load_demo` returns, the live job is only queued, and the
live pool is drawn when the demo jobs finish."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation import demo
from annotation.models import Assignment, Pool
from generation.models import DEFAULT_MODEL_NAME, GenerationJob, JobStatus
from generation.signals import job_finished
from tests.annotation.factories import annotator_named
from tests.factories import (
    DatasetFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    TemplateFactory,
)


def demo_job(dataset_name: str, *, status: str) -> GenerationJob:
    """A demo-like job of the default model: two instances per pronoun, both settings, five samples each."""
    dataset = DatasetFactory(name=dataset_name, kind="ruff" if "ruff" in dataset_name else "misgendered")
    job = GenerationJobFactory(
        model=LanguageModelFactory(name=DEFAULT_MODEL_NAME), dataset=dataset, samples=5, status=status
    )
    for pronoun in job.pronouns:
        for n in range(2):
            instance = InstanceFactory(template=TemplateFactory(dataset=dataset), pronoun=pronoun, name=f"P{n}")
            for setting in job.settings:
                for index in range(5):
                    GenerationFactory(job=job, instance=instance, setting=setting, sample_index=index)
    return job


@pytest.fixture
def demo_annotators(db):
    return [annotator_named(name) for name in demo.ANNOTATORS]


def test_it_draws_the_live_pool_only_once_both_demo_jobs_have_finished(demo_annotators):
    first = demo_job("demo-misgendered", status=JobStatus.DONE)
    second = demo_job("demo-ruff", status=JobStatus.RUNNING)

    job_finished.send(sender=GenerationJob, job_id=first.pk)
    assert not Pool.objects.filter(name=demo.LIVE_POOL).exists()

    GenerationJob.objects.filter(pk=second.pk).update(status=JobStatus.DONE)
    job_finished.send(sender=GenerationJob, job_id=second.pk)
    pool = Pool.objects.get(name=demo.LIVE_POOL)
    # One instance with its 5 samples per model x dataset x setting x pronoun: 2 x 2 x 4 x 5.
    assert pool.items.count() == 80
    per_annotator = {
        name: Assignment.objects.filter(pool=pool, annotator__username=name).count() for name in demo.ANNOTATORS
    }
    assert per_annotator == {"annotator1": 50, "annotator2": 50}  # 80 items, 20 of them for both

    job_finished.send(sender=GenerationJob, job_id=second.pk)  # a second signal draws nothing more
    assert Pool.objects.filter(name__startswith="demo").count() == 1
    assert pool.items.count() == 80


def test_it_ignores_jobs_that_are_not_the_demos(demo_annotators):
    demo_job("demo-misgendered", status=JobStatus.DONE)
    other = demo_job("misgendered", status=JobStatus.DONE)
    job_finished.send(sender=GenerationJob, job_id=other.pk)
    assert not Pool.objects.filter(name=demo.LIVE_POOL).exists()


@pytest.mark.django_db
def test_load_demo_makes_the_hand_written_pool_ready_and_only_queues_the_live_job(capsys):
    call_command("load_demo")
    output = capsys.readouterr().out
    pool = Pool.objects.get(name=demo.SHIPPED_POOL)
    assert pool.items.count() == 48
    assert set(pool.items.values_list("setting", flat=True)) == {"pre", "post"}
    assert set(pool.items.values_list("dataset", flat=True)) == {"misgendered", "ruff"}
    for name in demo.ANNOTATORS:
        assert Assignment.objects.filter(pool=pool, annotator__username=name).count() == 32
    jobs = GenerationJob.objects.filter(dataset__name__in=demo.DATASETS)
    assert sorted(jobs.values_list("status", "total_generations")) == [(JobStatus.QUEUED, 80)] * 2
    assert not jobs.filter(generations__isnull=False).exists()
    assert "/generation/jobs/" in output

    call_command("load_demo")
    assert "pool demo: ready (48 items)" in capsys.readouterr().out
    assert pool.items.count() == 48 and jobs.count() == 2
    assert Assignment.objects.filter(pool=pool).count() == 64


@pytest.mark.django_db
def test_load_demo_without_generation_queues_nothing():
    call_command("load_demo", "--no-generate")
    assert Pool.objects.get(name=demo.SHIPPED_POOL).items.count() == 48
    assert not GenerationJob.objects.exists()
