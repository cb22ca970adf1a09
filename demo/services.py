"""The embedded demo: what `load_demo` loads, and the pool it draws once the demo generation job has finished.

Two pools, so that an annotator can start at once and still sees a live model's output later:

- `demo`: generations we wrote by hand (demo/generations_*.csv, the released sample format), imported like any
  other file with the import service; ready as soon as `load_demo` returns.
- `demo-live`: drawn from the default model's own continuations of the demo templates. `load_demo` only queues
  that job; the web process runs it in the background (the embedded task runner starts queued jobs when it starts)
  and, when the job finishes, the receiver below (connected in demo/apps.py) draws the pool and assigns it. The
  job's id is recorded when `load_demo` queues it (`LiveJob`): the pool follows that job, whatever other jobs
  admins queue (and cancel) on the demo datasets, and the pool pages say what it waits for (`live_pool_waiting`).

The demo logins are kept in `settings.DEMO_LOGINS_FILE` (mode 0600) so that a restart keeps every session and token.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER
from accounts.services import user_create_or_update
from annotation.models import Pool, PoolItem
from annotation.services import assignments_create, generations_import, pool_sample
from demo.models import LiveJob
from generation.datasets.labels import dataset_label
from generation.datasets.ruff import RUFF
from generation.jobs.services import job_record
from generation.models import (
    DEFAULT_MODEL_NAME,
    Dataset,
    Generation,
    Instance,
    Job,
    JobStatus,
    LanguageModel,
    Template,
)
from generation.parameters import JobParameters

logger = logging.getLogger(__name__)

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
SHIPPED_POOL = "demo"
SHIPPED_FILES = ("generations_pre.csv", "generations_post.csv")
LIVE_POOL = "demo-live"
DATASETS = ("demo-misgendered", "demo-ruff")
TEMPLATES_DATASET = "demo-templates"  # demo/templates_*.{csv,txt}: a templates dataset with ey and fae
ANNOTATORS = ["annotator1", "annotator2"]
SHIPPED_OVERLAP = 16  # of 48 items: each annotator gets 32
# The live job: the default model on demo-misgendered, one instance per pronoun, the pre-[MASK] setting, 5 samples:
# 20 continuations, one pool cell per pronoun: small enough to appear within minutes on a busy 2-core machine, where
# eight times as many had not finished after an hour (benchmarks/README.md, "First start"). Admins queue more on the demo datasets from the jobs page.
LIVE_DATASETS = ("demo-misgendered",)
LIVE_SETTINGS = ("pre",)
LIVE_PER_PRONOUN = 1
LIVE_OVERLAP = 10  # of 20 items: each annotator gets 15


DEMO_USERS = (("admin", ADMIN), ("researcher", RESEARCHER), ("annotator1", ANNOTATOR), ("annotator2", ANNOTATOR))


def demo_logins_ensure(*, new_passwords: bool = False, path: Path | None = None) -> dict[str, str]:
    """The demo users with their passwords, {username: password}, kept in `path` (default settings.DEMO_LOGINS_FILE).

    A password is made only for a user the file does not list yet, or for all of them with `new_passwords`. A user
    whose password already matches the file is left alone: setting it again would end their sessions and revoke their
    API tokens (accounts/passwords.py), which is what a restart of the embedded server must not do.
    """
    path = Path(path or settings.DEMO_LOGINS_FILE)
    stored = {} if new_passwords else _logins_read(path)
    user_model = get_user_model()
    logins: dict[str, str] = {}
    for username, role in DEMO_USERS:
        password = stored.get(username) or secrets.token_urlsafe(9)
        user = user_model.objects.filter(username=username).first()
        if user is None or not user.check_password(password) or not user.groups.filter(name=role).exists():
            user_create_or_update(username=username, role=role, password=password)
        logins[username] = password
    if logins != stored:
        _logins_write(path, logins)
    return logins


def _logins_read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(name): str(password) for name, password in data.items() if isinstance(password, str) and password}


def _logins_write(path: Path, logins: dict[str, str]) -> None:
    """Write the file readable by its owner only (0600), never world-readable even for a moment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an older file made with a wider mode
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(logins, file, indent=2)
        file.write("\n")


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


