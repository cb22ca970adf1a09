"""Reading and checking the files of a templates dataset (docs/domain.md, 'Your own templates'): the codebook, the
templates (CSV or JSON Lines) and the names, each streamed line by line, every problem named as `file:line: field ...`;
and MISGENDERED's name draw. generation/datasets/templates.py imports what these give.

Each reader takes the file's path and, as `shown`, the name its messages use: the path on the command line, the
uploaded file's own name on the datasets page (whose copies lie in a temporary folder the user never saw)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from common.json_input import json_loads
from generation.datasets.files import ImportFailed
from generation.pronouns import FORMS, Codebook
from generation.textfiles import MAX_ERRORS_SHOWN

CODEBOOK_COLUMNS = ("base", "nom", "acc", "pos_dep", "pos_ind", "ref")
TEMPLATE_FIELDS = ("id", "template")  # and the optional `group`
# What the database keeps (generation/models/datasets.py): a family's name is an Instance.pronoun, a form a surface.
_BASE = re.compile(r"^[a-z]{1,8}$")
_SURFACE = re.compile(r"^[a-z]{1,32}$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_TARGET = "target:"
# Errors are gathered up to this many per file, so that a bad 100,000-line file is not listed in full.
_MAX_ERRORS = MAX_ERRORS_SHOWN * 5
# The most characters one cell may hold, in either format: Python's csv module refuses longer fields, and no id,
# template or group needs as many.
MAX_CELL = 131_072
# The csv module's field limit is one setting for the whole process: raised only to find which field broke it.
_FIELD_LIMIT_LOCK = threading.Lock()
# Where the import is told of a names file: the command's flag (the page passes the name of its field).
NAMES_HINT = "--names NAMES.txt"


@dataclass(frozen=True)
class TemplateRow:
    """One checked template: `slot` is its `{target:FORM}` marker as written, `form` the FORM."""

    id: str
    group: str
    line: int
    text: str
    slot: str
    form: str


class _Errors:
    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, message: str) -> None:
        self.found.append(message)

    def full(self) -> bool:
        return len(self.found) >= _MAX_ERRORS

    def raise_any(self) -> None:
        if self.found:
            raise ImportFailed(self.found)


def cell_problem(value: str) -> str | None:
    """What keeps a cell's text from being stored: a NUL character (PostgreSQL cannot store one), or its length."""
    if "\x00" in value:
        return "holds a NUL character (\\x00), which is not text"
    if len(value) > MAX_CELL:
        return f"longer than {MAX_CELL:,} characters"
    return None


def _lines(path: Path, shown: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, streamed; a bad byte is reported with its line."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ImportFailed([f"{shown}: cannot be read ({exc.strerror or exc})"]) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFailed(
                    [f"{shown}:{number}: not UTF-8 (byte {raw[exc.start]:#04x}); save the file as UTF-8"]
                ) from None


def _csv_rows(path: Path, shown: str, *, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) of a CSV file with a header, streamed; blank rows skipped. A cell that cannot be stored (a NUL
    character, longer than MAX_CELL) stops the file with its line and column."""
    numbered = _lines(path, shown)
    current = [0]
    record: list[str] = []  # the lines of the record being read: the reader asks for a line only when it needs one

    def text() -> Iterator[str]:
        for number, line in numbered:
            current[0] = number
            record.append(line)
            yield line

    reader = csv.reader(text())
    try:
        header = next(reader, None)
    except csv.Error:
        raise ImportFailed([f"{shown}:{current[0]}: the header is longer than {MAX_CELL:,} characters"]) from None
    if header is None:
        raise ImportFailed([f"{shown}: the file is empty (it needs a header: {', '.join(required)})"])
    header = [column.strip() for column in header]
    missing = [column for column in required if column not in header]
    if missing:
        raise ImportFailed(
            [f"{shown}:1: missing column(s) {', '.join(missing)} (header has: {', '.join(header) or 'nothing'})"]
        )
    while True:
        record.clear()
        try:
            values = next(reader, None)
        except csv.Error:  # the only error of a reader that is not strict: a field over the module's limit
            column = _oversized_column("".join(record), header)
            raise ImportFailed([f"{shown}:{current[0]}: field {column}: longer than {MAX_CELL:,} characters"]) from None
        if values is None:
            return
        if any(value.strip() for value in values):
            yield current[0], _row(values, header, f"{shown}:{current[0]}")


def _row(values: list[str], header: list[str], where: str) -> dict[str, str]:
    """A record as a row of the header's columns; too many fields, or a cell that cannot be stored, stop the file."""
    if len(values) > len(header):
        raise ImportFailed([f"{where}: more fields than the header has columns"])
    for column, value in zip(header, values, strict=False):
        problem = cell_problem(value)
        if problem:
            raise ImportFailed([f"{where}: field {column}: {problem}"])
    return dict(zip(header, values + [""] * (len(header) - len(values)), strict=True))


