"""Crash recovery without the language model: leases, transient errors, resuming, the stale-chunk sweep, progress.

The model's work is replaced by fakes (fixed losses, continuations named after their seed), so these tests run the
real chunk and job services against the database in a second. The real worker, a killed one and a dropped database
connection are in test_worker.py; the embedded server killed mid-job in test_embedded_recovery.py.
"""

import json
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.utils import timezone

from generation.engines.hf import engine as hf_engine
from generation.engines.hf.scoring import ScoreResult
from generation.jobs import runner
from generation.jobs.chunks import chunk_run
from generation.jobs.leases import Heartbeat, chunk_claim, lease_owner_gone, lease_owner_new
from generation.jobs.services import JobStateError, chunks_requeue_stale, job_create, job_resume, job_run
from generation.models import Generation, Job, JobChunk, JobStatus, ProbResult
from generation.pronouns import BASES
from generation.selectors import job_timing
from generation.signals import chunk_finished

TINY = {"samples": 2, "max_new_tokens": 3, "per_pronoun": 1}  # 4 instances x 2 settings x 2 samples = 16 rows


class FakeModel:
    """Stands in for scoring and sampling; `fail` holds errors to raise on the next sampling calls, in order."""

    def __init__(self):
        self.fail: list[BaseException] = []
        self.sample_calls = 0

    def score(self, *, loaded, items):
        return [ScoreResult(losses={base: 1.0 for base in BASES}, prediction="they", correct=False) for _ in items]

    def sample(self, *, loaded, contexts, decoding, seed, batch_size=None, stop=None):
        self.sample_calls += 1
        if self.fail:
            raise self.fail.pop(0)
        return [[f" text {seed} {row} {index}" for index in range(decoding.samples)] for row in range(len(contexts))]

    def sample_groups(self, *, loaded, groups, decoding, stop=None):
        """The hf engine's call for a chunk's settings: one sampling call per group, in order (through the engine
        module's `sample_continuations`, which a test may replace)."""
        return [
            hf_engine.sample_continuations(loaded=loaded, contexts=contexts, decoding=decoding, seed=seed, stop=stop)
            for contexts, seed in groups
        ]


@pytest.fixture
def fake_model(monkeypatch, settings):
    fake = FakeModel()
    monkeypatch.setattr(hf_engine, "model_load", lambda **kwargs: object())
    monkeypatch.setattr(hf_engine, "score_instances", fake.score)
    monkeypatch.setattr(hf_engine, "sample_continuations", fake.sample)
    monkeypatch.setattr(hf_engine, "sample_groups", fake.sample_groups)
    monkeypatch.setattr(runner, "BUSY_POLL_SECONDS", 0.05)
    settings.CONCORD_TRANSIENT_BACKOFF_SECONDS = 0
    return fake


@pytest.fixture
def tiny_job(smollm2, demo_ruff):
    return job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, **TINY)


def rows_of(job) -> list[tuple]:
    return sorted(Generation.objects.filter(job=job).values_list("instance_id", "setting", "sample_index"))


def expected_rows(job) -> list[tuple]:
    ids = [i for chunk in job.chunks.all() for i in chunk.unit_ids]
    return sorted(
        (i, setting, index)
        for i in ids
        for setting in job.generation_run.settings
        for index in range(job.generation_run.samples)
    )


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