FEATURES_POOL = "demo-features"
FEATURES_FILES = {"training": "features_training.csv", "gold": "features_gold.csv", "study": "features_study.csv"}
FEATURES_PASS_MARK = 0.75  # 3 of the 4 training items right opens the rest of the pool
HAND_WRITTEN = "demo-hand-written"  # the model name of every text we wrote (the released format's `model` column)
DISTRACTOR_DATASET = "demo-ruff-distractors"
# RUFF with one distractor sentence (docs/domain.md, 'RUFF with distractors'): the baker (xe) is the target, the
# courier (she) the other person. Each continuation gives the annotator's referent flow something to settle: a
# pronoun for the target, one for the other person, and a `they` that could be either (unclear).
DISTRACTOR_CONTEXT = (
    "The baker's pronouns are xe/xem/xyr. The courier said that she would come back at noon. The baker announced that "
)
DISTRACTOR_CONTINUATIONS = [
    ("xe had sold out of bread, so she took the last loaf to the van.", "xe", True),
    ("she had sold out of bread before xe even opened the shop.", "she", False),
    ("they had sold out of bread, and xe closed early.", "they", False),
]


def features_pool_load() -> tuple[Pool, bool]:
    """The pool `demo-features`, which shows what the other demo pools do not: a qualification round (4 training
    items with their explanations, pass mark 3 of 4), gold items hidden among the study items, and RUFF items with a
    distractor sentence, where the annotator says whom each pronoun is for (target, other, unclear). Every text is
    ours (demo/features_*.csv and DISTRACTOR_CONTINUATIONS). (pool, whether it was made now); safe to run again."""
    pool = Pool.objects.filter(name=FEATURES_POOL).first()
    if pool is not None:
        return pool, False
    with transaction.atomic():
        for kind, name in FEATURES_FILES.items():
            generations_import(paths=[DEMO_DIR / name], pool_name=FEATURES_POOL, kind=kind)
        pool = Pool.objects.get(name=FEATURES_POOL)
        pool.pass_mark = FEATURES_PASS_MARK
        pool.save(update_fields=["pass_mark"])
        _distractor_items(pool=pool)
        assignments_create(pool=pool, usernames=ANNOTATORS, overlap=2, seed=0)
    return pool, True


def _distractor_items(*, pool: Pool) -> None:
    """Hand-written continuations of a RUFF instance with one distractor, as a finished job of `demo-hand-written`
    (the referent flow reads the item's instance through its generation), and their pool items."""
    dataset, _ = Dataset.objects.get_or_create(
        name=DISTRACTOR_DATASET, defaults={"kind": RUFF.kind, "source": "demo", "import_signature": "demo"}
    )
    template, _ = Template.objects.get_or_create(
        dataset=dataset,
        source_id="demo-distractor-1",
        defaults={
            "line": 1,
            "text": DISTRACTOR_CONTEXT + "$NOM_PRONOUN had sold out of bread.",
            "mask": "$NOM_PRONOUN",
            "form": "nom",
            "meta": {"occupation": "baker", "participant": "courier"},
        },
    )
    instance, _ = Instance.objects.get_or_create(
        template=template,
        pronoun="xe",
        draw=0,
        defaults={
            "dataset": dataset,
            "text": template.text,
            "correct_form": "xe",
            "ordinal": 0,
            "distractors": 1,
            "other_person": "courier",
            "confuse_pronoun": "she",
            "word": "baker",
        },
    )
    model, _ = LanguageModel.objects.get_or_create(
        name=HAND_WRITTEN,
        defaults={"source_kind": LanguageModel.SourceKind.NONE, "source": "demo/ (texts written by hand, not a model)"},
    )
    count = len(DISTRACTOR_CONTINUATIONS)
    job = job_record(
        params=JobParameters(model=model, dataset=dataset, pronouns=["xe"], settings=["pre"], samples=count),
        units=1,
        items=count,
    )
    for index, (text, first, correct) in enumerate(DISTRACTOR_CONTINUATIONS):
        generation = Generation.objects.create(
            job=job,
            instance=instance,
            setting="pre",
            sample_index=index,
            context=DISTRACTOR_CONTEXT,
            continuation=text,
            heuristic_correct=correct,
            first_pronoun=first,
            first_pronoun_offset=0,
        )
        PoolItem.objects.create(
            pool=pool,
            generation=generation,
            model_name=HAND_WRITTEN,
            dataset=dataset_label(dataset),
            setting="pre",
            pronoun="xe",
            sample_index=index,
            template=instance.text,
            context=DISTRACTOR_CONTEXT,
            continuation=text,
            heuristic_correct=correct,
            first_pronoun=first,
        )
    pool.jobs.add(job)


