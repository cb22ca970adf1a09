"""Upload runs: files uploaded in a request, stored in the database and imported in the background under a lease, as
a pool's imports (annotation/services/imports/jobs.py) and a templates dataset's (generation/services/dataset_imports.py)
are. One `UploadRuns` names a kind's two models; the functions here do the rest for both:

- the request stores the files as ordered pieces (`upload_store`, PIECE_BYTES each, in the database rather than on a
  disk a worker on another machine may not share); the runner reads them back as a stream (`stored_file`,
  `stored_pieces`); they are deleted when the run ends;
- a runner claims a queued run with one UPDATE (`run_claim`: its lease, owner and expiry, as a generation chunk's in
  generation/jobs/leases.py), so two runners never both win; a heartbeat renews the lease while it works
  (`run_under_lease`), and `run_finish` ends it: its status, the first ERRORS_KEPT errors, the lease freed, the pieces
  deleted;
- when its runner dies the lease expires, and a worker's sweeper queues it again (`runs_requeue_stale`); `resume_jobs`
  and the embedded default's start-up resume those left unfinished (`runs_to_resume`, `runs_left_unfinished`);
- `run_cancel` stops a queued or running one for good: its runner loses its lease and stops at its next step.

Each kind keeps its statuses in its own model: queued, then its first running status (reading or checking), writing,
and done, failed or cancelled (as a job).
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, BinaryIO, Generic, TypeVar

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models import Q
from django.utils import timezone

from common.audit import audit_record
from common.errors import ServiceError
from generation.jobs.leases import Heartbeat, chunk_lease_stale, lease_owner_gone, lease_owner_new, lease_seconds
from generation.textfiles import InputErrors

logger = logging.getLogger(__name__)

PIECE_BYTES = 1 << 20  # the size of the stored pieces of an upload
ERRORS_KEPT = 200  # of a failed run's FILE:LINE messages, the first ones are kept on its row
QUEUED, WRITING, DONE, FAILED, CANCELLED = "queued", "writing", "done", "failed", "cancelled"
Run = TypeVar("Run", bound=models.Model)


@dataclass(frozen=True)
class UploadRuns(Generic[Run]):
    """One kind of upload run. `model`'s rows have the columns status, file_names, bytes_total, errors, error_count,
    created_at, started_at, finished_at, lease_owner and lease_expires_at; `pieces`' rows are a run's files: job (the
    run), `file_field` (which file), seq and data."""

    model: type[Run]
    pieces: type[models.Model]
    file_field: str  # "file_index" or "key"
    checking: str  # the status a claimed run starts in, before "writing": "reading" or "checking"
    label: str  # how messages name one: "import job", "dataset import"
    thread_prefix: str  # the name of a run's thread without a broker (tests/conftest.py lets concord-job-* finish)
    failed: type[InputErrors]  # the problems with the files that fail a run with their FILE:LINE messages
    stopped: str  # how any other failure's message starts
    unreachable: str  # what a failure to reach the task queue tells the uploader to do
    claim_resets: Mapping[str, Any] = field(default_factory=dict)  # columns an earlier try may have counted

    @property
    def running(self) -> tuple[str, str]:
        return (self.checking, WRITING)

    @property
    def unfinished(self) -> tuple[str, str, str]:
        return (QUEUED, self.checking, WRITING)

    @property
    def objects(self) -> models.Manager[Any]:
        """The run model's rows (typed loosely: each kind's model has the columns above)."""
        return self.model._default_manager

    def rows(self, run_id: int) -> models.QuerySet[Any]:
        return self.objects.filter(pk=run_id)

    def pieces_of(self, run_id: int) -> models.QuerySet[Any]:
        return self.pieces._default_manager.filter(job_id=run_id)


class UploadRunStateError(ServiceError, ValueError):
    """The run is not in a state that allows this (a cancel of one that ended)."""


class LeaseLost(Exception):
    """The runner no longer holds the run (it was cancelled, or taken over once the lease had expired): it stops,
    and what it had not committed is rolled back."""


def _cut(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The upload's bytes again, in pieces of PIECE_BYTES (Django hands them over in its own sizes)."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= PIECE_BYTES:
            yield bytes(buffer[:PIECE_BYTES])
            del buffer[:PIECE_BYTES]
    if buffer:
        yield bytes(buffer)


def upload_store(
    runs: UploadRuns, *, run: Any, files: Mapping[Any, Iterable[bytes]], too_large: type[Exception]
) -> int:
    """Store each file's bytes as the run's pieces, in order, and its size in all (`bytes_total`), which it returns.
    Over MAX_UPLOAD_MB in all: `too_large` is raised (the caller's transaction then writes nothing)."""
    limit = settings.CONCORD_MAX_UPLOAD_MB * 1024 * 1024
    total = 0
    for file, chunks in files.items():
        for seq, piece in enumerate(_cut(chunks)):
            total += len(piece)
            if total > limit:
                raise too_large(f"the files are larger than MAX_UPLOAD_MB ({settings.CONCORD_MAX_UPLOAD_MB} MB) in all")
            runs.pieces._default_manager.create(job=run, seq=seq, data=piece, **{runs.file_field: file})
    runs.rows(run.pk).update(bytes_total=total)
    run.bytes_total = total
    return total


def stored_pieces(runs: UploadRuns, run_id: int, file: Any) -> Iterator[bytes]:
    """One stored file's pieces in order, each read when it is reached."""
    pieces = runs.pieces_of(run_id)
    ids = list(pieces.filter(**{runs.file_field: file}).order_by("seq").values_list("pk", flat=True))
    for pk in ids:
        data = pieces.filter(pk=pk).values_list("data", flat=True).first()
        if data is None:  # deleted as the run ended under its runner (a cancel)
            raise LeaseLost
        yield bytes(data)


class _StoredFile(io.RawIOBase):
    def __init__(self, pieces: Iterator[bytes]):
        self._pieces = pieces
        self._piece = b""
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._offset >= len(self._piece):
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._piece, self._offset = piece, 0
        count = min(len(buffer), len(self._piece) - self._offset)
        buffer[:count] = self._piece[self._offset : self._offset + count]
        self._offset += count
        return count


def stored_file(runs: UploadRuns, run_id: int, file: Any) -> BinaryIO:
    """One stored file, read back as a stream."""
    return io.BufferedReader(_StoredFile(stored_pieces(runs, run_id, file)), buffer_size=PIECE_BYTES)


def run_claim(runs: UploadRuns, *, run_id: int, owner: str, restart: bool) -> bool:
    """Take the run with a lease: a queued one; with `restart`, also one left running whose lease is free, expired,
    or held by a process gone from this host. One UPDATE each, so two runners never both win."""
    now = timezone.now()
    fields = {
        "status": runs.checking,
        "started_at": now,
        "finished_at": None,
        **runs.claim_resets,
        "lease_owner": owner,
        "lease_expires_at": now + timedelta(seconds=lease_seconds()),
    }
    rows = runs.rows(run_id)
    if rows.filter(status=QUEUED).update(**fields):
        return True
    if not restart:
        return False
    running = rows.filter(status__in=runs.running)
    if running.filter(Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)).update(
        **fields
    ):
        return True
    holder = running.values_list("lease_owner", flat=True).first()
    if holder and lease_owner_gone(holder):
        logger.info("%s %s: its runner %s is gone; taking it over", runs.label, run_id, holder)
        return bool(running.filter(lease_owner=holder).update(**fields))
    return False