class TestLeases:
    def test_a_chunk_runs_in_one_place_at_a_time(self, tiny_job):
        chunk = tiny_job.chunks.first()
        mine, theirs = lease_owner_new(), lease_owner_new()
        assert chunk_claim(chunk_id=chunk.pk, owner=mine)
        assert not chunk_claim(chunk_id=chunk.pk, owner=theirs)  # a live lease of this very process
        assert chunk_claim(chunk_id=chunk.pk, owner=mine)  # a retry keeps its lease
        JobChunk.objects.filter(pk=chunk.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert chunk_claim(chunk_id=chunk.pk, owner=theirs)  # expired: the runner is gone
        chunk.refresh_from_db()
        assert chunk.lease_owner == theirs and chunk.attempts == 3

    def test_a_lease_of_a_process_gone_from_this_host_is_taken_over_before_it_expires(self, tiny_job):
        chunk = tiny_job.chunks.first()
        host, namespace, _, token, run = lease_owner_new().split(":")
        gone = f"{host}:{namespace}:{dead_pid()}:{token}:{run}"
        JobChunk.objects.filter(pk=chunk.pk).update(
            lease_owner=gone, lease_expires_at=timezone.now() + timedelta(minutes=5)
        )
        assert lease_owner_gone(gone)
        assert chunk_claim(chunk_id=chunk.pk, owner=lease_owner_new())

    def test_it_tells_a_restarted_process_from_the_one_before_it(self):
        import os

        host, namespace, _, token, _ = lease_owner_new().split(":")
        assert lease_owner_gone(f"{host}:{namespace}:{os.getpid()}:other-token:run")  # this pid's earlier life
        assert not lease_owner_gone(f"{host}:{namespace}:{os.getpid()}:{token}:run")  # this process: alive
        assert not lease_owner_gone(f"{host}:{namespace}:{os.getppid()}:{token}:run")  # a live process
        assert not lease_owner_gone(f"elsewhere:{namespace}:{dead_pid()}:{token}:run")  # another host: unknown
        assert not lease_owner_gone(f"{host}:another-namespace:{dead_pid()}:{token}:run")  # another container
        assert not lease_owner_gone("garbage")

    def test_the_heartbeat_extends_the_lease_and_notices_a_takeover(self, tiny_job):
        chunk = tiny_job.chunks.first()
        owner = lease_owner_new()
        assert chunk_claim(chunk_id=chunk.pk, owner=owner)
        soon = timezone.now() + timedelta(seconds=1)
        JobChunk.objects.filter(pk=chunk.pk).update(lease_expires_at=soon)
        beat = Heartbeat(chunk_id=chunk.pk, owner=owner)
        beat.beat()
        chunk.refresh_from_db()
        assert chunk.lease_expires_at > soon and not beat.lost.is_set()
        JobChunk.objects.filter(pk=chunk.pk).update(lease_owner=lease_owner_new())
        beat.beat()
        assert beat.lost.is_set()

    def test_a_chunk_held_by_a_live_runner_is_left_to_it(self, tiny_job, fake_model):
        chunk = tiny_job.chunks.first()
        assert chunk_claim(chunk_id=chunk.pk, owner=lease_owner_new())
        chunk_run(chunk_id=chunk.pk)
        chunk.refresh_from_db()
        assert chunk.attempts == 1 and chunk.finished_at is None
        assert Generation.objects.count() == ProbResult.objects.count() == fake_model.sample_calls == 0


class TestTransientErrors:
    def test_a_dropped_connection_mid_chunk_is_retried_and_the_chunk_finishes(self, tiny_job, fake_model):
        fake_model.fail = [OperationalError("terminating connection due to administrator command")]
        for chunk in tiny_job.chunks.order_by("index"):
            chunk_run(chunk_id=chunk.pk)
        job = Job.objects.get(pk=tiny_job.pk)
        assert (job.status, job.done_items, job.done_units) == (JobStatus.DONE, 16, 4)
        assert rows_of(job) == expected_rows(job) and ProbResult.objects.filter(job=job).count() == 4
        first = job.chunks.get(index=0)
        assert "terminating connection" in first.last_error and first.attempts == 2
        assert fake_model.sample_calls == 2 * 4 + 1

    def test_it_gives_up_after_bounded_retries_and_the_job_resumes_to_exact_counts(
        self, tiny_job, fake_model, settings
    ):
        settings.CONCORD_TRANSIENT_RETRIES = 2
        chunks = list(tiny_job.chunks.order_by("index"))
        chunk_run(chunk_id=chunks[0].pk)
        fake_model.fail = [OperationalError("server closed the connection unexpectedly")] * 3
        with pytest.raises(OperationalError):
            chunk_run(chunk_id=chunks[1].pk)
        job = Job.objects.get(pk=tiny_job.pk)
        assert job.status == JobStatus.FAILED and "server closed the connection" in job.error
        assert fake_model.sample_calls == 2 + 3  # chunk 0's two settings, then 1 try + 2 retries
        chunks[1].refresh_from_db()
        assert chunks[1].lease_owner == "" and chunks[1].finished_at is None  # free to resume at once

        job = job_resume(job_id=job.pk, queue=False)
        assert (job.status, job.error, job.resumes, job.run_done_at_start) == (JobStatus.QUEUED, "", 1, 4)
        job = job_run(job_id=job.pk)
        assert (job.status, job.done_items, job.done_units) == (JobStatus.DONE, 16, 4)
        assert rows_of(job) == expected_rows(job)

    def test_any_other_error_fails_the_job_at_once(self, tiny_job, fake_model):
        fake_model.fail = [RuntimeError("CUDA error: device-side assert")]
        with pytest.raises(RuntimeError):
            chunk_run(chunk_id=tiny_job.chunks.first().pk)
        job = Job.objects.get(pk=tiny_job.pk)
        assert job.status == JobStatus.FAILED and "device-side assert" in job.error
        assert fake_model.sample_calls == 1


class TestResume:
    def test_it_refuses_a_finished_job_and_an_unknown_one(self, tiny_job):
        Job.objects.filter(pk=tiny_job.pk).update(status=JobStatus.DONE)
        with pytest.raises(JobStateError, match="done"):
            job_resume(job_id=tiny_job.pk)
        with pytest.raises(JobStateError, match="no generation job 999999"):
            job_resume(job_id=999999)

    def test_it_sends_the_unfinished_chunks_no_live_runner_holds(
        self, tiny_job, settings, monkeypatch, django_capture_on_commit_callbacks
    ):
        settings.CELERY_TASK_ALWAYS_EAGER = False
        sent = []
        monkeypatch.setattr(runner, "_chunks_send", sent.extend)
        finished, live, stale, free = tiny_job.chunks.order_by("index")
        JobChunk.objects.filter(pk=finished.pk).update(finished_at=timezone.now())
        later, earlier = timezone.now() + timedelta(minutes=1), timezone.now() - timedelta(minutes=1)
        JobChunk.objects.filter(pk=live.pk).update(lease_owner=lease_owner_new(), lease_expires_at=later)
        JobChunk.objects.filter(pk=stale.pk).update(lease_owner="elsewhere:1:2:3:4", lease_expires_at=earlier)
        Job.objects.filter(pk=tiny_job.pk).update(status=JobStatus.FAILED, error="boom")
        with django_capture_on_commit_callbacks(execute=True):
            job = job_resume(job_id=tiny_job.pk)
        assert job.status == JobStatus.QUEUED and job.error == ""
        assert sent == [stale.pk, free.pk]
        stale.refresh_from_db()
        assert stale.lease_owner == "" and stale.lease_expires_at is None

    def test_the_sweeper_sends_each_stale_chunk_of_an_active_job_once(self, tiny_job, monkeypatch):
        sent = []
        monkeypatch.setattr(runner, "_chunks_send", sent.extend)
        stale, live, *_ = tiny_job.chunks.order_by("index")
        JobChunk.objects.filter(pk=stale.pk).update(
            lease_owner="elsewhere:1:2:3:4", lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        JobChunk.objects.filter(pk=live.pk).update(
            lease_owner="elsewhere:1:2:3:5", lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        assert chunks_requeue_stale() == [stale.pk]
        assert chunks_requeue_stale() == []  # freed once: a second sweeper finds nothing
        assert sent == [stale.pk]

        JobChunk.objects.filter(pk=stale.pk).update(
            lease_owner="elsewhere:1:2:3:4", lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        Job.objects.filter(pk=tiny_job.pk).update(status=JobStatus.CANCELLED)
        assert chunks_requeue_stale() == []  # a cancelled job's chunks stay put

    def test_the_runner_waits_for_a_chunk_held_elsewhere_and_takes_it_over_when_the_lease_goes_stale(
        self, tiny_job, fake_model
    ):
        held = tiny_job.chunks.get(index=2)
        JobChunk.objects.filter(pk=held.pk).update(
            lease_owner="elsewhere:1:2:3:4", lease_expires_at=timezone.now() + timedelta(milliseconds=300)
        )
        job = job_run(job_id=tiny_job.pk)
        assert (job.status, job.done_items) == (JobStatus.DONE, 16)
        assert rows_of(job) == expected_rows(job)

    def test_resume_jobs_finishes_failed_and_abandoned_jobs_with_exact_counts(self, smollm2, demo_ruff, fake_model):
        failed = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, **TINY)
        abandoned = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, seed=1, **TINY)
        chunk_run(chunk_id=failed.chunks.get(index=0).pk)
        Job.objects.filter(pk=failed.pk).update(status=JobStatus.FAILED, error="Traceback ...")
        # A web server killed mid-chunk: the job stays running, its chunk leased to a process that is gone.
        host, namespace, _, token, run = lease_owner_new().split(":")
        chunk = abandoned.chunks.get(index=1)
        chunk_run(chunk_id=abandoned.chunks.get(index=0).pk)
        JobChunk.objects.filter(pk=chunk.pk).update(
            lease_owner=f"{host}:{namespace}:{dead_pid()}:{token}:{run}",
            lease_expires_at=timezone.now() + timedelta(minutes=5),
        )
        out = StringIO()
        call_command("resume_jobs", stdout=out, stderr=StringIO())
        summary = json.loads(out.getvalue().strip().splitlines()[-1])
        assert summary == {
            "resumed": [
                {"job": failed.pk, "status": "done", "generations": 16},
                {"job": abandoned.pk, "status": "done", "generations": 16},
            ],
            "imports": [],
        }
        for job in (failed, abandoned):
            assert rows_of(job) == expected_rows(job)
            assert ProbResult.objects.filter(job=job).count() == 4

        with pytest.raises(CommandError, match=f"job {failed.pk} is done"):
            call_command("resume_jobs", f"--job={failed.pk}", stdout=StringIO(), stderr=StringIO())


class TestProgress:
    def test_progress_is_reported_after_every_written_step(self, tiny_job, fake_model):
        seen = []
        job_run(job_id=tiny_job.pk, progress=lambda job: seen.append(job.done_items))
        # Per chunk (one instance): after scoring, after pre (2 rows), after post (2 more).
        assert seen == [n for chunk in range(4) for n in (4 * chunk, 4 * chunk + 2, 4 * chunk + 4)]

    def test_a_finished_chunk_is_announced_to_other_apps(self, tiny_job, fake_model):
        heard = []

        def receiver(sender, **kwargs):
            heard.append((kwargs["job_id"], kwargs["instance_ids"]))

        chunk_finished.connect(receiver)
        try:
            chunk = tiny_job.chunks.first()
            chunk_run(chunk_id=chunk.pk)
        finally:
            chunk_finished.disconnect(receiver)
        assert heard == [(tiny_job.pk, chunk.unit_ids)]

    def test_the_time_left_is_the_work_left_at_this_runs_pace(self, tiny_job):
        now = timezone.now()
        job = tiny_job
        job.status = JobStatus.RUNNING
        job.total_items, job.done_items, job.run_done_at_start = 130, 50, 10
        job.started_at, job.run_started_at = now - timedelta(seconds=400), now - timedelta(seconds=100)
        timing = job_timing(job=job, now=now)
        # 40 generations in this run's 100 s; 80 left at that pace: 200 s.
        assert timing.elapsed_seconds == pytest.approx(400) and timing.eta_seconds == pytest.approx(200)

        job.done_items = job.run_done_at_start
        assert job_timing(job=job, now=now).eta_seconds is None  # no pace yet
        job.status, job.finished_at = JobStatus.DONE, now - timedelta(seconds=30)
        timing = job_timing(job=job, now=now)
        assert timing.elapsed_seconds == pytest.approx(370) and timing.eta_seconds is None


class TestCancelIsFinal:
    """docs/domain.md, 'Crash recovery': nothing brings a cancelled job back, and its chunks stop writing."""

    def test_resume_refuses_a_cancelled_job_from_the_service_the_command_the_api_and_the_page(
        self, tiny_job, api, client, admin_user
    ):
        from generation.jobs.services import job_cancel

        job_cancel(job=tiny_job)
        with pytest.raises(JobStateError, match="cancelled"):
            job_resume(job_id=tiny_job.pk)
        with pytest.raises(CommandError, match="cancelled"):
            call_command("resume_jobs", f"--job={tiny_job.pk}", stdout=StringIO(), stderr=StringIO())
        api.force_authenticate(admin_user)
        response = api.post(f"/api/generation-jobs/{tiny_job.pk}/resume/")
        assert response.status_code == 409 and "cancelled" in response.json()["detail"]
        assert api.get(f"/api/generation-jobs/{tiny_job.pk}/").json()["resumable"] is False
        client.force_login(admin_user)
        assert b"Resume</button>" not in client.get("/generation/jobs/").content
        tiny_job.refresh_from_db()
        assert tiny_job.status == JobStatus.CANCELLED and tiny_job.resumes == 0

    def test_resume_jobs_without_a_job_leaves_cancelled_ones_alone(self, tiny_job, fake_model):
        from generation.jobs.services import job_cancel

        job_cancel(job=tiny_job)
        out = StringIO()
        call_command("resume_jobs", stdout=out, stderr=StringIO())
        assert json.loads(out.getvalue().strip().splitlines()[-1]) == {"resumed": [], "imports": []}
        assert Generation.objects.count() == 0

    def test_the_start_up_resume_skips_a_job_cancelled_after_it_was_listed(self, tiny_job, fake_model, monkeypatch):
        """The reported race: the start-up thread listed a queued job, then an admin cancelled it."""
        from generation.jobs.services import job_cancel

        real_unfinished = runner.jobs_unfinished

        def listed_then_cancelled(**kwargs):
            listed = real_unfinished(**kwargs)
            job_cancel(job=tiny_job)
            return listed

        monkeypatch.setattr(runner, "jobs_unfinished", listed_then_cancelled)
        monkeypatch.setattr(runner, "_job_thread_start", lambda target, *, name, **kwargs: target(**kwargs))
        monkeypatch.setattr(runner.connections, "close_all", lambda: None)
        runner._resume_thread_start()
        tiny_job.refresh_from_db()
        assert tiny_job.status == JobStatus.CANCELLED and tiny_job.resumes == 0
        assert Generation.objects.count() == ProbResult.objects.count() == 0 and fake_model.sample_calls == 0

    def test_a_step_in_flight_when_the_cancel_commits_writes_nothing(self, tiny_job, fake_model):
        from generation.jobs.services import job_cancel

        real_sample = fake_model.sample

        def cancelled_while_sampling(**kwargs):
            job_cancel(job=Job.objects.get(pk=tiny_job.pk))
            return real_sample(**kwargs)

        hf_engine.sample_continuations = cancelled_while_sampling  # undone by the fixture's monkeypatch
        job = job_run(job_id=tiny_job.pk)
        assert job.status == JobStatus.CANCELLED
        assert Generation.objects.filter(job=job).count() == 0  # the step ran, but its rows were not written
        assert ProbResult.objects.filter(job=job).count() == 1  # the scoring step before the cancel stays
        assert JobChunk.objects.filter(job=job, finished_at__isnull=False).count() == 0

    def test_a_cancel_reaches_a_sampling_call_in_progress_which_ends_writing_nothing(self, tiny_job, fake_model):
        from generation.engines.hf.sampling import Interrupted
        from generation.jobs.services import job_cancel

        seen = []

        def cancelled_mid_call(*, stop, **kwargs):  # what StopWhen does between decoding steps
            seen.append(stop())
            job_cancel(job=Job.objects.get(pk=tiny_job.pk))
            seen.append(stop())
            if seen[-1]:
                raise Interrupted("stopped after 2 new tokens")
            return fake_model.sample(**kwargs)

        hf_engine.sample_continuations = cancelled_mid_call  # undone by the fixture's monkeypatch
        job = job_run(job_id=tiny_job.pk)
        assert seen == [False, True]  # the chunk's own stop, asked inside the call, sees the cancel
        assert job.status == JobStatus.CANCELLED
        assert Generation.objects.filter(job=job).count() == 0
        assert JobChunk.objects.filter(job=job, finished_at__isnull=False).count() == 0


class TestBrokerLoss:
    """docs/domain.md, 'Crash recovery': a job and its publishing succeed or fail together, and chunks whose
    messages a broker lost are sent again."""

    @pytest.fixture
    def broker_down(self, settings, monkeypatch):
        from kombu.exceptions import OperationalError as BrokerError

        from generation.tasks import chunk_run_task

        settings.CELERY_TASK_ALWAYS_EAGER = False

        def refuse(*args, **kwargs):
            raise BrokerError("Error 111 connecting to 127.0.0.1:6391. Connection refused.")

        monkeypatch.setattr(chunk_run_task, "apply_async", refuse)
        return monkeypatch

    @pytest.mark.django_db(transaction=True)  # the request commits and publishes, as in production
    def test_the_api_answers_503_and_keeps_the_job_failed_and_resumable(
        self, api, admin_user, smollm2, demo_ruff, broker_down
    ):
        api.force_authenticate(admin_user)
        response = api.post("/api/generation-jobs/", {"dataset": "demo-ruff", "per_pronoun": 1}, format="json")
        assert response.status_code == 503
        body = response.json()
        job = Job.objects.get()
        assert body["job"] == job.pk and body["resumable"] is True and "broker" in body["detail"]
        assert job.status == JobStatus.FAILED and "could not be reached" in job.error
        assert api.get(f"/api/generation-jobs/{job.pk}/").json()["resumable"] is True

        sent = []
        broker_down.setattr(runner, "_chunks_send", sent.extend)  # the broker is back
        response = api.post(f"/api/generation-jobs/{job.pk}/resume/")
        assert response.status_code == 200 and response.json()["status"] == "queued"
        assert sent == list(job.chunks.order_by("index").values_list("id", flat=True))

    @pytest.mark.django_db(transaction=True)
    def test_the_form_page_shows_the_error_and_offers_resume(self, client, admin_user, smollm2, demo_ruff, broker_down):
        client.force_login(admin_user)
        data = {"model": "smollm2-135m", "dataset": "demo-ruff", "pronouns": ["he"], "settings": ["pre"]}
        data |= {"samples": 1, "max_new_tokens": 5, "top_k": 5, "top_p": 0.9, "num_beams": 1, "seed": 0}
        response = client.post("/generation/jobs/new/", data)
        assert response.status_code == 503
        job = Job.objects.get()
        html = response.content.decode()
        assert "could not be reached" in html and f"/generation/jobs/{job.pk}/resume/" in html

    def test_the_backlog_counts_every_queue_a_chunk_may_be_routed_to(self, settings):
        settings.CELERY_TASK_ROUTES = ["some.router", {"generation.tasks.*": {"queue": "generation"}}]
        settings.CONCORD_VLLM_QUEUE = "gpu-chunks"
        settings.CELERY_TASK_DEFAULT_QUEUE = "default"  # where a pool import's one chunk goes (its kind's queue)
        assert runner.chunk_queues() == ["default", "generation", "gpu-chunks"]

    def test_the_sweeper_sends_again_what_the_broker_lost_once(self, tiny_job, monkeypatch, settings):
        settings.CONCORD_CHUNK_UNCLAIMED_SECONDS = 60
        sent = []
        monkeypatch.setattr(runner, "_chunks_send", sent.extend)
        old, recent, running, done = tiny_job.chunks.order_by("index")
        long_ago, just_now = timezone.now() - timedelta(seconds=120), timezone.now() - timedelta(seconds=5)
        JobChunk.objects.filter(pk__in=[old.pk, running.pk, done.pk]).update(sent_at=long_ago)
        JobChunk.objects.filter(pk=recent.pk).update(sent_at=just_now)
        JobChunk.objects.filter(pk=running.pk).update(
            lease_owner="elsewhere:1:2:3:4", lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        JobChunk.objects.filter(pk=done.pk).update(finished_at=timezone.now())

        assert runner.chunks_resend_unclaimed(backlog=2) == []  # the broker still holds a message per waiting chunk
        assert runner.chunks_resend_unclaimed(backlog=0) == [old.pk]  # it lost them: only the long-unclaimed one
        assert runner.chunks_resend_unclaimed(backlog=0) == []  # sent again just now: its clock restarted
        assert sent == [old.pk]
        Job.objects.filter(pk=tiny_job.pk).update(status=JobStatus.CANCELLED)
        JobChunk.objects.filter(job=tiny_job).update(sent_at=long_ago)
        assert runner.chunks_resend_unclaimed(backlog=0) == []  # never for a cancelled job


class TestTimeLeftAndQueue:
    def _running(self, job, *, now, chunks_done: list[tuple[float, float]]):
        """Mark the first chunks finished, each (started, finished) seconds before `now`; 4 rows per chunk."""
        job.status = JobStatus.RUNNING
        job.started_at = job.run_started_at = now - timedelta(seconds=1000)
        job.done_items = 4 * len(chunks_done)
        job.save()
        for chunk, (started, finished) in zip(job.chunks.order_by("index"), chunks_done, strict=False):
            JobChunk.objects.filter(pk=chunk.pk).update(
                started_at=now - timedelta(seconds=started), finished_at=now - timedelta(seconds=finished)
            )
        return job

    def test_the_estimate_is_the_recent_pace_with_a_range_and_counts_down_between_chunks(self, tiny_job):
        # 4 chunks of 1 instance x 2 settings x 2 samples = 4 rows each; 2 done, in 30 s and 50 s, one after the other.
        now = timezone.now()
        job = self._running(tiny_job, now=now, chunks_done=[(100, 70), (70, 20)])
        timing = job_timing(job=job, now=now)
        # Pace: 8 rows over 80 s = 0.1 rows/s; 2 chunks (8 rows) left = 80 s, less the 20 s since the last chunk.
        assert timing.eta_seconds == pytest.approx(60)
        # Chunk paces 7.5 and 12.5 s per row, mean 10: the range is 0.75x to 1.25x.
        assert (timing.eta_low_seconds, timing.eta_high_seconds) == (pytest.approx(45), pytest.approx(75))
        later = job_timing(job=job, now=now + timedelta(seconds=10))
        assert later.eta_seconds == pytest.approx(50)  # no jump: it counts down while the next chunk runs

    def test_a_queued_job_says_its_place_in_the_queue(self, smollm2, demo_ruff, client, admin_user):
        from generation.selectors import job_status_text

        first, second, third = (
            job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, **TINY) for _ in range(3)
        )
        Job.objects.filter(pk=first.pk).update(status=JobStatus.RUNNING)
        first.refresh_from_db()
        assert job_status_text(job=first) == "running"
        assert job_status_text(job=second) == f"queued, 2nd after job {first.pk}"
        assert job_status_text(job=third) == f"queued, 3rd after job {second.pk}"
        client.force_login(admin_user)
        assert f"queued, 2nd after job {first.pk}" in client.get("/generation/jobs/").content.decode()
        Job.objects.filter(pk=first.pk).update(status=JobStatus.DONE)
        assert job_status_text(job=second) == "queued, next"
