"""Reading a label file made elsewhere (docs/domain.md, "Bring your own study"): people's labels or a judge's, as a
CSV (or tab-separated) table or as JSON Lines (one object a line), told apart by the first character. Each record
keeps the line it starts on, so that every problem names `FILE:LINE`.

Also: the pool items a file names (by the item's own id from its generations file, else Concord's public id).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from annotation.models import Pool, PoolItem
from annotation.services.imports.reading import Source, Stored, Upload, source_name
from common.json_input import json_loads
from generation.textfiles import InputErrors, UnreadableFile, decode_utf8, nul_problems

__all__ = ["LabelImportError", "Source", "Stored", "Table", "Upload", "pool_items_named", "table_read"]


class LabelImportError(InputErrors):
    """One or more lines could not be used; nothing was written. The problems are listed in line order (a stable
    sort: one line's problems keep the order they were found in)."""

    heading = "import failed, nothing was written:\n"
    indent = "  "

    def __init__(self, errors: list[str]):
        super().__init__(sorted(errors, key=_line_of))


LINE = re.compile(r"^.*?:(\d+): ")


def _line_of(error: str) -> int:
    found = LINE.match(error)
    return int(found.group(1)) if found else 0


@dataclass(frozen=True)
class Table:
    name: str  # the file's own name, as every message gives it
    header: list[str]
    records: list[tuple[int, dict[str, str]]]  # (line, column -> cell text), blank records left out


def _bytes(source: Source) -> bytes:
    if isinstance(source, Path):
        try:
            return source.read_bytes()
        except OSError as exc:
            raise UnreadableFile(f"{source}: cannot be read ({exc.strerror or exc})") from None
    if isinstance(source, Upload):
        return source.content
    with source.open() as handle:
        return handle.read()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return value if isinstance(value, str) else json.dumps(value)


def _jsonl(name: str, text: str, errors: list[str]) -> Table | None:
    header: list[str] = []
    records: list[tuple[int, dict[str, str]]] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json_loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"{name}:{line}: not JSON ({exc.msg})")
            continue
        if not isinstance(value, dict):
            errors.append(f"{name}:{line}: a line must be one JSON object")
            continue
        for key in value:
            if key not in header:
                header.append(str(key))
        _record_kept(name, line, {str(key): _cell(cell).strip() for key, cell in value.items()}, records, errors)
    return Table(name, header, records)


def _csv(name: str, text: str, errors: list[str]) -> Table | None:
    first = text.split("\n", 1)[0]
    delimiter = "\t" if first.count("\t") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = [column.strip() for column in next(reader)]
    except StopIteration:
        errors.append(f"{name}:1: the file is empty")
        return None
    except csv.Error as exc:
        errors.append(f"{name}:1: not a CSV file ({exc})")
        return None
    if len(set(header)) != len(header):
        twice = sorted({column for column in header if header.count(column) > 1})
        errors.append(f"{name}:1: column(s) named twice: {', '.join(twice)}")
        return None
    records: list[tuple[int, dict[str, str]]] = []
    while True:
        line = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.append(f"{name}:{line}: malformed CSV ({exc})")
            break
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(header):  # a cell too few or too many: the row's cells would land in other columns
            errors.append(f"{name}:{line}: {len(record)} cells but the header has {len(header)} columns")
            continue
        _record_kept(
            name, line, {column: cell.strip() for column, cell in zip(header, record, strict=False)}, records, errors
        )
    return Table(name, header, records)


def _record_kept(name: str, line: int, record: dict[str, str], records: list, errors: list[str]) -> None:
    """Keep the record, unless a cell holds a NUL character (nothing else of it is worth reading: the database
    cannot store it)."""
    if problems := nul_problems(record, name=name, line=line):
        errors.extend(problems)
    else:
        records.append((line, record))


def table_read(source: Source, errors: list[str]) -> Table | None:
    """The file's header and records; None, with the reason in `errors`, when it cannot be read at all. A file whose
    first character is `{` is JSON Lines; anything else is CSV (tab-separated when its header has more tabs than
    commas)."""
    name = source_name(source)
    try:
        text = decode_utf8(_bytes(source), name=name)
    except UnreadableFile as exc:
        errors.append(str(exc))
        return None
    table = _jsonl(name, text, errors) if text.lstrip().startswith("{") else _csv(name, text, errors)
    if table is not None and not table.records and not errors:
        errors.append(f"{name}:2: the file has no rows")
    return table


def pool_items_named(pool: Pool, names: Iterable[str]) -> dict[str, tuple[int, str]]:
    """name -> (item id, kind) for the names that are items of the pool: an item's own id from its generations file
    (`external_id`), else its public id."""
    wanted = set(names)
    found: dict[str, tuple[int, str]] = {}
    # The pool's items read once (a file names most of them): cheaper than a list of 100,000 ids in one query.
    rows = PoolItem.objects.filter(pool=pool).values_list("id", "public_id", "external_id", "kind")
    for item_id, public_id, external_id, kind in rows.iterator(chunk_size=10_000):
        if public_id in wanted:
            found[public_id] = (item_id, kind)
        if external_id and external_id in wanted:
            found[external_id] = (item_id, kind)
    return found
