"""Importing people's labels made elsewhere (docs/domain.md, "Bring your own study").

A file is long (`item, annotator, label`, optional `created_at` ISO 8601, `seconds`, `extraneous`, `note`) or wide
(`item` and one column per annotator; an empty cell: not labelled). Each annotator becomes a pseudonymous account of
the pool (`imported.<pool>.<annotator>`) that cannot log in; the labels are annotations with origin `imported` and
count as human labels everywhere. Importing the same file again changes nothing; a label that differs from a stored
one for the same item and annotator is refused (`FILE:LINE: item X, annotator Y: ...`) unless `replace` (the same
label with a time, seconds, flag or note the stored one lacks or differs in is completed from the file). The whole
file is checked before anything is written, and a refused line writes nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import ORIGIN_IMPORTED, STUDY, Annotation, Pool
from annotation.services.imports.reading import source_name
from annotation.services.label_files import LabelImportError, Source, Table, pool_items_named, table_read
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from common.timestamps import timestamp_problem

LONG_REQUIRED = ("item", "annotator", "label")
LONG_OPTIONAL = ("created_at", "seconds", "extraneous", "note")
ANNOTATOR = re.compile(r"^[-\w.@+]{1,64}$")
TRUE = {"1", "true", "yes", "y", "1.0"}
FALSE = {"0", "false", "no", "n", "0.0"}
BATCH = 5_000
PREVIEW_ROWS = 5


@dataclass(frozen=True)
class LabelRow:
    line: int
    item: str
    annotator: str
    label: str
    created_at: datetime | None = None
    seconds: float | None = None
    extraneous: bool | None = None
    note: str | None = None

    def preview(self) -> dict:
        return {
            "line": self.line, "item": self.item, "annotator": self.annotator, "label": self.label,
            "created_at": self.created_at.isoformat() if self.created_at else None, "seconds": self.seconds,
            "extraneous": self.extraneous, "note": self.note,
        }  # fmt: skip


@dataclass
class LabelsPlan:
    """What an import would do, found before anything is written."""

    pool: Pool
    file: str
    rows: list[LabelRow] = field(default_factory=list)
    annotators: list[str] = field(default_factory=list)
    new: int = 0
    replaced: int = 0  # a different label, overwritten (replace)
    completed: int = 0  # the same label, with a time, seconds, flag or note the stored one lacks or differs in
    unchanged: int = 0
    # (row, item id) to write, and the stored annotations a row replaces
    writes: list[tuple[LabelRow, int]] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "pool": self.pool.name, "file": self.file, "rows": len(self.rows), "annotators": len(self.annotators),
            "new": self.new, "replaced": self.replaced, "completed": self.completed, "unchanged": self.unchanged,
        }  # fmt: skip


def imported_username(pool: Pool, annotator: str) -> str:
    """The pseudonymous account of an imported annotator: one per pool and name in the file."""
    return f"imported.{pool.name}.{annotator}"


def _flag(text: str) -> bool | None:
    lowered = text.lower()
    return True if lowered in TRUE else False if lowered in FALSE else None


def _long_header_problems(table: Table) -> list[str]:
    missing = [column for column in LONG_REQUIRED if column not in table.header]
    unknown = [column for column in table.header if column not in LONG_REQUIRED + LONG_OPTIONAL]
    problems = []
    if missing:
        problems.append(f"{table.name}:1: missing column(s): {', '.join(missing)} (a long file; --wide for wide)")
    if unknown:
        problems.append(
            f"{table.name}:1: unknown column(s): {', '.join(unknown)}; a long file has "
            f"{', '.join(LONG_REQUIRED + LONG_OPTIONAL)} (a wide file: --wide)"
        )
    return problems


def _time(text: str, problems: list[str]) -> datetime | None:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        problems.append(f"created_at: not an ISO 8601 time, got {text!r}")
        return None
    if problem := timestamp_problem(value):  # one time no reader can hold would break every page of the pool
        problems.append(f"created_at: {problem}, got {text!r}")
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)  # without a zone: UTC


def _seconds(text: str, problems: list[str]) -> float | None:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        problems.append(f"seconds: must be a number >= 0, got {text!r}")
        return None
    return value


def _long_record(line: int, record: dict[str, str], problems: list[str]) -> LabelRow:
    created_at = _time(text, problems) if (text := record.get("created_at", "")) else None
    seconds = _seconds(text, problems) if (text := record.get("seconds", "")) else None
    extraneous = None
    if text := record.get("extraneous", ""):
        extraneous = _flag(text)
        if extraneous is None:
            problems.append(f"extraneous: use 1/0, true/false or yes/no, got {text!r}")
    return LabelRow(
        line, record.get("item", ""), record.get("annotator", ""), record.get("label", ""), created_at, seconds,
        extraneous, record.get("note") if "note" in record else None,
    )  # fmt: skip


def _long_rows(table: Table, errors: list[str]) -> list[LabelRow]:
    if header_problems := _long_header_problems(table):
        errors.extend(header_problems)
        return []
    rows = []
    for line, record in table.records:
        problems: list[str] = []
        rows.append(_long_record(line, record, problems))
        where = f"{table.name}:{line}: item {record.get('item', '')!r}, annotator {record.get('annotator', '')!r}"
        errors.extend(f"{where}: {problem}" for problem in problems)
    return rows


def _wide_rows(table: Table, errors: list[str]) -> list[LabelRow]:
    if "item" not in table.header:
        errors.append(f"{table.name}:1: missing column: item (a wide file: item and one column per annotator)")
        return []
    annotators = [column for column in table.header if column != "item"]
    if not annotators:
        errors.append(f"{table.name}:1: no annotator columns (a wide file: item and one column per annotator)")
        return []
    return [
        LabelRow(line, record.get("item", ""), annotator, record[annotator])
        for line, record in table.records
        for annotator in annotators
        if record.get(annotator, "")
    ]


def _row_problem(row: LabelRow, pool: Pool, items: dict[str, tuple[int, str]]) -> str | None:
    """What is wrong with one row on its own (None: nothing)."""
    labels = list(pool.labels)
    if row.item not in items:
        return f"no such item in pool {pool.name!r} (neither its own id nor a public id)"
    if items[row.item][1] != STUDY:
        return f"a {items[row.item][1]} item; people's labels are for study items"
    if not ANNOTATOR.match(row.annotator):
        return "annotator: 1-64 letters, digits, . @ + - or _"
    if row.label not in labels:
        return f"label {row.label!r} is not one of the pool's labels ({', '.join(labels)})"
    return None


def _rows_kept(name: str, rows: list[LabelRow], pool: Pool, items: dict, errors: list[str]) -> list[LabelRow]:
    """The good rows, each (item, annotator) once; the problems of the others go to `errors`."""
    seen: dict[tuple[str, str], LabelRow] = {}
    kept: list[LabelRow] = []
    for row in rows:
        where = f"{name}:{row.line}: item {row.item!r}, annotator {row.annotator!r}"
        if not row.item:
            errors.append(f"{name}:{row.line}: item: empty")
            continue
        if problem := _row_problem(row, pool, items):
            errors.append(f"{where}: {problem}")
            continue
        earlier = seen.get((row.item, row.annotator))
        if earlier is None:
            seen[(row.item, row.annotator)] = row
            kept.append(row)
        elif earlier.label != row.label:
            errors.append(f"{where}: label {row.label!r}, but line {earlier.line} says {earlier.label!r}")
        # the same label twice in one file counts once
    return kept


def _against_stored(plan: LabelsPlan, items: dict, *, replace: bool, errors: list[str]) -> None:
    """Sort the plan's rows into new, replaced, completed and unchanged against what the pool holds; a contradiction
    without `replace` goes to `errors`."""
    usernames = {imported_username(plan.pool, name): name for name in plan.annotators}
    # Only the compared columns, as plain tuples: a re-import of 100,000 labels reads them all.
    fields = ["item_id", "annotator__username", "label", "extraneous", "seconds", "notes", "created_at"]
    rows = Annotation.objects.filter(item__pool=plan.pool, annotator__username__in=list(usernames)).values_list(*fields)
    stored = {
        (item_id, usernames[username]): Stored(label, extraneous, seconds, notes, created_at)
        for item_id, username, label, extraneous, seconds, notes, created_at in rows.iterator(chunk_size=10_000)
    }
    for row in plan.rows:
        item_id = items[row.item][0]
        existing = stored.get((item_id, row.annotator))
        if existing is None:
            plan.new += 1
        elif existing.label != row.label and not replace:
            errors.append(
                f"{plan.file}:{row.line}: item {row.item!r}, annotator {row.annotator!r}: stored label "
                f"{existing.label!r}, the file says {row.label!r} (import with replace to overwrite)"
            )
            continue
        elif existing.label != row.label:
            plan.replaced += 1
        elif _details_differ(existing, row):
            plan.completed += 1  # the same label; the file adds or changes its time, seconds, flag or note
        else:
            plan.unchanged += 1
            continue
        plan.writes.append((row, item_id))


def labels_plan(*, source: Source, pool: Pool, wide: bool = False, replace: bool = False) -> LabelsPlan:
    """Check the whole file against the pool and what it holds: the plan, or LabelImportError with every problem
    (`FILE:LINE: item X, annotator Y: ...`)."""
    errors: list[str] = []
    table = table_read(source, errors)
    if table is None:
        raise LabelImportError(errors)
    plan = LabelsPlan(pool=pool, file=table.name)
    rows = _wide_rows(table, errors) if wide else _long_rows(table, errors)
    items = pool_items_named(pool, {row.item for row in rows})
    plan.rows = _rows_kept(table.name, rows, pool, items, errors)
    if table.records and not plan.rows and not errors:
        errors.append(f"{table.name}:2: no labels in the file")
    if errors:
        raise LabelImportError(errors)
    plan.annotators = sorted({row.annotator for row in plan.rows})
    _against_stored(plan, items, replace=replace, errors=errors)
    if errors:
        raise LabelImportError(errors)
    return plan


@dataclass(frozen=True)
class Stored:
    """What an import compares of a stored annotation."""

    label: str
    extraneous: bool
    seconds: float
    notes: str
    created_at: datetime


def _details_differ(stored: Stored, row: LabelRow) -> bool:
    """Whether the row gives a time, seconds, flag or note other than the stored one (left out: not compared)."""
    return (
        (row.extraneous is not None and stored.extraneous != row.extraneous)
        or (row.seconds is not None and not math.isclose(stored.seconds, row.seconds, abs_tol=1e-9))
        or (row.note is not None and stored.notes != row.note)
        or (row.created_at is not None and stored.created_at != row.created_at)
    )


def labels_preview(*, source: Source, pool: Pool, wide: bool = False, replace: bool = False) -> dict:
    """The first rows of the file as they would be read, and what the import would do; the problems instead when
    the file cannot be imported. Writes nothing."""
    try:
        plan = labels_plan(source=source, pool=pool, wide=wide, replace=replace)
    except LabelImportError as exc:
        return {"ok": False, "errors": exc.errors, "rows": []}
    return {"ok": True, "errors": [], **plan.summary(), "rows": [row.preview() for row in plan.rows[:PREVIEW_ROWS]]}


def _accounts(pool: Pool, names: list[str]) -> dict[str, int]:
    """annotator name -> user id, creating the missing pseudonymous accounts (no usable password, inactive: they
    cannot log in or hold a working token)."""
    user_model = get_user_model()
    wanted = {imported_username(pool, name): name for name in names}
    found = dict(user_model.objects.filter(username__in=list(wanted)).values_list("username", "id"))
    missing = [username for username in wanted if username not in found]
    if missing:
        unusable = make_password(None)
        user_model.objects.bulk_create(
            [user_model(username=username, password=unusable, is_active=False) for username in missing],
            batch_size=BATCH,
        )
        found.update(user_model.objects.filter(username__in=missing).values_list("username", "id"))
    return {wanted[username]: user_id for username, user_id in found.items()}


def _write(plan: LabelsPlan, accounts: dict[str, int]) -> None:
    """Write the plan's new, replaced and completed labels."""
    existing: dict[tuple[int, int], Annotation] = {}
    if plan.replaced or plan.completed:
        stored = Annotation.objects.filter(item__pool=plan.pool, annotator_id__in=list(accounts.values()))
        existing = {(annotation.item_id, annotation.annotator_id): annotation for annotation in stored}
    created: list[tuple[Annotation, LabelRow]] = []
    updated: list[Annotation] = []
    for row, item_id in plan.writes:
        annotation = existing.get((item_id, accounts[row.annotator]))
        if annotation is None:
            annotation = Annotation(item_id=item_id, annotator_id=accounts[row.annotator])
            created.append((annotation, row))
        else:
            updated.append(annotation)
            annotation.created_at = row.created_at or annotation.created_at
        annotation.label = row.label
        annotation.origin = ORIGIN_IMPORTED
        annotation.extraneous = annotation.extraneous if row.extraneous is None else row.extraneous
        annotation.seconds = annotation.seconds if row.seconds is None else row.seconds
        annotation.notes = annotation.notes if row.note is None else row.note
    # New rows are made in the order of item and annotator, not of the file: an item's untimed labels share one time
    # (below) and then follow their ids, so that nothing depends on the order of a file's rows.
    created.sort(key=lambda pair: (pair[0].item_id, pair[1].annotator))
    Annotation.objects.bulk_create([annotation for annotation, _ in created], batch_size=BATCH)
    # auto_now_add stamps each new row with the moment it was prepared, which follows the file's row order: a row
    # without a time of its own gets one time, the import's, so that an item's annotations made by one import tie
    # and are taken in the order above (docs/domain.md, "Headline figures": nothing depends on the order of a file's rows).
    untimed = [annotation.pk for annotation, row in created if row.created_at is None]
    if untimed:
        moment = timezone.now()
        for start in range(0, len(untimed), BATCH):
            Annotation.objects.filter(pk__in=untimed[start : start + BATCH]).update(created_at=moment)
    # A row's own `created_at` is written after, one parameterised statement for all (bulk_update's CASE per row
    # takes minutes at 100,000 rows).
    stamps = [(row.created_at, annotation.pk) for annotation, row in created if row.created_at is not None]
    if stamps:
        adapt = connection.ops.adapt_datetimefield_value
        table = connection.ops.quote_name(Annotation._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {table} SET created_at = %s WHERE id = %s", [(adapt(at), pk) for at, pk in stamps]
            )
    fields = ["label", "origin", "extraneous", "seconds", "notes", "created_at"]
    Annotation.objects.bulk_update(updated, fields, batch_size=BATCH)


def labels_import(
    *, source: Source, pool_name: str, wide: bool = False, replace: bool = False, created_by=None
) -> LabelsPlan:
    """Import one file of people's labels into an existing pool: the plan it carried out. Raises LabelImportError
    (nothing written) for a missing pool or any refused line."""
    with transaction.atomic():
        pool = Pool.objects.select_for_update().filter(name=pool_name).first()
        if pool is None:
            raise LabelImportError([f"{source_name(source)}: no pool {pool_name!r}"])
        plan = labels_plan(source=source, pool=pool, wide=wide, replace=replace)
        _write(plan, _accounts(pool, plan.annotators))
        pool_changed(pools=[pool])
        audit_record(event="labels.import", obj=pool, actor=created_by, action=CREATE, data=plan.summary())
    return plan
