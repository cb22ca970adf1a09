"""Writing many rows of one model given as plain tuples, without a model object per row: COPY on PostgreSQL, batched
inserts elsewhere. Through `bulk_create`, building and compiling the objects of a dataset's tens of thousands of
instances was most of its import's time (benchmarks/README.md, "Imports and bundles").

The caller names the columns it gives (`attname`s: `dataset_id`, not `dataset`), each value as the database stores it
(ids, strings, numbers, JSON as its text). Every other column takes its field's default (the database's where it has
only that), and `auto_now`/`auto_now_add` columns the moment of the write, as `save` would give them. No signal is
sent and no field is validated: for rows the caller built from input it already checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice

from django.db import connection, models
from django.db.models.fields import NOT_PROVIDED
from django.utils import timezone

INSERT_BATCH = 2000  # rows an INSERT where COPY is not there (SQLite's bound is 32,766 parameters a statement)


def rows_write(model: type[models.Model], columns: Sequence[str], rows: Iterable[tuple]) -> int:
    """Insert `rows` (tuples of `columns`' values, in that order) into `model`'s table; returns how many."""
    by_attname = {f.attname: f for f in model._meta.concrete_fields if not f.primary_key}
    unknown = [name for name in columns if name not in by_attname]
    if unknown:
        raise ValueError(f"{model._meta.label} has no column {', '.join(unknown)}")
    fields = [by_attname[name] for name in columns]
    # A column with a database default and none of its own is left to the database.
    rest = [
        f for name, f in by_attname.items() if name not in columns and (f.has_default() or f.db_default is NOT_PROVIDED)
    ]
    now = timezone.now()
    defaults = tuple(
        f.get_db_prep_save(
            now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default(), connection
        )
        for f in rest
    )
    quote = connection.ops.quote_name
    names = ", ".join(quote(f.column) for f in [*fields, *rest])
    table = quote(model._meta.db_table)
    written = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row + defaults)
                    written += 1
            return written
        marks = ", ".join(["%s"] * (len(fields) + len(rest)))
        pending = iter(rows)
        while batch := [row + defaults for row in islice(pending, INSERT_BATCH)]:
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", batch)
            written += len(batch)
    return written