def live_jobs() -> list[Job]:
    """The demo's own job over each live demo dataset, as `load_demo` recorded it (one each once it has queued them)."""
    recorded = {
        row.dataset_name: row.job for row in LiveJob.objects.select_related("job", "job__generation_run__dataset")
    }
    return [recorded[name] for name in LIVE_DATASETS if name in recorded]


def live_job_record(*, job: Job) -> Job:
    """Record `job` as the demo's own job over its dataset (the one `demo-live` is drawn from)."""
    assert job.dataset is not None  # a generation job over a live demo dataset
    LiveJob.objects.update_or_create(dataset_name=job.dataset.name, defaults={"job": job})
    return job


def live_job_adopt(*, dataset_name: str) -> Job | None:
    """A demo installed before jobs were recorded: its own job is the first default-model job that `load_demo`
    queued over the dataset (one instance per pronoun, seed 0). Recorded and returned; None when there is none."""
    job = (
        Job.objects.filter(
            generation_run__dataset__name=dataset_name,
            model__name=DEFAULT_MODEL_NAME,
            generation_run__per_pronoun=LIVE_PER_PRONOUN,
            generation_run__seed=0,
        )
        .order_by("pk")
        .first()
    )
    return None if job is None else live_job_record(job=job)


WAITING: dict[str, str] = {
    JobStatus.QUEUED: "queued: it starts when the server's job runner is free",
    JobStatus.RUNNING: "running",
    JobStatus.FAILED: "failed: an admin can resume it from its page",
    JobStatus.CANCELLED: "cancelled: the pool will not appear",
}


def live_pool_waiting() -> dict | None:
    """What the pool `demo-live` waits for, for the pool pages: {"pool", "jobs": [{"id", "status", "done", "total",
    "text"}]}; None once the pool exists, or when the demo queued no job (`--no-generate`)."""
    if Pool.objects.filter(name=LIVE_POOL).exists():
        return None
    jobs = live_jobs()
    if not jobs:
        return None
    return {
        "pool": LIVE_POOL,
        "jobs": [
            {
                "id": job.pk,
                "status": job.status,
                "done": job.done_items,
                "total": job.total_items,
                "text": WAITING.get(job.status, str(job.status)),
            }
            for job in jobs
        ],
    }


def live_pool_draw() -> Pool | None:
    """Draw `demo-live` from the finished demo jobs and assign it; None while a job is unfinished or the pool exists.

    Called when any job finishes (and by `load_demo`, in case a job finished while nobody was listening).
    """
    jobs = live_jobs()
    if len(jobs) < len(LIVE_DATASETS) or any(job.status != JobStatus.DONE for job in jobs):
        return None
    if Pool.objects.filter(name=LIVE_POOL).exists():
        return None
    try:
        with transaction.atomic():
            # One whole instance (all 5 samples) per cell: the live job holds one instance per pronoun.
            result = pool_sample(name=LIVE_POOL, job_ids=[job.pk for job in jobs], instances=1, seed=0)
            if result.pool is None:  # a dry run only; this draw writes
                return None
            assignments_create(pool=result.pool, usernames=ANNOTATORS, overlap=LIVE_OVERLAP, seed=0)
    except IntegrityError:
        return None  # drawn at the same moment by another process
    logger.info("demo pool %s drawn: %s items", LIVE_POOL, result.items)
    return result.pool


def on_job_finished(sender, job_id: int, **kwargs) -> None:
    """Receiver of generation's `job_finished`: once the demo's own jobs are done, the live demo pool appears."""
    if LiveJob.objects.filter(job_id=job_id, dataset_name__in=LIVE_DATASETS).exists():
        live_pool_draw()