def run_finish(
    runs: UploadRuns, *, run_id: int, status: str, owner: str | None = None, errors: list[str] | None = None, **values
) -> bool:
    """End an unfinished run (and free its lease), deleting its stored files; with `owner`, only while that runner
    holds it. Whether it ended it."""
    errors = errors or []
    with transaction.atomic():
        rows = runs.rows(run_id).filter(status__in=runs.unfinished)
        if owner is not None:
            rows = rows.filter(lease_owner=owner)
        ended = rows.update(
            status=status,
            errors=errors[:ERRORS_KEPT],
            error_count=len(errors),
            finished_at=timezone.now(),
            lease_owner="",
            lease_expires_at=None,
            **values,
        )
        if ended:
            runs.pieces_of(run_id).delete()
    return bool(ended)


def run_cancel(runs: UploadRuns, *, run_id: int, user=None, event: str) -> None:
    """Stop a queued or running run for good, its stored files deleted. Its runner loses its lease and stops at its
    next step; what it had not committed is rolled back. A run whose last write is committing (`RunLease.seal`) has
    ended: it is not cancelled."""
    with transaction.atomic():
        run = runs.rows(run_id).select_for_update().first()
        if run is None:
            raise UploadRunStateError(f"no {runs.label} {run_id}")
        status = run.status
        cancelled = (
            runs.rows(run_id)
            .filter(status__in=runs.unfinished, finished_at__isnull=True)
            .update(status=CANCELLED, finished_at=timezone.now(), lease_owner="", lease_expires_at=None)
        )
        if not cancelled:
            raise UploadRunStateError(
                f"{runs.label} {run_id} is {status if status in runs.unfinished else 'ending'}; "
                "only a queued or running one can be cancelled"
            )
        runs.pieces_of(run_id).delete()
        audit_record(event=event, obj=run, actor=user, changes={"status": [status, CANCELLED]})


