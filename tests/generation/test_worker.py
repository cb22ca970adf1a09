"""End to end through a real Celery worker: Redis broker, Postgres, `generate --wait` polling the job row."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from generation.models import Generation, Job, JobChunk, JobStatus, ProbResult
from tests.conftest import REPO


def _broker_url() -> str:
    """The test broker; parallel pytest workers (gw0, gw1, ...) each take their own Redis database below it, so that
    one's Celery worker never takes another's chunks (its database would not have them)."""
    base = os.environ.get("CONCORD_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return base
    server, _, database = base.rpartition("/")
    return f"{server}/{int(database or 0) - int(worker[2:])}"


BROKER = _broker_url()

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Shorter than the default 30 s: a worker's sweeper runs every third of it (every 2.7 s here), so that a chunk or an
# import of a killed worker is sent again soon after a worker starts (a dead runner's lease is stale at once: its pid
# is gone). The heartbeat renews a lease as often, so a lease runs out only after three missed beats.
LEASE_SECONDS = 8


def _environment() -> dict:
    db = connection.settings_dict
    url = (
        f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    return {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": BROKER, "HF_HUB_OFFLINE": "1"}


@pytest.fixture
def broker():
    import redis

    client = redis.Redis.from_url(BROKER)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.fail(f"the test broker {BROKER} is not reachable: {exc}")
    client.delete("generation", "default")  # messages left by an earlier, interrupted run
    return client


WORKER_APPLICATION = "concord-test-worker"


class Workers:
    """Celery worker processes on the test broker and database; each logs to its own file."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen] = []

    def start(self) -> subprocess.Popen:
        log = self.tmp_path / f"worker-{len(self.processes)}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "generation,default", "--pool", "solo"]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"]
            + ["-n", f"test{len(self.processes)}@%h"],
            cwd=REPO,
            # One torch thread: on a busy CI machine, threads spinning for cores the worker does not get slow it down.
            # PGAPPNAME tags the workers' database connections, so a test can drop theirs and nobody else's.
            env={
                **_environment(),
                "CONCORD_CHUNK_LEASE_SECONDS": str(LEASE_SECONDS),
                "OMP_NUM_THREADS": "1",
                "PGAPPNAME": WORKER_APPLICATION,
            },
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        return process

    def log(self, process: subprocess.Popen) -> Path:
        return self.tmp_path / f"worker-{self.processes.index(process)}.log"

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text()[-3000:]}" for path in sorted(self.tmp_path.glob("worker-*.log"))
        )

    def stop(self) -> None:
        """Killed: a test is done with its workers, and a warm shutdown costs seconds each (what a killed worker
        leaves behind is what the crash-recovery tests are about)."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait()
        self.processes.clear()

    def running(self) -> bool:
        return bool(self.processes) and all(process.poll() is None for process in self.processes)


@pytest.fixture
def shared_database():
    if connection.vendor != "postgresql":
        pytest.skip("the worker process needs a database it can share (Postgres); set DATABASE_URL")


@pytest.fixture(scope="module")
def kept_worker(django_db_setup, tmp_path_factory):
    """A worker kept running from one test to the next, for the tests that only use a running worker (they may drop
    its database connections, which it survives, or kill it once they are done with it): started, and its model
    loaded, once for them. A test that needs workers of its own (or a broker of its own) stops it first: no other
    worker may take its chunks."""
    pool = Workers(tmp_path_factory.mktemp("kept-worker"))
    yield pool
    pool.stop()


@pytest.fixture
def no_kept_worker(kept_worker):
    kept_worker.stop()


@pytest.fixture
def workers(shared_database, broker, tmp_path, no_kept_worker):
    pool = Workers(tmp_path)
    yield pool
    pool.stop()


@pytest.fixture
def running_worker(shared_database, broker, kept_worker) -> Workers:
    """The kept worker, started if it is not running."""
    if not kept_worker.running():
        kept_worker.stop()
        kept_worker.start()
    return kept_worker


@pytest.fixture
def worker(running_worker):
    return running_worker.tmp_path / "worker-0.log"


class TestCeleryWorker:
    def test_it_runs_a_tiny_job_end_to_end(self, smollm2, demo_ruff, worker):
        command = [sys.executable, "manage.py", "generate", "--dataset=demo-ruff", "--per-pronoun=1"]
        # `--settings pre` is the contract's spelling (manage.py keeps Django from reading it as a settings module).
        command += ["--samples=1", "--max-new-tokens=3", "--settings", "pre", "--seed=3", "--wait"]
        try:
            result = subprocess.run(command, cwd=REPO, env=_environment(), capture_output=True, text=True, timeout=400)
        except subprocess.TimeoutExpired:
            pytest.fail("the job did not finish; worker log:\n" + worker.read_text()[-3000:])
        assert result.returncode == 0, result.stderr[-3000:] + "\nworker log:\n" + worker.read_text()[-3000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        job = Job.objects.get()
        assert summary == {"job": job.pk, "status": "done", "instances": 4, "generations": 4}
        assert job.status == JobStatus.DONE and job.started_at and job.finished_at
        assert ProbResult.objects.filter(job=job).count() == 4
        generations = Generation.objects.filter(job=job)
        assert generations.count() == 4 and set(generations.values_list("setting", flat=True)) == {"pre"}
        assert all(g.continuation for g in generations)
        assert "chunk_run_task" in worker.read_text()
        # The chunk queued the repetition rates on the default queue; the worker fills them shortly after.
        from analysis.models import RepetitionRate

        for _ in range(100):
            if RepetitionRate.objects.filter(job=job).count() == 4:
                break
            time.sleep(0.2)
        assert RepetitionRate.objects.filter(job=job).count() == 4, worker.read_text()[-3000:]


def _wait(condition, *, seconds: float, what: str, workers: Workers):
    """Poll until `condition()` is truthy (its value is returned); fail naming what never happened."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what} within {seconds:.0f} s\n{workers.logs()}")


