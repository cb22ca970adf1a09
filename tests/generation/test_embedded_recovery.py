"""The embedded default (SQLite, no broker, jobs in a thread of the web process): a server stopped mid-job (Ctrl-C,
then SIGKILL) leaves the job unfinished; the next start resumes it, and it ends with exact counts."""

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import DEMO, REPO
from tests.db_template import sqlite_migrated

pytestmark = [pytest.mark.slow, pytest.mark.embedded]

INSTANCES, SAMPLES = 4, 2  # the first instance per pronoun, one chunk each; 2 settings x 2 samples each
# One process migrates the new database, imports the demo templates and queues the job (three `manage.py` runs
# would start Django three times).
PREPARE = (
    "from django.core.management import call_command; "
    "from generation.jobs.services import job_create; "
    "call_command('migrate', verbosity=0); "
    f"call_command('import_dataset', 'ruff', {'--templates=' + str(DEMO / 'ruff_templates.tsv')!r}, '--name=demo-ruff'); "
    f"job = job_create(model='smollm2-135m', dataset='demo-ruff', per_pronoun=1, samples={SAMPLES}, "
    "max_new_tokens=4, seed=5, queue=False); print(job.pk)"
)


def _interrupt_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Embedded:
    def __init__(self, tmp_path):
        self.db = tmp_path / "concord.sqlite3"
        self.log = tmp_path / "server.log"
        self.env = {**os.environ, "DATABASE_URL": f"sqlite:///{self.db}", "HF_HUB_OFFLINE": "1", "DEBUG": "1"}
        self.env["OMP_NUM_THREADS"] = "1"  # one torch thread: faster than several fighting for a busy machine
        self.env["PYTHONFAULTHANDLER"] = "1"  # a server that hangs is sent SIGABRT: its threads' stacks go to the log
        self.env.pop("CELERY_BROKER_URL", None)
        self.server: subprocess.Popen | None = None

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def start(self) -> None:
        with self.log.open("a") as log:
            # Without the system checks: their URL check imports every view (and with them scipy and pandas) on each
            # of the three starts, and this test sends no request (tests/test_embedded_default.py starts the server
            # as the README does, checks included).
            self.server = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", f"127.0.0.1:{free_port()}", "--noreload", "--skip-checks"],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Ctrl-C as a terminal delivers it, even when the tests run as a background job of a shell without
                # job control: such a shell starts them with SIGINT ignored, which the server would inherit.
                preexec_fn=_interrupt_default,
            )

    def stop(self, sig: signal.Signals) -> None:
        self.server.send_signal(sig)
        try:
            self.server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.server.send_signal(signal.SIGABRT)
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
            pytest.fail(f"the server did not exit within 60 s of {sig.name}:\n{self.log.read_text()[-6000:]}")

    def job(self, job_id: int) -> dict:
        with sqlite3.connect(self.db, timeout=30) as db:
            status, done, total = db.execute(
                "SELECT status, done_items, total_items FROM generation_job WHERE id = ?",
                (job_id,),
            ).fetchone()
            rows = db.execute("SELECT count(*) FROM generation_generation WHERE job_id = ?", (job_id,)).fetchone()[0]
            probs = db.execute("SELECT count(*) FROM generation_probresult WHERE job_id = ?", (job_id,)).fetchone()[0]
        return {"status": status, "done": done, "total": total, "rows": rows, "probs": probs}

    def wait(self, job_id: int, condition, *, what: str, seconds: float = 480) -> dict:
        """Poll the job's row until `condition(state)`; about a minute per start on an idle 2-core machine, the
        deadline generous for a CI machine shared with others."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            state = self.job(job_id)
            if condition(state):
                return state
            if self.server.poll() is not None:
                pytest.fail(f"the server exited while waiting for {what}:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.3)
        pytest.fail(f"{what} within {seconds:.0f} s: {self.job(job_id)}\n{self.log.read_text()[-3000:]}")


@pytest.fixture
def embedded(tmp_path):
    server = Embedded(tmp_path)
    yield server
    if server.server is not None and server.server.poll() is None:
        server.server.kill()
        server.server.wait()


def test_a_job_left_by_a_stopped_server_is_resumed_when_it_starts_again(embedded):
    sqlite_migrated(embedded.db, embedded.env)  # PREPARE's migrate then finds nothing to do
    job_id = int(embedded.manage("shell", "-c", PREPARE).strip().splitlines()[-1])
    total = INSTANCES * 2 * SAMPLES

    embedded.start()  # a queued job, never started: the server's start picks it up
    first = embedded.wait(job_id, lambda s: s["rows"] > 0, what="the first start did not begin the job")
    embedded.stop(signal.SIGINT)  # Ctrl-C, with the job thread mid-step: the process ends without finalizing it
    after_ctrl_c = embedded.job(job_id)
    assert after_ctrl_c["status"] in ("queued", "running") and after_ctrl_c["rows"] < total, after_ctrl_c
    assert "mid-step; the job resumes on the next start" in embedded.log.read_text()

    embedded.start()
    embedded.wait(
        job_id, lambda s: s["rows"] > max(first["rows"], after_ctrl_c["rows"]), what="the restart did not resume"
    )
    embedded.stop(signal.SIGKILL)
    after_kill = embedded.job(job_id)
    assert after_kill["status"] == "running" and after_kill["rows"] < total, after_kill

    embedded.start()
    # The start resumes it: queued again for a moment, then running, then ended.
    ended = embedded.wait(
        job_id, lambda s: s["status"] not in ("queued", "running"), what="the job did not finish after the kill"
    )
    assert ended == {"status": "done", "done": total, "total": total, "rows": total, "probs": INSTANCES}
    assert "resuming generation job" in embedded.log.read_text()
