"""Chunk leases: a chunk runs in one place at a time, and a chunk whose runner is gone is taken over within a minute.

A runner claims a chunk by writing its owner name and an expiry into the chunk row (one UPDATE, so two runners never
both win), and a heartbeat thread extends the expiry while the chunk runs. A lease is free again when it expires
(its runner was killed, lost its machine or its network) or, sooner, when its owner is a process of this host that no
longer exists (a web server killed and restarted). See docs/domain.md, 'Crash recovery'.

The owner name is `host:pid-namespace:pid:process token:run token`: the process token tells a restarted process
from an earlier one that had the same pid; the pid namespace keeps containers that share a host name from judging
each other's pids.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import F, Q
from django.utils import timezone

from generation.models import JobChunk

logger = logging.getLogger(__name__)

_process: tuple[int, str] = (0, "")


def lease_seconds() -> float:
    return float(settings.CONCORD_CHUNK_LEASE_SECONDS)


def heartbeat_seconds() -> float:
    return lease_seconds() / 3


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return "-"


def _process_token() -> str:
    """A random name for this process, new after a fork (a forked child is another runner)."""
    global _process
    if _process[0] != os.getpid():
        _process = (os.getpid(), uuid.uuid4().hex[:12])
    return _process[1]


def lease_owner_new() -> str:
    """A new owner name for one run of one chunk (its retries keep it)."""
    return f"{socket.gethostname()}:{_pid_namespace()}:{os.getpid()}:{_process_token()}:{uuid.uuid4().hex[:8]}"


def lease_owner_gone(owner: str) -> bool:
    """Whether the owner is a process of this host (and pid namespace) that no longer runs. Unknown: not gone."""
    parts = owner.split(":")
    if len(parts) != 5 or not parts[2].isdigit():
        return False
    host, namespace, pid, token = parts[0], parts[1], int(parts[2]), parts[3]
    if host != socket.gethostname() or namespace != _pid_namespace():
        return False
    if pid == os.getpid():
        return token != _process_token()  # this pid's earlier life
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # a live process of another user
    return False


def chunk_claim(*, chunk_id: int, owner: str) -> bool:
    """Take the chunk's lease when it is free, expired, already ours, or held by a process gone from this host.

    Counts an attempt. False when the chunk is finished or another live runner holds it.
    """
    now = timezone.now()
    fields = {
        "lease_owner": owner,
        "lease_expires_at": now + timedelta(seconds=lease_seconds()),
        "started_at": now,
        "attempts": F("attempts") + 1,
    }
    unfinished = JobChunk.objects.filter(pk=chunk_id, finished_at__isnull=True)
    free = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now) | Q(lease_owner=owner)
    if unfinished.filter(free).update(**fields):
        return True
    holder = unfinished.values_list("lease_owner", flat=True).first()
    if holder and lease_owner_gone(holder):
        logger.info("chunk %s: its runner %s is gone; taking it over", chunk_id, holder)
        return bool(unfinished.filter(lease_owner=holder).update(**fields))
    return False


def chunk_release(*, chunk_id: int, owner: str) -> None:
    """Give the lease back without finishing (a failure, a cancel): the chunk can be claimed at once."""
    JobChunk.objects.filter(pk=chunk_id, lease_owner=owner).update(lease_owner="", lease_expires_at=None)


def chunk_finish(*, chunk_id: int) -> None:
    """Mark the chunk finished (all its rows are written) and free its lease, whoever holds it."""
    JobChunk.objects.filter(pk=chunk_id).update(finished_at=timezone.now(), lease_owner="", lease_expires_at=None)


def chunk_lease_stale(chunk: JobChunk, *, now=None) -> bool:
    """A lease whose runner is gone: expired, or its owner a dead process of this host."""
    if not chunk.lease_owner:
        return False
    now = now or timezone.now()
    expired = chunk.lease_expires_at is None or chunk.lease_expires_at < now
    return expired or lease_owner_gone(chunk.lease_owner)


def chunk_lease_live(chunk: JobChunk, *, now=None) -> bool:
    return bool(chunk.lease_owner) and not chunk_lease_stale(chunk, now=now)


def chunk_lease_break(*, chunk: JobChunk) -> bool:
    """Free a stale lease (only if nobody renewed or took it since it was read); True when this call freed it."""
    now = timezone.now()
    if not chunk_lease_stale(chunk, now=now):
        return False
    rows = JobChunk.objects.filter(pk=chunk.pk, lease_owner=chunk.lease_owner, finished_at__isnull=True)
    if chunk.lease_expires_at is not None:
        rows = rows.filter(lease_expires_at=chunk.lease_expires_at)
    return bool(rows.update(lease_owner="", lease_expires_at=None))


class Heartbeat:
    """Extends a chunk's lease from a thread of its own while the chunk runs (`with Heartbeat(...) as beat:`).

    `lost` is set when the lease was taken over by another runner (ours had expired): the chunk then stops at its
    next step. A database error in a beat is logged and the beat tried again; the lease expires only if the database
    stays out of reach for the whole lease.
    """

    def __init__(self, *, chunk_id: int, owner: str):
        self.chunk_id = chunk_id
        self.owner = owner
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"concord-lease-{chunk_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def beat(self) -> None:
        expires = timezone.now() + timedelta(seconds=lease_seconds())
        manager = JobChunk.objects
        rows = manager.filter(pk=self.chunk_id, lease_owner=self.owner, finished_at__isnull=True)
        if rows.update(lease_expires_at=expires):
            return
        # Lost only when the row says so (another owner, or finished); a row this connection cannot see yet (the
        # claim is still inside a transaction) is no reason to stop.
        holder = manager.filter(pk=self.chunk_id).values_list("lease_owner", "finished_at").first()
        if holder is not None and (holder[0] != self.owner or holder[1] is not None):
            self.lost.set()

    def _run(self) -> None:
        try:
            while not self._stop.wait(heartbeat_seconds()) and not self.lost.is_set():
                try:
                    self.beat()
                except DatabaseError as exc:
                    logger.warning("chunk %s: heartbeat failed (%s); trying again", self.chunk_id, exc)
                    connections_reset()
        finally:
            connections.close_all()  # this thread's connections only


def connections_reset() -> None:
    """Close this thread's database connections after a connection error, so the next query opens a fresh one.
    A connection inside a transaction is left alone (the transaction's owner must end it)."""
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            continue
        try:
            connection.close()
        except Exception:  # a dead connection may fail to close; it is dropped all the same
            connection.connection = None
