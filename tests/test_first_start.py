"""What the terminal shows on a first start and while people use the site: no false alarms, no tracebacks for 4xx."""

from __future__ import annotations

import io
import logging
import subprocess
from unittest import mock

import pytest
from django.utils import timezone

from config.log_filters import ClientErrorsWithoutTraceback
from generation.jobs import runner
from generation.models import Job, JobStatus
from tests.conftest import REPO
from tests.factories import GenerationJobFactory


@pytest.fixture
def console():
    """The console handler of the root logger (settings.LOGGING), writing into a string for the test."""
    handler = next(
        h for h in logging.getLogger().handlers if any(isinstance(f, ClientErrorsWithoutTraceback) for f in h.filters)
    )
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        yield stream
    finally:
        handler.setStream(previous)


def test_it_logs_a_refused_request_in_one_line_without_a_traceback(client, annotator, console):
    client.force_login(annotator)
    response = client.get("/pools/")
    assert response.status_code == 403
    logged = console.getvalue()
    assert "Forbidden" in logged and "/pools/" in logged
    assert "Traceback" not in logged and len(logged.strip().splitlines()) == 1


def test_it_keeps_the_traceback_of_a_server_error():
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), None)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    record.status_code = 500
    assert ClientErrorsWithoutTraceback().filter(record) and record.exc_info is not None


def _run_resume_here(target, *, name, **kwargs):
    target(**kwargs)


@pytest.mark.django_db
def test_a_first_start_does_not_call_a_queued_job_left_unfinished(caplog):
    never_started = GenerationJobFactory(status=JobStatus.QUEUED)
    interrupted = GenerationJobFactory(status=JobStatus.RUNNING, started_at=timezone.now())
    with (
        mock.patch.object(runner, "_job_thread_start", _run_resume_here),
        mock.patch.object(runner, "job_requeue_unfinished"),
        mock.patch.object(runner, "job_run") as job_run,
        mock.patch.object(runner.connections, "close_all"),
        caplog.at_level(logging.INFO, logger="generation.jobs.runner"),
    ):
        runner._resume_thread_start()
    assert [call.kwargs["job_id"] for call in job_run.call_args_list] == [never_started.pk, interrupted.pk]
    messages = {record.getMessage(): record.levelno for record in caplog.records}
    assert messages == {
        f"starting generation job {never_started.pk}, queued before the server started": logging.INFO,
        f"resuming generation job {interrupted.pk}, left unfinished by an earlier process": logging.WARNING,
    }
    assert Job.objects.count() == 2


def test_setup_shows_pips_progress_on_the_big_installs_and_stays_idempotent():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    installs = [line for line in setup.splitlines() if "pip install" in line]
    big = [line for line in installs if "torch==" in line or "requirements-dev.txt" in line]
    assert len(big) == 2 and not any("--quiet" in line or " -q" in line for line in big), big
    assert 'if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]' in setup  # installs only when the requirements change


def test_run_sh_takes_new_passwords_and_refuses_unknown_options():
    run = (REPO / "scripts" / "run.sh").read_text()
    assert "--new-passwords) demo_options+=(--new-passwords)" in run
    refused = subprocess.run(
        ["bash", "scripts/run.sh", "--bogus"], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 2 and "--new-passwords" in refused.stderr
    usage = subprocess.run(["bash", "scripts/run.sh", "--help"], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert usage.returncode == 0 and "--new-passwords" in usage.stdout