class RunLease:
    """The lease a runner holds on its run while it works; a heartbeat renews it (generation/jobs/leases.py)."""

    def __init__(self, runs: UploadRuns, *, run_id: int, owner: str, beat: Heartbeat):
        self.ours = runs.rows(run_id).filter(lease_owner=owner)
        self._beat = beat

    def check(self) -> None:
        """Raise LeaseLost once the heartbeat found the lease gone (cancelled, or taken over)."""
        if self._beat.lost.is_set():
            raise LeaseLost

    def confirm(self) -> None:
        """Ask the run's row (one query) rather than wait for the heartbeat: LeaseLost when this runner no longer
        holds it."""
        if not self.ours.exists():
            raise LeaseLost

    def update(self, **values) -> None:
        """Write the run's row while this runner holds it; LeaseLost when it no longer does."""
        if not self.ours.update(**values):
            raise LeaseLost

    def seal(self) -> None:
        """Inside the transaction of a run's last write, before it commits: mark the run ended, so that a cancel
        waits for the commit and then finds it ended; LeaseLost (the write rolled back) when it was cancelled or
        taken over first."""
        self.update(finished_at=timezone.now())


def run_under_lease(
    runs: UploadRuns[Run], *, run_id: int, restart: bool, work: Callable[[Run, RunLease], dict[str, Any]]
) -> Run | None:
    """Claim the run and do its `work(run, lease)` under a lease renewed by a heartbeat; the values `work` returns
    are written as the run ends, done. A run that another live runner holds, or that has ended, is left alone (a
    task delivered twice); `restart` also takes one left running by a runner that is gone."""
    owner = lease_owner_new()
    if not run_claim(runs, run_id=run_id, owner=owner, restart=restart):
        return None
    run = runs.model._default_manager.get(pk=run_id)
    with Heartbeat(chunk_id=run_id, owner=owner, model=runs.model) as beat:
        try:
            values = work(run, RunLease(runs, run_id=run_id, owner=owner, beat=beat))
        except LeaseLost:
            logger.warning("%s %s: cancelled, or another runner took it over; this one stops", runs.label, run_id)
        except runs.failed as exc:
            run_finish(runs, run_id=run_id, owner=owner, status=FAILED, errors=exc.errors)
        except Exception as exc:
            logger.exception("%s %s failed", runs.label, run_id)
            errors = [f"{runs.stopped}: {type(exc).__name__}: {exc}"]
            run_finish(runs, run_id=run_id, owner=owner, status=FAILED, errors=errors)
        else:
            run_finish(runs, run_id=run_id, owner=owner, status=DONE, **values)
    return runs.model._default_manager.get(pk=run_id)