def _oversized_column(record: str, header: list[str]) -> str:
    """The column of the first cell over MAX_CELL in a record the csv module refused, read again without its limit
    (the limit is the process's: raised under a lock, for this one record, and put back)."""
    with _FIELD_LIMIT_LOCK:
        limit = csv.field_size_limit(sys.maxsize)
        try:
            values = next(csv.reader(io.StringIO(record)), [])
        finally:
            csv.field_size_limit(limit)
    for index, value in enumerate(values):
        if len(value) > MAX_CELL:
            return header[index] if index < len(header) else f"{index + 1} (past the header's columns)"
    return header[min(len(values), len(header)) - 1] if values else header[0]


def files_sha256(*paths: Path | None) -> str:
    digest = hashlib.sha256()
    for path in paths:
        if path is None:
            digest.update(b"-\0")
            continue
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def codebook_read(path: Path, *, shown: str | None = None) -> Codebook:
    """The codebook file: `base, nom, acc, pos_dep, pos_ind, ref`, one family a row, empty cells for forms a family
    lacks. Rejected whole: a bad or repeated base, a bad form, a family with no forms, no family at all. A spelling
    may belong to several families (e and ey both have `em`; docs/domain.md, "Bring your own study")."""
    errors = _Errors()
    table: dict[str, dict[str, str]] = {}
    base_line: dict[str, int] = {}
    shown = shown or str(path)
    for line, row in _csv_rows(path, shown, required=CODEBOOK_COLUMNS):
        where = f"{shown}:{line}"
        base = row["base"].strip()
        if not _BASE.match(base):
            errors.add(f"{where}: field base: {base!r} is not a family name (1-8 lower-case letters a-z)")
            continue
        if base in base_line:
            errors.add(f"{where}: field base: duplicate base {base!r} (already on line {base_line[base]})")
            continue
        base_line[base] = line
        forms: dict[str, str] = {}
        for form in FORMS:
            surface = row[form].strip()
            if not surface:
                continue
            if not _SURFACE.match(surface):
                errors.add(f"{where}: field {form}: {surface!r} is not a form (1-32 lower-case letters a-z)")
                continue
            forms[form] = surface
        if not forms and not any(row[form].strip() for form in FORMS):
            errors.add(f"{where}: family {base!r} has no forms")
        table[base] = forms
    if not base_line and not errors.found:
        errors.add(f"{shown}: empty codebook: no pronoun families (rows of {', '.join(CODEBOOK_COLUMNS)})")
    errors.raise_any()
    return Codebook(dataset=path.name, table=table, clitics=True)


def names_read(path: Path, *, shown: str | None = None) -> list[str]:
    """One name a line, blank lines skipped, repeats kept (the draw picks from the list as it is)."""
    names: list[str] = []
    errors = _Errors()
    shown = shown or str(path)
    for number, line in _lines(path, shown):
        name = line.strip()
        if not name:
            continue
        if "{" in name or "}" in name or "\x00" in name or len(name) > 64:
            errors.add(
                f"{shown}:{number}: {name[:40]!r} is not a name (at most 64 characters, no braces, no NUL character)"
            )
            continue
        names.append(name)
    errors.raise_any()
    if not names:
        raise ImportFailed([f"{shown}: the names file is empty"])
    return names


def _raw_templates(path: Path, shown: str) -> Iterator[tuple[int, object, object, object] | tuple[int, str]]:
    """(line, id, template, group) per template of a CSV or JSONL file, or (line, problem)."""
    if path.suffix.lower() == ".jsonl":
        for number, line in _lines(path, shown):
            if not line.strip():
                continue
            try:
                row = json_loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"not a JSON object ({exc.msg} at column {exc.colno})"
                continue
            if not isinstance(row, dict):
                yield number, "expected a JSON object with id, template and optionally group"
                continue
            missing = [name for name in TEMPLATE_FIELDS if name not in row]
            if missing:
                yield number, f"missing field(s) {', '.join(missing)}"
                continue
            problems = [
                f"field {key}: {problem}"
                for key in ("id", "template", "group")
                if isinstance(row.get(key), str) and (problem := cell_problem(row[key]))
            ]
            if problems:
                yield number, "; ".join(problems)
                continue
            yield number, row["id"], row["template"], row.get("group", "")
        return
    for number, row in _csv_rows(path, shown, required=TEMPLATE_FIELDS):
        yield number, row["id"], row["template"], row.get("group", "")


