"""Reading a kind's files: the text, the rows of a CSV or TSV with its required columns, and the import signature.

Errors name the file, the line and the problem (`ImportFailed`); nothing is written unless every line is good.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

from generation.textfiles import InputErrors, UnreadableFile, read_utf8


class ImportFailed(InputErrors):
    """A template file or name list is malformed; the import wrote nothing."""


def read_text(path: Path) -> str:
    try:
        return read_utf8(path)[1]
    except UnreadableFile as exc:
        raise ImportFailed([str(exc)]) from None


def read_rows(path: Path, *, delimiter: str, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    missing = [column for column in required if column not in header]
    if missing:
        raise ImportFailed(
            [f"{path}:1: missing column(s) {', '.join(missing)} (header has: {', '.join(header) or 'nothing'})"]
        )
    rows = []
    for row in reader:
        line = reader.line_num
        if None in row:
            raise ImportFailed([f"{path}:{line}: more fields than the header has columns"])
        if all(not (value or "").strip() for value in row.values()):
            continue
        rows.append((line, {key: value or "" for key, value in row.items()}))
    if not rows:
        raise ImportFailed([f"{path}: no template rows"])
    return rows


def signature(*parts: object) -> str:
    """The import signature stored with a dataset: a re-import of the same files and arguments finds the same one.
    A part is hashed as its bytes, or its repr (a kind is passed as its DatasetKind member, repr and all)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()
