"""The raw export of a pool's annotations: one row per annotation, as CSV (through common/safe_csv.py) or JSON lines.

CSV cells: booleans are 1/0, a value that was not set is empty, and lists (spans, words, tags) are JSON arrays.
JSON lines keep true/false/null and real arrays.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from annotation.models import Pool
from annotation.selectors import export as export_rows
from annotation.selectors.aggregate import AGGREGATE_COLUMNS
from common.safe_csv import SafeDictWriter, safe_cell

FORMATS = ("csv", "jsonl")


EXPORT_COLUMNS = export_rows.EXPORT_COLUMNS
pool_annotation_rows = export_rows.pool_annotation_rows
pool_annotation_row_stream = export_rows.pool_annotation_row_stream
LINES_PER_PIECE = 1_000  # rows per piece of a streamed export


class ExportError(ValueError):
    pass


def _csv_cell(value):
    """A value as its export cell, already safe to open in a spreadsheet (`safe_cell`): empty for None, 0 or 1 for a
    boolean, JSON for a list."""
    if value is None:
        return ""
    if isinstance(value, str):
        return safe_cell(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list):
        return safe_cell(json.dumps(value, ensure_ascii=False))
    return value


def annotations_csv(*, rows: Iterable[dict]) -> str:
    return "".join(_csv_lines(rows))


def annotations_jsonl(*, rows: Iterable[dict]) -> str:
    return "".join(_jsonl_lines(rows))


def _csv_lines(rows: Iterable[dict]) -> Iterator[str]:
    """The CSV text in pieces of up to LINES_PER_PIECE rows, the header first."""
    buffer = io.StringIO()
    # Each cell is made safe once, by `_csv_cell` (a crowd's export has millions), so the writer is csv's own.
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([safe_cell(column) for column in EXPORT_COLUMNS])
    for count, row in enumerate(rows, start=1):
        writer.writerow([_csv_cell(row.get(column)) for column in EXPORT_COLUMNS])
        if count % LINES_PER_PIECE == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _jsonl_lines(rows: Iterable[dict]) -> Iterator[str]:
    piece: list[str] = []
    for row in rows:
        piece.append(json.dumps(row, ensure_ascii=False) + "\n")
        if len(piece) == LINES_PER_PIECE:
            yield "".join(piece)
            piece = []
    yield "".join(piece)


def _format_checked(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    return fmt


def annotations_export_stream(*, pool: Pool, fmt: str) -> Iterator[str]:
    """The pool's annotations as the text of a `fmt` file (csv or jsonl), in pieces: a crowd-sized pool's export is
    written as it is read, never held whole (the format is checked before the first piece)."""
    lines = _csv_lines if _format_checked(fmt) == "csv" else _jsonl_lines
    return lines(pool_annotation_row_stream(pool=pool))


def annotations_export(*, pool: Pool, fmt: str) -> str:
    """The pool's annotations as the text of a `fmt` file (csv or jsonl)."""
    return "".join(annotations_export_stream(pool=pool, fmt=fmt))


def aggregates_export_to_file(*, rows: list[dict], out: Path) -> int:
    """Write aggregated labels (`annotation.selectors.aggregate.pool_aggregates`) to `out`, .csv or .jsonl; the
    format is checked before anything is written. Returns the number of items."""
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ExportError(f"cannot tell the format from {out.name!r}: name the file .csv or .jsonl")
    if fmt == "csv":
        buffer = io.StringIO()
        writer = SafeDictWriter(buffer, fieldnames=AGGREGATE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({key: _csv_cell(value) for key, value in row.items()} for row in rows)
        text = buffer.getvalue()
    else:
        text = annotations_jsonl(rows=rows)
    out.write_text(text, encoding="utf-8", newline="")
    return len(rows)


def annotations_export_to_file(*, pool: Pool, out: Path, fmt: str | None = None) -> int:
    """Write the export to `out` (format from its suffix unless given), streamed; returns the number of
    annotations."""
    fmt = fmt or out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ExportError(f"cannot tell the format from {out.name!r}: name the file .csv or .jsonl")
    count = 0

    def counted() -> Iterator[dict]:
        nonlocal count
        for row in pool_annotation_row_stream(pool=pool):
            count += 1
            yield row

    lines = _csv_lines if fmt == "csv" else _jsonl_lines
    with out.open("w", encoding="utf-8", newline="") as handle:
        for piece in lines(counted()):
            handle.write(piece)
    return count
