"""Reading a whole generations file: load it (a path or an upload), check its header, walk its records and key each
good row by its content (docs/domain.md, 'The annotation pool')."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from annotation.models import GOLD, TRAINING
from annotation.services.imports.rows import GENERATION_COLUMNS, REQUIRED_COLUMNS, Header, Row, row_parse
from generation.textfiles import UnreadableFile, decode_utf8


@dataclass(frozen=True)
class Upload:
    """A file handed over in memory (the pool page's upload): its name for messages, and its bytes."""

    name: str
    content: bytes


def _load(path: Path | Upload, errors: list[str]) -> tuple[str, bytes, str] | None:
    """(name, bytes, text) of one file, or None with the reason in `errors`."""
    if isinstance(path, Upload):
        name, raw = path.name, path.content
    else:
        name = str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            errors.append(f"{name}: cannot be read ({exc.strerror or exc})")
            return None
    try:
        return name, raw, decode_utf8(raw, name=name)
    except UnreadableFile as exc:
        errors.append(str(exc))
        return None


def _header(reader, name: str, kind: str, errors: list[str]) -> Header | None:
    try:
        header = next(reader)
    except StopIteration:
        errors.append(f"{name}:1: the file is empty")
        return None
    except csv.Error as exc:
        errors.append(f"{name}:1: not a CSV file ({exc})")
        return None
    header = [column.strip() for column in header]
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    generation_columns = [column for column in GENERATION_COLUMNS if column in header]
    if not generation_columns:
        missing.append("random_pre_gen or random_post_gen")
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


def file_rows(source: Path | Upload, *, kind: str, labels: list[str], errors: list[str]) -> list[Row]:
    """Every good row of one file, keyed by its content; the problems of the bad ones go to `errors`."""
    loaded = _load(source, errors)
    if loaded is None:
        return []
    name, raw, text = loaded
    reader = csv.reader(io.StringIO(text, newline=""))
    header = _header(reader, name, kind, errors)
    if header is None:
        return []
    file_hash = hashlib.sha256(raw).hexdigest()
    occurrences: Counter[str] = Counter()
    rows: list[Row] = []
    errors_before = len(errors)
    row_number = 0
    for line, record in _records(reader, name, errors):
        row_number += 1
        row = row_parse(record, header, name=name, line=line, kind=kind, labels=labels, errors=errors)
        if row is None:
            continue
        content = _content(row, kind)
        occurrences[content] += 1
        row.key = hashlib.sha256(f"{content}\n{occurrences[content]}".encode()).hexdigest()
        row.legacy_key = hashlib.sha256(f"{file_hash}:{row_number}".encode()).hexdigest()
        rows.append(row)
    if row_number == 0 and len(errors) == errors_before:
        errors.append(f"{name}:2: the file has a header but no rows")
    return rows