def run_dispatch(
    runs: UploadRuns, *, run_id: int, restart: bool, run: Callable[..., object], send: Callable[[], object]
) -> None:
    """Hand a committed run to whoever runs it: `send` it to a Celery worker, or `run` it in a thread here without a
    broker. When the broker cannot be reached, a new run fails saying so (rather than stay queued for ever); a
    restarted one keeps its files, and the next sweep or `resume_jobs` sends it again."""
    if settings.CELERY_TASK_ALWAYS_EAGER:

        def in_thread() -> None:
            try:
                run(job_id=run_id, restart=restart)
            finally:
                connections.close_all()

        threading.Thread(target=in_thread, name=f"{runs.thread_prefix}{run_id}", daemon=True).start()
        return
    try:
        send()
    except Exception as exc:
        logger.error("%s %s: publishing failed: %s: %s", runs.label, run_id, type(exc).__name__, exc)
        if not restart:
            errors = [f"the task queue could not be reached ({exc}); {runs.unreachable}"]
            run_finish(runs, run_id=run_id, status=FAILED, errors=errors)


def run_stale(run: Any, *, now: datetime) -> bool:
    """A running run whose runner is gone: its lease expired or its owner is a dead process of this host; or sent
    again by a sweeper (no owner) and still unclaimed when that wait ran out."""
    if not run.lease_owner:
        return run.lease_expires_at is None or run.lease_expires_at < now
    return chunk_lease_stale(run, now=now)  # the same lease columns as a chunk's


def runs_requeue_stale(runs: UploadRuns, *, dispatch: Callable[..., None]) -> list[int]:
    """Queue again the runs left running by a runner that is gone (the workers' sweeper calls this). Each stale lease
    is freed by one UPDATE, so two sweepers never send the same run twice; the freed lease waits
    `lease_seconds() * 4` for the new runner's claim before it counts as stale again (the message was lost)."""
    now = timezone.now()
    taken = []
    for run in runs.objects.filter(status__in=runs.running).only("pk", "status", "lease_owner", "lease_expires_at"):
        if not run_stale(run, now=now):
            continue
        freed = runs.objects.filter(
            pk=run.pk, status=run.status, lease_owner=run.lease_owner, lease_expires_at=run.lease_expires_at
        ).update(lease_owner="", lease_expires_at=now + timedelta(seconds=lease_seconds() * 4))
        if freed:
            taken.append(run.pk)
    for run_id in taken:
        logger.warning("%s %s: its runner is gone; queued again", runs.label, run_id)
        dispatch(job_id=run_id, restart=True)
    return taken


def runs_to_resume(runs: UploadRuns) -> list[int]:
    """`resume_jobs`: the runs left queued, or running by a runner that is gone, oldest first. One whose runner is
    alive is left to it."""
    now = timezone.now()
    unfinished = runs.objects.filter(status__in=runs.unfinished).order_by("created_at", "pk")
    return [run.pk for run in unfinished if run.status == QUEUED or run_stale(run, now=now)]


def runs_left_unfinished(runs: UploadRuns, *, started_before: datetime, dispatch: Callable[..., None]) -> list[int]:
    """On the embedded default, run again the runs an earlier process left unfinished (each in a thread of its own,
    as a new one runs); their ids. Only runs created before this server started: none of its own is among them."""
    run_ids = list(
        runs.objects.filter(status__in=runs.unfinished, created_at__lt=started_before)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for run_id in run_ids:
        logger.warning("restarting %s %s, left unfinished by an earlier process", runs.label, run_id)
        dispatch(job_id=run_id, restart=True)
    return run_ids
