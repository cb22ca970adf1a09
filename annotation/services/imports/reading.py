"""Reading a whole generations file: load it (a path or an upload), check its header, walk its records and key each
good row by its content (docs/domain.md, 'The annotation pool')."""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from annotation.models import GOLD, TRAINING
from annotation.services.imports.free_text import (
    REQUIRED,
    Datasets,
    free_content,
    free_row_parse,
    is_free_text_header,
    jsonl_records,
    missing_columns,
)
from annotation.services.imports.rows import GENERATION_COLUMNS, REQUIRED_COLUMNS, Header, Row, row_parse


@dataclass(frozen=True)
class Upload:
    """A file handed over in memory (a test, a small upload): its name for messages, and its bytes."""

    name: str
    content: bytes


@dataclass(frozen=True)
class Stored:
    """A file handed over as a way to open it for reading bytes (an import job's stored upload), and its name."""

    name: str
    open: Callable[[], BinaryIO]


Source = Path | Upload | Stored
READ_SIZE = 1 << 20  # bytes read at a time: files are streamed, never held whole


def source_name(source: Source) -> str:
    return str(source) if isinstance(source, Path) else source.name


def _open(source: Source) -> BinaryIO:
    if isinstance(source, Path):
        return source.open("rb")
    if isinstance(source, Upload):
        return io.BytesIO(source.content)
    return source.open()


def _fingerprint(source: Source, errors: list[str]) -> str | None:
    """The sha256 of the file's bytes, read once in pieces and checked to be UTF-8 on the way; None, with the reason
    in `errors`, when it cannot be read or is not UTF-8 (then its rows are not read at all)."""
    name = source_name(source)
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = lines = 0
    try:
        with _open(source) as handle:
            while True:
                piece = handle.read(READ_SIZE)
                try:
                    decoder.decode(piece, final=not piece)
                except UnicodeDecodeError as exc:
                    # The decoder may hold back up to 3 bytes of an unfinished character from the previous piece.
                    held = len(exc.object) - len(piece)
                    position = offset - held + exc.start
                    line = lines + exc.object[: exc.start].count(b"\n") + 1 - exc.object[:held].count(b"\n")
                    errors.append(
                        f"{name}:{line}: not UTF-8 (byte {exc.object[exc.start]:#04x} at offset {position}); "
                        "save the file as UTF-8"
                    )
                    return None
                if not piece:
                    return digest.hexdigest()
                digest.update(piece)
                offset += len(piece)
                lines += piece.count(b"\n")
    except OSError as exc:
        errors.append(f"{name}: cannot be read ({exc.strerror or exc})")
        return None


def _header(header: list[str], name: str, kind: str, errors: list[str]) -> Header | None:
    """The seed's released sample format's header."""
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    generation_columns = [column for column in GENERATION_COLUMNS if column in header]
    if not generation_columns:
        missing.append("random_pre_gen or random_post_gen")
        errors.append(
            f"{name}:1: missing column(s): {', '.join(missing)} (the released sample format), or "
            f"{', '.join(REQUIRED)} (free-text generations)"
        )
        return None
    if kind in (GOLD, TRAINING) and "gold_label" not in header:
        missing.append(f"gold_label (a {kind} file)")
    if kind == TRAINING and "explanation" not in header:
        missing.append("explanation (a training file)")
    if missing:
        errors.append(f"{name}:1: missing column(s): {', '.join(missing)}")
        return None
    if len(generation_columns) > 1:
        errors.append(f"{name}:1: both random_pre_gen and random_post_gen; a file holds one setting")
        return None
    column = generation_columns[0]
    return Header(
        generation_column=column,
        setting=GENERATION_COLUMNS[column],
        index={column: i for i, column in enumerate(header)},
        width=len(header),
    )


def _records(reader, name: str, errors: list[str]):
    """(line the record starts on, record) for every non-blank record; a malformed CSV stops the file."""
    while True:
        line = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            errors.append(f"{name}:{line}: malformed CSV ({exc})")
            return
        if any(cell.strip() for cell in record):
            yield line, record


def _content(row: Row, kind: str) -> str:
    fields = [kind, row.setting, row.model, row.pronoun, row.template, row.context + row.continuation, row.correct]
    fields += [row.gold_label, row.gold_extraneous, row.explanation]
    return json.dumps(fields, ensure_ascii=False)