def _check_template(
    text: str, where: str, codebook: Codebook, *, names: bool, errors: _Errors, nameless: list[int], line: int
) -> tuple[str, str] | None:
    """The slot marker and its FORM, or None with the template's problems added. A `{name}` without a names file
    is not added: its lines go to `nameless`, told once for the whole file."""
    slots: list[str] = []
    problems = len(errors.found)
    if not names and "{name}" in text:
        nameless.append(line)
    for placeholder in _PLACEHOLDER.findall(text):
        if placeholder.startswith(_TARGET):
            form = placeholder[len(_TARGET) :]
            slots.append(form)
            if form not in FORMS:
                errors.add(
                    f"{where}: field template: unknown FORM {form!r} in {{{placeholder}}} (use one of "
                    f"{', '.join(FORMS)})"
                )
        elif placeholder == "name":
            pass
        elif placeholder in FORMS:
            lacking = [base for base in codebook.bases if placeholder not in codebook.table[base]]
            if lacking:
                errors.add(
                    f"{where}: field template: {{{placeholder}}} needs a {placeholder} form, which the codebook "
                    f"lacks for {', '.join(lacking)}"
                )
        else:
            errors.add(
                f"{where}: field template: unknown placeholder {{{placeholder}}} (use {{name}}, "
                f"{', '.join('{' + form + '}' for form in FORMS)} and one {{target:FORM}})"
            )
    _check_slots(slots, where, codebook, errors)
    if len(errors.found) > problems or (nameless and nameless[-1] == line):
        return None
    return "{" + _TARGET + slots[0] + "}", slots[0]


def _check_slots(slots: list[str], where: str, codebook: Codebook, errors: _Errors) -> None:
    """Exactly one target slot, of a form every family has."""
    if not slots:
        errors.add(f"{where}: field template: no target slot (it needs exactly one {{target:FORM}})")
    elif len(slots) > 1:
        errors.add(f"{where}: field template: {len(slots)} target slots (it needs exactly one {{target:FORM}})")
    elif slots[0] in FORMS:
        lacking = [base for base in codebook.bases if slots[0] not in codebook.table[base]]
        if lacking:
            errors.add(
                f"{where}: field template: the slot {{target:{slots[0]}}} needs a {slots[0]} form, which the "
                f"codebook lacks for {', '.join(lacking)}"
            )


def templates_read(
    path: Path, codebook: Codebook, *, names: bool, shown: str | None = None, names_hint: str = NAMES_HINT
) -> Iterator[TemplateRow]:
    """The checked templates, streamed. Run it to the end before using any: it raises `ImportFailed` with every
    problem (up to a cap) once the file is read. `names_hint` says where a names file is given (the command's flag,
    the page's field), in the one message for templates that use `{name}` without one."""
    errors = _Errors()
    seen: dict[str, int] = {}
    nameless: list[int] = []
    count = 0
    shown = shown or str(path)
    for read in _raw_templates(path, shown):
        if errors.full():
            break
        if len(read) == 2:
            errors.add(f"{shown}:{read[0]}: {read[1]}")
            continue
        line, raw_id, text, group = read
        where = f"{shown}:{line}"
        template_id = str(raw_id).strip() if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else ""
        if not template_id:
            errors.add(f"{where}: field id: empty or not a string or number")
        elif len(template_id) > 200:
            errors.add(f"{where}: field id: longer than 200 characters")
        elif template_id in seen:
            errors.add(
                f"{where}: field id: duplicate template id {template_id!r} (already on line {seen[template_id]})"
            )
        else:
            seen[template_id] = line
        if not isinstance(text, str) or not text.strip():
            errors.add(f"{where}: field template: empty or not a string")
            continue
        if not isinstance(group, str | int) or isinstance(group, bool):
            errors.add(f"{where}: field group: not a string")
            continue
        checked = _check_template(text, where, codebook, names=names, errors=errors, nameless=nameless, line=line)
        if checked is None or errors.found or nameless:
            continue
        count += 1
        yield TemplateRow(template_id, str(group).strip(), line, text, *checked)
    if nameless:
        errors.found.insert(0, _nameless_message(shown, nameless, names_hint))
    if not count and not errors.found:
        errors.add(f"{shown}: no templates")
    errors.raise_any()


def _nameless_message(shown: str, lines: list[int], names_hint: str) -> str:
    """One message for every template that uses `{name}` while no names file was given."""
    others = len(lines) - 1
    also = ""
    if others:
        listed = ", ".join(str(line) for line in lines[1:6])
        more = f" and {others - 5:,} more" if others > 5 else ""
        also = f" (so do {others:,} other templates: line{'s' if others > 1 else ''} {listed}{more})"
    return (
        f"{shown}:{lines[0]}: field template: {{name}} needs a names file, one name a line; give one with "
        f"{names_hint}{also}"
    )


def name_draws(*, templates: int, names: list[str], per_template: int, seed: int) -> list[list[str]]:
    """draws[j][t]: the name of draw t of template j, by MISGENDERED's rule (docs/domain.md, 'Datasets and
    contexts'): Python's `random` seeded with `seed` at the start of each family's run, and for t = 0..N-1, for each
    template in file order, `random.choice(names)`. Every family's run draws the same sequence, so draw t of template
    j has the same name under every family; names repeat."""
    rng = random.Random(seed)
    draws: list[list[str]] = [[] for _ in range(templates)]
    for _ in range(per_template):
        for position in range(templates):
            draws[position].append(rng.choice(names))
    return draws
