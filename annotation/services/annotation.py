"""Saving an annotator's label for one item."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from django.db import connection, transaction

from annotation.models import Annotation, Assignment, ExtraneousSpan, Pool, PoolItem, json_column
from annotation.schema import TAGS

MAX_SECONDS_PER_VISIT = 24 * 3600


class AnnotationRejected(ValueError):
    """The submission breaks a rule; `field` names the offending input, `status` the HTTP status it maps to."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status


@dataclass(frozen=True)
class Submitted:
    item: str  # the item's public id
    annotation: Annotation
    spans: list[tuple[int, int]]  # as stored: distinct, sorted
    created: bool


def _check_spans(spans: Sequence[Sequence[int]], length: float) -> list[tuple[int, int]]:
    """The spans as stored (distinct, sorted); AnnotationRejected names the first that is not a pair of integers
    with 0 <= start < end <= length (the generation's length)."""
    checked = set()
    for i, span in enumerate(spans):
        if len(span) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in span):
            raise AnnotationRejected(f"span {i} must be a pair of integers [start, end]", field="extraneous_spans")
        start, end = span
        if not 0 <= start < end <= length:
            raise AnnotationRejected(
                f"span {i} [{start}, {end}] must satisfy 0 <= start < end <= {length} (the generation's length)",
                field="extraneous_spans",
            )
        checked.add((start, end))
    return sorted(checked)


def _formed_spans(spans: Sequence[Sequence[int]]) -> list[tuple[int, int]] | None:
    """The spans as stored if they pass every check that does not need the generation, else None.

    Whether the last one ends inside the generation is then the database's check; when a span fails, the lookup of
    the item that follows lets `_check_spans` say which and why.
    """
    try:
        return _check_spans(spans, math.inf)
    except AnnotationRejected:
        return None


# The item, its pool's labels and whether it is assigned to the annotator, in one statement (the API's hot path).
_ITEM_SQL = """
SELECT i.id, i.continuation, p.labels,
       EXISTS (SELECT 1 FROM {assignment} a WHERE a.item_id = i.id AND a.annotator_id = %s)
FROM {item} i JOIN {pool} p ON p.id = i.pool_id
WHERE i.public_id = %s
"""


@cache
def _item_sql() -> str:
    return _ITEM_SQL.format(
        assignment=Assignment._meta.db_table, item=PoolItem._meta.db_table, pool=Pool._meta.db_table
    )


def _item_for(*, user, public_id: str) -> tuple[int, str, list[str], bool] | None:
    with connection.cursor() as cursor:
        cursor.execute(_item_sql(), [user.pk, public_id])
        row = cursor.fetchone()
    if row is None:
        return None
    item_id, continuation, labels, assigned = row
    return item_id, continuation, json_column(Pool, "labels", labels), bool(assigned)


def _label_allowed_sql(labels: str) -> str:
    """SQL that is true when the pool's JSON `labels` column holds the string parameter `%(label)s`."""
    if connection.vendor == "postgresql":
        return f"{labels} @> jsonb_build_array(%(label)s::varchar)"
    return f"EXISTS (SELECT 1 FROM json_each({labels}) WHERE json_each.value = %(label)s)"


@cache
def _insert_sql(*, checked: bool, spans: bool = False) -> tuple[str, list]:
    """The INSERT ... ON CONFLICT DO NOTHING for an annotation, and the fields whose values it takes, in order.

    `checked`: the item comes from its public id, and the row is inserted only if the item is assigned to the
    annotator and the label is one of its pool's. A first save is then one statement; the caller looks the item up
    only when nothing was inserted, to say why. Otherwise the item's primary key is a value like the others.

    `spans` (PostgreSQL, with `checked`): the extraneous spans, `%(starts)s` and `%(ends)s`, are inserted by the same
    statement, and only if the last end (`%(last_end)s`) fits the generation. One statement is one transaction,
    without the BEGIN and COMMIT round trips of `transaction.atomic()`.
    """
    meta = Annotation._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    quote = connection.ops.quote_name
    item, annotator = meta.get_field("item"), meta.get_field("annotator")
    columns = ", ".join(quote(field.column) for field in fields)
    conflict = (
        f" ON CONFLICT ({quote(item.column)}, {quote(annotator.column)}) DO NOTHING"
        f" RETURNING {quote(meta.pk.column)}, {quote(item.column)}"
    )
    if not checked:
        values = ", ".join(f"%({field.attname})s" for field in fields)
        return f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({values}){conflict}", fields
    values = ", ".join("i.id" if field is item else f"%({field.attname})s" for field in fields)
    assignment = Assignment._meta.db_table
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns})"
        f" SELECT {values} FROM {PoolItem._meta.db_table} i JOIN {Pool._meta.db_table} p ON p.id = i.pool_id"
        f" WHERE i.public_id = %(public_id)s"
        f" AND EXISTS (SELECT 1 FROM {assignment} a WHERE a.item_id = i.id AND a.annotator_id = %({annotator.attname})s)"
        f" AND {_label_allowed_sql('p.labels')}"
        f"{' AND char_length(i.continuation) >= %(last_end)s' if spans else ''}"
        f"{conflict}"
    )
    if spans:
        span_meta = ExtraneousSpan._meta
        span_columns = ", ".join(quote(span_meta.get_field(name).column) for name in ("annotation", "start", "end"))
        sql = (
            f"WITH saved AS ({sql}), spans AS ("
            f"INSERT INTO {quote(span_meta.db_table)} ({span_columns})"
            f" SELECT saved.{quote(meta.pk.column)}, s.start, s.stop FROM saved"
            f" CROSS JOIN unnest(%(starts)s::integer[], %(ends)s::integer[]) AS s (start, stop))"
            f" SELECT * FROM saved"
        )
    return sql, [field for field in fields if field is not item]


