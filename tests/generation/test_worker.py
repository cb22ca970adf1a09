"""End to end through a real Celery worker: Redis broker, Postgres, `generate --wait` polling the job row."""

import json
import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from generation.models import Generation, GenerationJob, JobStatus, ProbResult
from tests.conftest import REPO

BROKER = os.environ.get("CONCORD_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


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


@pytest.fixture
def worker(broker, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the worker process needs a database it can share (Postgres); set DATABASE_URL")
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "generation,default", "--pool", "solo"]
        + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
        cwd=REPO,
        env=_environment(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield tmp_path / "worker.log"
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


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
        job = GenerationJob.objects.get()
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
