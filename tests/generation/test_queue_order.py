"""Queue place, the estimate before the first result and the resume count: the place a queued
job shows is the order jobs of every kind actually run in, the embedded runner takes its waiting jobs in that order,
a running job has an estimate with a range as soon as anything says how fast its model runs, and a job started for
the first time by a server's start is not counted as resumed."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from generation.jobs import runner
from generation.jobs.progress import job_requeue
from generation.models import Job, JobChunk, JobStatus
from generation.selectors import job_run_order, job_status_text, job_timing
from tests.factories import GenerationJobFactory, LanguageModelFactory


def queued(*, kind: str = "generation", sent_seconds_ago: float | None, model=None) -> Job:
    """A queued job with one chunk, handed to its runner `sent_seconds_ago` (None: not yet)."""
    job = GenerationJobFactory(
        kind=kind,
        status=JobStatus.QUEUED,
        total_units=1,
        total_items=4,
        **({"model": model} if model else {}),
    )
    sent = None if sent_seconds_ago is None else timezone.now() - timedelta(seconds=sent_seconds_ago)
    JobChunk.objects.create(job=job, index=0, unit_ids=[1], sent_at=sent)
    return job


@pytest.mark.django_db
def test_the_queue_place_is_the_order_the_chunks_were_handed_over_across_kinds():
    running = GenerationJobFactory(status=JobStatus.RUNNING)
    resumed = queued(sent_seconds_ago=5)  # created first, but resumed (handed over again) last
    judge = queued(kind="judge", sent_seconds_ago=30)
    later = queued(sent_seconds_ago=10)

    assert job_run_order() == [running.pk, judge.pk, later.pk, resumed.pk]
    assert job_status_text(job=judge) == f"queued, 2nd after job {running.pk}"
    assert job_status_text(job=later) == f"queued, 3rd after job {judge.pk}"
    assert job_status_text(job=resumed) == f"queued, 4th after job {later.pk}"


@pytest.mark.django_db(transaction=True)
def test_the_embedded_runner_takes_its_waiting_jobs_in_the_order_the_page_shows(monkeypatch):
    monkeypatch.setattr(runner, "BUSY_POLL_SECONDS", 0.05)
    order = runner._RunOrder()
    first, second, third = (queued(sent_seconds_ago=ago) for ago in (10, 30, 20))
    took: list[int] = []
    blocker = threading.Event()

    def run(job_id: int) -> None:
        with order.turn(job_id):
            took.append(job_id)
            blocker.wait(5)

    holder = queued(sent_seconds_ago=60)
    threads = [threading.Thread(target=run, args=(job.pk,)) for job in (holder, first, second, third)]
    threads[0].start()
    while not took:
        threading.Event().wait(0.01)
    for thread in threads[1:]:
        thread.start()
    threading.Event().wait(0.3)  # all three wait for the holder
    blocker.set()
    for thread in threads:
        thread.join(10)

    assert took == [holder.pk, second.pk, third.pk, first.pk]


@pytest.mark.django_db
def test_a_job_that_never_ran_is_not_counted_as_resumed():
    job = queued(sent_seconds_ago=None)
    job_requeue(job=job)  # a server's first start takes up the demo's queued job
    job_requeue(job=job)  # and it restarts before the job began
    assert job.resumes == 0

    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, run_started_at=timezone.now())
    job.refresh_from_db()
    job_requeue(job=job)  # one restart while it ran
    job_requeue(job=job)  # the next start, before it ran again
    job.refresh_from_db()
    assert job.resumes == 1


@pytest.mark.django_db
def test_a_running_job_has_a_range_from_its_models_recent_pace_before_its_own_first_batch(client, researcher):
    model = LanguageModelFactory()
    now = timezone.now()
    job = queued(sent_seconds_ago=5, model=model)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=now, run_started_at=now, total_items=40, total_units=10
    )
    job.refresh_from_db()
    assert job_timing(job=job, now=now).eta_seconds is None
    client.force_login(researcher)
    assert "estimated after the first batch" in client.get(f"/generation/jobs/{job.pk}/").content.decode()

    # An earlier job of the model: a chunk of 2 instances x 4 rows took 80 s, 10 s a row.
    earlier = GenerationJobFactory(model=model, total_units=2, total_items=8)
    JobChunk.objects.create(
        job=earlier, index=0, unit_ids=[1, 2], started_at=now - timedelta(seconds=100),
        finished_at=now - timedelta(seconds=20),
    )  # fmt: skip
    timing = job_timing(job=job, now=now)
    assert timing.eta_seconds == pytest.approx(400)  # 40 rows left at 10 s each
    assert (timing.eta_low_seconds, timing.eta_high_seconds) == (pytest.approx(200), pytest.approx(800))


@pytest.mark.django_db
def test_the_time_left_counts_down_when_a_new_reading_would_raise_it(client, researcher):
    """The model's pace on an earlier job says 400 s; the run's first chunk, which loaded the model, says 30 s a row.
    The time left keeps counting down from the first estimate until that runs out, then takes the run's own pace."""
    model = LanguageModelFactory()
    now = timezone.now()
    job = queued(sent_seconds_ago=5, model=model)
    job.chunks.all().delete()
    JobChunk.objects.bulk_create(JobChunk(job=job, index=i, unit_ids=[10 + i]) for i in range(10))
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=now, run_started_at=now, total_items=40, total_units=10
    )
    job.refresh_from_db()
    earlier = GenerationJobFactory(model=model, total_units=2, total_items=8)
    JobChunk.objects.create(
        job=earlier, index=0, unit_ids=[1, 2], started_at=now - timedelta(seconds=100),
        finished_at=now - timedelta(seconds=20),
    )  # fmt: skip
    assert job_timing(job=job, now=now).eta_seconds == pytest.approx(400)  # 40 rows at 10 s each

    # 120 s later the first chunk (4 rows) has finished: 30 s a row, 36 rows left, 1,080 s at that pace alone.
    first = job.chunks.get(index=0)
    JobChunk.objects.filter(pk=first.pk).update(started_at=now, finished_at=now + timedelta(seconds=120))
    Job.objects.filter(pk=job.pk).update(done_items=4)
    job.refresh_from_db()
    later = job_timing(job=job, now=now + timedelta(seconds=120))

    assert later.eta_seconds == pytest.approx(400 - 120)
    assert later.eta_low_seconds < later.eta_seconds < later.eta_high_seconds
    readings = [job_timing(job=job, now=now + timedelta(seconds=120 + step)).eta_seconds for step in (0, 30, 60, 90)]
    assert readings == sorted(readings, reverse=True) and len(set(readings)) == 4

    # The counted-down estimate has run out with work left: the run's own pace takes over.
    exhausted = job_timing(job=job, now=now + timedelta(seconds=400))
    assert exhausted.eta_seconds == pytest.approx(36 * 30 - (400 - 120))
