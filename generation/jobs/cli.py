"""Progress bars for the commands that run or follow a job (`generate`, `resume_jobs`, judging's `judge`): the bar
counts the job's items (generation: generations; judge: labels), on stderr, with the estimate of the time left."""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

from generation.jobs.progress import ACTIVE, job_progress_refresh
from generation.jobs.runner import job_run
from generation.models import Job

POLL_SECONDS = 2.0


def job_progress_bar(job: Job) -> tqdm:
    """A progress bar on stderr with elapsed time and the estimate of the time left (tqdm's `[elapsed<left]`);
    items already written (a resumed job) are its starting point, so the estimate counts new work only."""
    return tqdm(
        total=job.total_items,
        initial=job.done_items,
        unit="gen",
        desc=f"job {job.pk}",
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0,  # the services call back once per written step, a few times a second at most
    )


def job_run_with_bar(job: Job) -> Job:
    """Run the job here (the embedded default), the bar moving after every written step."""
    with job_progress_bar(job) as bar:

        def progress(current: Job) -> None:
            bar.update(current.done_items - bar.n)

        job = job_run(job_id=job.pk, progress=progress)
        bar.update(job.done_items - bar.n)
    return job


def job_follow_with_bar(job: Job) -> Job:
    """Follow a job that Celery workers run, polling its row."""
    with job_progress_bar(job) as bar:
        while True:
            job = job_progress_refresh(job_id=job.pk)
            bar.update(job.done_items - bar.n)
            if job.status not in ACTIVE:
                return job
            time.sleep(POLL_SECONDS)
