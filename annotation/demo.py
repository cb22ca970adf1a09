"""The embedded demo: what `load_demo` loads, and the pool it draws once the demo generation job has finished.

Two pools, so that an annotator can start at once and still sees a live model's output later:

- `demo`: generations we wrote by hand (demo/generations_*.csv, the released sample format), imported like any
  other file with the import service; ready as soon as `load_demo` returns.
- `demo-live`: drawn from the default model's own continuations of the demo templates. `load_demo` only queues
  that job; the web process runs it in the background (the embedded task runner resumes queued jobs when it starts)
  and, when the job finishes, the receiver below draws the pool and assigns it.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.models import Pool
from annotation.services import assignments_create, generations_import, pool_sample
from generation.models import DEFAULT_MODEL_NAME, GenerationJob, JobStatus

logger = logging.getLogger(__name__)

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
SHIPPED_POOL = "demo"
SHIPPED_FILES = ("generations_pre.csv", "generations_post.csv")
LIVE_POOL = "demo-live"
DATASETS = ("demo-misgendered", "demo-ruff")
ANNOTATORS = ["annotator1", "annotator2"]
SHIPPED_OVERLAP = 16  # of 48 items: each annotator gets 32
LIVE_OVERLAP = 20  # of 80 items


def shipped_pool_load() -> tuple[Pool, int, int]:
    """Import the hand-written generations into `demo` and assign them; (pool, new items, items for both annotators).

    Safe to run again: the import recognises its rows, and the assignment only hands out what is new. When the pool
    already holds as many items as the files have rows, the import is skipped: reading them again would load spaCy
    for nothing on every start.
    """
    pool = Pool.objects.filter(name=SHIPPED_POOL).first()
    if pool is not None and pool.items.count() >= _shipped_rows():
        return pool, 0, 0
    result = generations_import(paths=[DEMO_DIR / name for name in SHIPPED_FILES], pool_name=SHIPPED_POOL)
    overlap = 0
    if result.items:
        overlap = assignments_create(
            pool=result.pool, usernames=ANNOTATORS, overlap=SHIPPED_OVERLAP, seed=0
        ).overlap_items
    return result.pool, result.items, overlap


def _shipped_rows() -> int:
    rows = 0
    for name in SHIPPED_FILES:
        with open(DEMO_DIR / name, newline="", encoding="utf-8") as file:
            rows += sum(1 for _ in csv.DictReader(file))
    return rows


def live_jobs() -> list[GenerationJob]:
    """The newest default-model job over each demo dataset (there is one each once `load_demo` has queued them)."""
    jobs = []
    for name in DATASETS:
        job = GenerationJob.objects.filter(dataset__name=name, model__name=DEFAULT_MODEL_NAME).order_by("-pk").first()
        if job is not None:
            jobs.append(job)
    return jobs


def live_pool_draw() -> Pool | None:
    """Draw `demo-live` from the finished demo jobs and assign it; None while a job is unfinished or the pool exists.

    Called when any job finishes (and by `load_demo`, in case a job finished while nobody was listening).
    """
    jobs = live_jobs()
    if len(jobs) < len(DATASETS) or any(job.status != JobStatus.DONE for job in jobs):
        return None
    if Pool.objects.filter(name=LIVE_POOL).exists():
        return None
    try:
        with transaction.atomic():
            # One whole instance (all 5 samples) per cell: the demo jobs hold two instances per pronoun.
            result = pool_sample(name=LIVE_POOL, job_ids=[job.pk for job in jobs], instances=1, seed=0)
            assignments_create(pool=result.pool, usernames=ANNOTATORS, overlap=LIVE_OVERLAP, seed=0)
    except IntegrityError:
        return None  # drawn at the same moment by another process
    logger.info("demo pool %s drawn: %s items", LIVE_POOL, result.items)
    return result.pool


def on_job_finished(sender, job_id: int, **kwargs) -> None:
    """Receiver of generation's `job_finished`: once both demo jobs are done, the live demo pool appears."""
    if GenerationJob.objects.filter(pk=job_id, dataset__name__in=DATASETS).exists():
        live_pool_draw()