def _insert_if_absent(
    annotation: Annotation, *, public_id: str | None = None, spans: Sequence[tuple[int, int]] = ()
) -> bool:
    """INSERT the new row unless the annotator already has one for the item; True if inserted (and its pk is set).

    One statement with no savepoint, where `create()` would need one to survive the unique constraint's error inside
    the transaction. Values are prepared by the model's own fields, so this writes what `save()` would. With
    `public_id`, the item is found by it and checked in the same statement (see `_insert_sql`); then False also
    means that there is no such item, that it is not the annotator's, or that the label is not its pool's; and with
    `spans` too (checked and sorted, PostgreSQL only), that the last one ends past the generation.
    """
    sql, fields = _insert_sql(checked=public_id is not None, spans=bool(spans))
    values = {
        field.attname: field.get_db_prep_save(field.pre_save(annotation, add=True), connection) for field in fields
    }
    if public_id is not None:
        values["public_id"] = public_id  # the label check reuses the label's own parameter, %(label)s
    if spans:
        values.update(starts=[start for start, _ in spans], ends=[end for _, end in spans])
        values["last_end"] = max(values["ends"])
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return False
    annotation.pk, annotation.item_id = row
    annotation._state.adding = False
    annotation._state.db = connection.alias
    return True


def annotation_submit(
    *,
    user,
    public_id: str,
    label: str,
    extraneous: bool = False,
    spans: Sequence[Sequence[int]] = (),
    notes: str = "",
    tags: Sequence[str] = (),
    seconds: float = 0.0,
) -> Submitted:
    """Create or update `user`'s annotation of the item.

    The database allows one annotation per annotator and item. The first save inserts with `ON CONFLICT DO
    NOTHING`; when the row is already there (an edit, another tab, a double click, or a concurrent first save that won
    the race) it updates that row under its row lock instead, so neither duplicates nor loses work. Time is summed
    over visits.
    """
    unknown = [tag for tag in tags if tag not in TAGS]
    if unknown:
        raise AnnotationRejected(
            f"unknown tag(s) {', '.join(map(repr, unknown))}; known: {', '.join(TAGS)}", field="tags"
        )
    formed = _formed_spans(spans)  # None: one is malformed, and the slower path below says which
    if formed and not extraneous:
        raise AnnotationRejected("extraneous words are marked but extraneous is false", field="extraneous")
    if not 0 <= seconds <= MAX_SECONDS_PER_VISIT:
        raise AnnotationRejected(f"seconds must be between 0 and {MAX_SECONDS_PER_VISIT}", field="seconds")
    fields = {"label": label, "extraneous": extraneous, "notes": notes, "tags": sorted(set(tags), key=list(TAGS).index)}
    annotation = Annotation(annotator=user, seconds=seconds, **fields)
    tried = formed == [] or (formed is not None and connection.vendor == "postgresql")
    if tried and _insert_if_absent(annotation, public_id=public_id, spans=formed):
        # The common case, a first save: found, checked and inserted (with its spans, on PostgreSQL) by one
        # statement, atomic by itself, with no transaction round trips.
        return Submitted(item=public_id, annotation=annotation, spans=formed, created=True)

    found = _item_for(user=user, public_id=public_id)
    if found is None:
        raise AnnotationRejected(f"no item {public_id!r}", field="item", status=404)
    item_id, continuation, labels, assigned = found
    if not assigned:
        raise AnnotationRejected("this item is not assigned to you", field="item", status=403)
    if label not in labels:
        raise AnnotationRejected(
            f"label {label!r} is not one of this pool's labels: {', '.join(labels)}", field="label"
        )
    # Spans that passed `_formed_spans` were checked against `extraneous` above; any other fails here.
    checked = _check_spans(spans, len(continuation))
    annotation.item_id = item_id
    with transaction.atomic():
        created = not tried and _insert_if_absent(annotation)  # an edit, or spans on SQLite
        if not created:
            annotation = Annotation.objects.select_for_update().get(item_id=item_id, annotator=user)
            for name, value in fields.items():
                setattr(annotation, name, value)
            annotation.seconds += seconds
            annotation.save()
            annotation.spans.all().delete()
        ExtraneousSpan.objects.bulk_create(
            [ExtraneousSpan(annotation=annotation, start=start, end=end) for start, end in checked]
        )
    return Submitted(item=public_id, annotation=annotation, spans=checked, created=created)
