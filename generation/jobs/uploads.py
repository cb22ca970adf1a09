"""Upload kinds: jobs that import files a request stored (a pool's import, annotation/jobs.py; a templates dataset's,
generation/jobs/dataset_import_kind.py), with every job's chunks, lease, heartbeat, cancel, sweep and resume.

Such a job is one unit in one chunk (`job_submit`): its input is the stored files (generation/jobs/inputs.py), its
kind's own row (`model`, keyed by the job) keeps its arguments and outcome (`errors`, `error_count`, and what it
wrote). Its chunk runs the import with a `stop` checked at each step; the job's `phase` says what it is doing (its
kind's words: reading, checking, writing). Problems with the files (`InputErrors`: FILE:LINE messages) and any other
failure fail it for good (`failure_final`: nothing resumes it, its input is deleted); a cancel or a lost lease stops
it at its next step, what it had not committed rolled back; a runner that is gone leaves its lease to expire, and the
sweeper or `resume_jobs` runs the chunk again from the stored files (the import is idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import models

from generation.jobs.inputs import JobInputGone
from generation.jobs.kinds import JobKind
from generation.jobs.progress import JobStopped, job_rows_write
from generation.models import Job, JobChunk, JobStatus
from generation.textfiles import InputErrors

logger = logging.getLogger(__name__)

ERRORS_KEPT = 200  # of a failed import's FILE:LINE messages, the first ones are kept on its row


class UploadKind(JobKind[Any]):
    """The switches of an upload's kind (generation/jobs/kinds.py) and the run of its one chunk. A subclass sets
    `model` (its row, `job` its primary key, with `errors` and `error_count`), `failed` (the input errors it
    reports), `stopped` (how any other failure's message starts) and `work(job, row, stop)`, which imports and
    returns the values written on its row as it ends."""

    needs_model = False
    listed = False
    runs_alone = False
    failure_final = True
    unit_label = "uploads"
    item_label = "uploads imported"
    model: type[models.Model]
    failed: type[InputErrors] = InputErrors
    stopped = "the import stopped"
    unreachable = "try again"  # what a failure to reach the task queue tells the uploader to do

    def work(self, *, job: Job, row: Any, stop: Callable[[], bool]) -> dict[str, Any]:
        raise NotImplementedError

    def row(self, *, job_id: int) -> Any:
        return self.model._default_manager.get(pk=job_id)

    def run_chunk(self, *, job: Job, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]) -> bool:
        rows = self.model._default_manager.filter(pk=job.pk)
        try:
            values = self.work(job=job, row=self.row(job_id=job.pk), stop=stop)
        except (JobStopped, JobInputGone):
            logger.warning("job %s: cancelled, or another runner took it over; this one stops", job.pk)
            return False
        except self.failed as exc:
            rows.update(errors=exc.errors[:ERRORS_KEPT], error_count=len(exc.errors))
            raise
        except Exception as exc:
            from generation.jobs.chunks import TRANSIENT_ERRORS  # the chunk runner retries these

            if not isinstance(exc, TRANSIENT_ERRORS):
                rows.update(errors=[f"{self.stopped}: {type(exc).__name__}: {exc}"], error_count=1)
            raise
        if not job_rows_write(
            job_id=job.pk, write=lambda: rows.update(written=True, errors=[], error_count=0, **values)
        ):
            return False  # cancelled as its last batch committed: its outcome is not written
        step_done()
        return True

    def units(self, *, params: Any) -> list[int]:
        return [0]

    def counts(self, *, job: Job) -> tuple[int, int]:
        written = self.model._default_manager.filter(pk=job.pk, written=True).exists()
        return (1, 1) if written else (0, 0)

    def status(self, *, job: Job) -> str:
        """What the import's pages and API call its state: queued, its phase while it runs, then done, failed or
        cancelled."""
        if job.status == JobStatus.RUNNING:
            return job.phase or self.first_phase
        return str(job.status)

    first_phase = "reading"

    def errors(self, *, job: Job, row: Any) -> tuple[list[str], int]:
        """The import's FILE:LINE messages; a failure outside the import (the broker out of reach) says itself."""
        if row.errors or job.status != JobStatus.FAILED:
            return list(row.errors), row.error_count
        from generation.jobs.runner import BROKER_DOWN

        if job.error.startswith(BROKER_DOWN):  # never sent: a failed upload is not resumed, so it is sent again
            return [f"the task queue could not be reached{job.error[len(BROKER_DOWN) :]}; {self.unreachable}"], 1
        last = (job.error.strip().splitlines() or [self.stopped])[-1]
        return [last], 1
