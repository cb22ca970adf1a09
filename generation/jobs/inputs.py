"""A job's input: the files an upload's job was given (a pool's import, a templates dataset's), stored with the job
as ordered pieces (`JobInput`, PIECE_BYTES each), in the database rather than on a disk a worker on another machine
may not share. The request stores them (`job_input_store`) in the transaction that creates the job; the kind's
chunk reads them back as a stream (`job_input_file`, `job_input_pieces`); they are deleted when the job ends (done,
cancelled, or failed for a kind whose failure is final: `job_input_delete`, called by the job machinery).

The layer of kinds and leases (generation/jobs/__init__.py): it imports only the models.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

from django.conf import settings

from generation.models import Job, JobInput

PIECE_BYTES = 1 << 20  # the size of the stored pieces of an upload


class JobInputGone(Exception):
    """A piece of the input was deleted under its reader: the job ended meanwhile (a cancel). The reader stops."""


def _cut(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The upload's bytes again, in pieces of `size` (Django hands them over in its own sizes)."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= size:
            yield bytes(buffer[:size])
            del buffer[:size]
    if buffer:
        yield bytes(buffer)


def job_input_store(*, job: Job, files: Mapping[str, Iterable[bytes]], too_large: type[Exception]) -> int:
    """Store each file's bytes as the job's input, in order, under its name; returns their size in all. Over
    MAX_UPLOAD_MB in all: `too_large` is raised (the caller's transaction then writes nothing)."""
    limit = settings.CONCORD_MAX_UPLOAD_MB * 1024 * 1024
    total = 0
    for name, chunks in files.items():
        for seq, piece in enumerate(_cut(chunks, PIECE_BYTES)):
            total += len(piece)
            if total > limit:
                raise too_large(f"the files are larger than MAX_UPLOAD_MB ({settings.CONCORD_MAX_UPLOAD_MB} MB) in all")
            JobInput.objects.create(job=job, name=str(name), seq=seq, data=piece)
    return total


def job_input_pieces(*, job_id: int, name: str) -> Iterator[bytes]:
    """One stored file's pieces in order, each read when it is reached; JobInputGone when the job ended meanwhile."""
    pieces = JobInput.objects.filter(job_id=job_id, name=str(name))
    ids = list(pieces.order_by("seq").values_list("pk", flat=True))
    for pk in ids:
        data = JobInput.objects.filter(pk=pk).values_list("data", flat=True).first()
        if data is None:
            raise JobInputGone(f"job {job_id}: its input {name} is gone (the job ended)")
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


def job_input_file(*, job_id: int, name: str) -> BinaryIO:
    """One stored file, read back as a stream."""
    return io.BufferedReader(_StoredFile(job_input_pieces(job_id=job_id, name=name)), buffer_size=PIECE_BYTES)


def job_input_delete(*, job_id: int) -> None:
    JobInput.objects.filter(job_id=job_id).delete()