def _wait_ended(job: Job, *, what: str, workers: Workers) -> None:
    """Until the job is done or failed (`_assert_exact` then says which)."""
    _wait(
        lambda: Job.objects.get(pk=job.pk).status in (JobStatus.DONE, JobStatus.FAILED),
        seconds=480,
        what=what,
        workers=workers,
    )


def _chunk_mid_run():
    """A chunk a worker holds that has been scored but not finished: its worker is sampling it now."""
    for chunk in JobChunk.objects.filter(finished_at__isnull=True).exclude(lease_owner=""):
        if ProbResult.objects.filter(job_id=chunk.job_id, instance_id__in=chunk.unit_ids).exists():
            return chunk
    return None


RECOVERY_PRONOUNS = ("he", "xe")  # a chunk each: one mid-run when the trouble comes, one still queued behind it


def _recovery_job(workers: Workers) -> Job:
    """Queue (through `generate`, on the test broker) 2 instances, one chunk each, long enough to be caught
    mid-sampling (2 settings x 2 samples x 10 tokens per chunk)."""
    command = [sys.executable, "manage.py", "generate", "--dataset=demo-ruff", "--per-pronoun=1", "--samples=2"]
    command += [f"--pronouns={','.join(RECOVERY_PRONOUNS)}", "--max-new-tokens=10", "--seed=11", "--batch-size=1"]
    result = subprocess.run(command, cwd=REPO, env=_environment(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:] + workers.logs()
    return Job.objects.get(pk=json.loads(result.stdout.strip().splitlines()[-1])["job"])


def _assert_exact(job: Job) -> None:
    job.refresh_from_db()
    instances = len(RECOVERY_PRONOUNS)
    assert (job.status, job.done_units, job.done_items) == (JobStatus.DONE, instances, instances * 2 * 2)
    assert Generation.objects.filter(job=job).count() == instances * 2 * 2
    assert ProbResult.objects.filter(job=job).count() == instances
    assert JobChunk.objects.filter(job=job).count() == instances
    assert not JobChunk.objects.filter(job=job, finished_at__isnull=True).exists()


class TestCrashRecovery:
    def test_a_dropped_database_connection_mid_chunk_is_retried_and_the_job_finishes(
        self, smollm2, demo_ruff, running_worker
    ):
        workers = running_worker
        job = _recovery_job(workers)
        _wait(_chunk_mid_run, seconds=300, what="no chunk was mid-run", workers=workers)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = %s AND pid <> pg_backend_pid()",
                [WORKER_APPLICATION],
            )
            assert cursor.fetchone()[0] >= 1  # the worker's connection(s)
        _wait_ended(job, what="the job did not end after its connection was dropped", workers=workers)
        _assert_exact(job)
        errors = list(JobChunk.objects.filter(job=job).exclude(last_error="").values_list("last_error", flat=True))
        assert errors, "no chunk saw the dropped connection\n" + workers.logs()  # retried, not failed
        # The kept worker's last task, the repetition rates the last chunk queued, ends before this test's tables are
        # emptied: rows it wrote meanwhile would break the emptying's foreign keys.
        from analysis.models import RepetitionRate

        generations = Generation.objects.filter(job=job).count()
        _wait(
            lambda: RepetitionRate.objects.filter(job=job).count() == generations,
            seconds=60,
            what="the job's repetition rates were not filled",
            workers=workers,
        )

    def test_a_chunk_of_a_killed_worker_runs_again_on_another_and_the_job_ends_with_exact_counts(
        self, smollm2, demo_ruff, running_worker
    ):
        # Two workers from the start: the kept one (its model loaded when an earlier test ran on this pytest worker)
        # and a second, which starts and loads its model while the first runs. The one caught mid-chunk is killed and
        # the other takes its chunk over, so no worker start (nor model load) waits for the kill.
        workers = running_worker
        try:
            workers.start()
            sizes = {process.pid: workers.log(process).stat().st_size for process in workers.processes}
            job = _recovery_job(workers)
            chunk = _wait(_chunk_mid_run, seconds=300, what="no chunk was mid-run", workers=workers)
            # Its lease owner names the process: host:pid namespace:pid:tokens (generation/jobs/leases.py).
            owner_pid = int(chunk.lease_owner.split(":")[2])
            killed = next(process for process in workers.processes if process.pid == owner_pid)
            killed.send_signal(signal.SIGKILL)
            killed.wait()
            killed_at = time.monotonic()
            chunk.refresh_from_db()
            assert chunk.finished_at is None and chunk.lease_owner  # killed mid-chunk, its lease left behind

            _wait(
                lambda: Job.objects.get(pk=job.pk).status == JobStatus.DONE,
                seconds=480,  # about half a minute on an idle 2-core machine; generous for a shared CI machine
                what="the job did not finish after the worker was killed",
                workers=workers,
            )
            print(f"finished {time.monotonic() - killed_at:.0f} s after the kill")
            _assert_exact(job)
            chunk.refresh_from_db()
            assert chunk.attempts >= 2  # the killed attempt, then the one that finished it
            (other,) = (process for process in workers.processes if process is not killed)
            assert other.poll() is None  # the job was finished by the worker left running
            # What the other worker logged during this test (the kept worker's log goes back to earlier tests).
            taken_over = workers.log(other).read_bytes()[sizes[other.pid] :].decode()
            assert "their runners are gone; queued again" in taken_over, workers.logs()
        finally:
            workers.stop()  # a worker left killed, and a second one: the next test starts afresh