def _keyed(rows: Iterator[Row], *, kind: str, file_hash: str) -> Iterator[Row]:
    """Each row with its key: its content and which occurrence of that content in the file it is."""
    occurrences: Counter[bytes] = Counter()
    for row_number, row in enumerate(rows, start=1):
        content = free_content(row, kind) if row.external_id else _content(row, kind)
        seen = hashlib.sha256(content.encode()).digest()  # counted by digest: the text itself is not kept
        occurrences[seen] += 1
        row.key = hashlib.sha256(f"{content}\n{occurrences[seen]}".encode()).hexdigest()
        if not row.external_id:  # only the seed's format was ever imported under the older identity
            row.legacy_key = hashlib.sha256(f"{file_hash}:{row_number}".encode()).hexdigest()
        yield row


def _seed_rows(reader, header: Header, *, name: str, kind: str, labels: list[str], errors: list[str]):
    for line, record in _records(reader, name, errors):
        row = row_parse(record, header, name=name, line=line, kind=kind, labels=labels, errors=errors)
        yield row


def _free_csv_rows(reader, columns: list[str], *, name: str, kind: str, labels, datasets, errors: list[str]):
    for line, record in _records(reader, name, errors):
        if len(record) != len(columns):
            errors.append(f"{name}:{line}: {len(record)} fields where the header has {len(columns)}")
            yield None
            continue
        cells = dict(zip(columns, record, strict=True))
        yield free_row_parse(cells, name=name, line=line, kind=kind, labels=labels, datasets=datasets, errors=errors)


def _free_jsonl_rows(lines, *, name: str, kind: str, labels, datasets, errors: list[str]):
    for line, cells in jsonl_records(lines, name=name, errors=errors):
        yield free_row_parse(cells, name=name, line=line, kind=kind, labels=labels, datasets=datasets, errors=errors)


def file_rows(
    source: Source, *, kind: str, labels: list[str], errors: list[str], datasets: Datasets | None = None
) -> Iterator[Row]:
    """Every good row of one file, keyed by its content, read as a stream (memory does not grow with the file); the
    problems of the bad ones go to `errors`. Reading it twice gives the same rows with the same keys.

    The format is told by the file itself: a first line that opens a JSON object is JSON Lines of free-text
    generations; a CSV header with `generation` is free-text generations (free_text.py); any other CSV is the seed's
    released sample format."""
    name = source_name(source)
    file_hash = _fingerprint(source, errors)
    if file_hash is None:
        return
    datasets = datasets or Datasets()
    with _open(source) as handle:
        # utf-8-sig drops a byte-order mark; newline="" leaves line endings inside quoted cells to the csv module.
        text = io.TextIOWrapper(handle, encoding="utf-8-sig", newline="")
        first = text.readline()
        lines = itertools.chain([first], text)
        errors_before = len(errors)
        rows: Iterator[Row | None]
        if first.lstrip().startswith("{"):
            rows = _free_jsonl_rows(
                enumerate(lines, start=1), name=name, kind=kind, labels=labels, datasets=datasets, errors=errors
            )
        else:
            reader = csv.reader(lines)
            try:
                columns = [column.strip() for column in next(reader)]
            except StopIteration:
                errors.append(f"{name}:1: the file is empty")
                return
            except csv.Error as exc:
                errors.append(f"{name}:1: not a CSV file ({exc})")
                return
            if is_free_text_header(columns):
                missing = missing_columns(columns)
                if missing:
                    errors.append(f"{name}:1: missing column(s): {', '.join(missing)}")
                    return
                rows = _free_csv_rows(
                    reader, columns, name=name, kind=kind, labels=labels, datasets=datasets, errors=errors
                )
            else:
                header = _header(columns, name, kind, errors)
                if header is None:
                    return
                rows = _seed_rows(reader, header, name=name, kind=kind, labels=labels, errors=errors)
        counted = 0

        def good() -> Iterator[Row]:
            nonlocal counted
            for row in rows:
                counted += 1
                if row is not None:
                    yield row

        yield from _keyed(good(), kind=kind, file_hash=file_hash)
        if counted == 0 and len(errors) == errors_before:
            errors.append(f"{name}:2: the file has a header but no rows")