class ThrowawayRedis:
    """A Redis server of our own that keeps nothing (`--save "" --appendonly no`): killed, it comes back empty."""

    def __init__(self, tmp_path, port: int):
        self.tmp_path, self.port = tmp_path, port
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=self.tmp_path,
            stdout=(self.tmp_path / "redis.log").open("a"),
            stderr=subprocess.STDOUT,
        )
        client = redis.Redis.from_url(self.url)
        for _ in range(100):
            try:
                client.ping()
                return
            except redis.exceptions.ConnectionError:
                time.sleep(0.1)
        pytest.fail("the throwaway Redis did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def throwaway_redis(tmp_path):
    server = ThrowawayRedis(tmp_path, _free_port())
    server.start()
    yield server
    server.kill()


class TestBrokerLoss:
    def test_a_broker_restarted_empty_mid_job_gets_its_chunks_again_and_the_job_ends_exact(
        self, smollm2, demo_ruff, shared_database, no_kept_worker, throwaway_redis, tmp_path, monkeypatch
    ):
        """docs/domain.md, 'Crash recovery': the sweeper sends again chunks that were sent but never claimed."""
        monkeypatch.setattr(sys.modules[__name__], "BROKER", throwaway_redis.url)
        workers = Workers(tmp_path)
        monkeypatch.setenv("CONCORD_CHUNK_UNCLAIMED_SECONDS", "5")
        try:
            workers.start()
            job = _recovery_job(workers)
            _wait(_chunk_mid_run, seconds=300, what="no chunk was mid-run", workers=workers)
            throwaway_redis.kill()  # every queued message is gone with it
            # Back at once, empty: how long it was away does not matter, and a broker still away when the running
            # chunk ends would only keep the worker in its reconnection back-off (2 s, then 4 s, ...) for longer.
            throwaway_redis.start()
            _wait_ended(job, what="the job did not end after the broker came back empty", workers=workers)
            _assert_exact(job)
            assert "sent but never claimed" in (tmp_path / "worker-0.log").read_text(), workers.logs()
        finally:
            workers.stop()


class TestImportRecovery:
    def test_an_import_of_a_killed_worker_is_taken_over_by_a_new_one_and_ends_with_exact_counts(
        self, researcher, workers, tmp_path
    ):
        # A browser import whose default-queue worker was killed (kill -9) while it was writing stayed
        # "writing" until the broker's visibility timeout (an hour). Now its lease runs out and a sweeper sends it.
        from django.core.files.uploadedfile import SimpleUploadedFile

        from annotation.models import PoolItem
        from annotation.services.imports import jobs
        from generation.jobs import services
        from generation.models import Job, JobChunk
        from tests.factories import PoolFactory
        from tests.import_jobs import pool_import

        template = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it at the market."
        pre = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "
        rows = 6000
        body = "template,random_pre_gen,correct,pronoun,model\n" + "".join(
            f'"{template}","{pre}Xe smiled, row {n}, and walked to the market.",1.0,xe,m\n' for n in range(rows)
        )
        pool = PoolFactory(name="killed-import")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(services, "_submitted_dispatch", lambda **kwargs: None)  # queued on the test broker below
            job = jobs.import_job_create(
                pool=pool, kind="study", files=[SimpleUploadedFile("big.csv", body.encode())], created_by=researcher
            )
        first = workers.start()
        publish = (
            "import django; django.setup(); from generation.jobs.runner import job_dispatch; "
            f"job_dispatch(job_id={job.pk})"
        )
        result = subprocess.run(
            [sys.executable, "-c", publish],
            cwd=REPO,
            env={**_environment(), "DJANGO_SETTINGS_MODULE": "config.settings"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        _wait(
            lambda: (
                Job.objects.filter(pk=job.pk, status="running", phase="writing").exists()
                and PoolItem.objects.filter(pool=pool).exists()
            ),
            seconds=300,
            what="the import never got to writing",
            workers=workers,
        )
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = time.monotonic()
        assert JobChunk.objects.get(job_id=job.pk).lease_owner  # killed mid-import, its lease left behind

        workers.start()
        _wait(
            lambda: Job.objects.get(pk=job.pk).status == "done",
            seconds=300,  # a start, a sweep (every 2.7 s here), and the rest of the import
            what="the import did not finish after its worker was killed",
            workers=workers,
        )
        print(f"finished {time.monotonic() - killed_at:.0f} s after the kill")
        job = pool_import(job.pk)
        assert (job.rows_read, job.rows_written) == (rows, rows)
        assert PoolItem.objects.filter(pool=pool).count() == rows
        assert "its runner is gone; queued again" in (workers.tmp_path / "worker-1.log").read_text()
