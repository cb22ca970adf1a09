"""Saving an annotator's label for one item."""

from __future__ import annotations

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


def _check_spans(spans: Sequence[Sequence[int]], text: str) -> list[tuple[int, int]]:
    checked = set()
    for i, span in enumerate(spans):
        if len(span) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in span):
            raise AnnotationRejected(f"span {i} must be a pair of integers [start, end]", field="extraneous_spans")
        start, end = span
        if not 0 <= start < end <= len(text):
            raise AnnotationRejected(
                f"span {i} [{start}, {end}] must satisfy 0 <= start < end <= {len(text)} (the generation's length)",
                field="extraneous_spans",
            )
        checked.add((start, end))
    return sorted(checked)


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


@cache
def _insert_sql() -> tuple[str, list]:
    """The INSERT ... ON CONFLICT DO NOTHING for an annotation, and the fields whose values it takes, in order."""
    meta = Annotation._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)})"
        f" VALUES ({', '.join(['%s'] * len(fields))})"
        f" ON CONFLICT ({quote(meta.get_field('item').column)}, {quote(meta.get_field('annotator').column)}) DO NOTHING"
        f" RETURNING {quote(meta.pk.column)}"
    )
    return sql, fields


def _insert_if_absent(annotation: Annotation) -> bool:
    """INSERT the new row unless the annotator already has one for the item; True if inserted (and its pk is set).

    One statement with no savepoint, where `create()` would need one to survive the unique constraint's error inside
    the transaction. Values are prepared by the model's own fields, so this writes what `save()` would.
    """
    sql, fields = _insert_sql()
    values = [field.get_db_prep_save(field.pre_save(annotation, add=True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return False
    annotation.pk = row[0]
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
    unknown = [tag for tag in tags if tag not in TAGS]
    if unknown:
        raise AnnotationRejected(
            f"unknown tag(s) {', '.join(map(repr, unknown))}; known: {', '.join(TAGS)}", field="tags"
        )
    checked = _check_spans(spans, continuation)
    if checked and not extraneous:
        raise AnnotationRejected("extraneous words are marked but extraneous is false", field="extraneous")
    if not 0 <= seconds <= MAX_SECONDS_PER_VISIT:
        raise AnnotationRejected(f"seconds must be between 0 and {MAX_SECONDS_PER_VISIT}", field="seconds")

    fields = {"label": label, "extraneous": extraneous, "notes": notes, "tags": sorted(set(tags), key=list(TAGS).index)}
    annotation = Annotation(item_id=item_id, annotator=user, seconds=seconds, **fields)
    if not checked and _insert_if_absent(annotation):
        # The common case, a first save without spans, is one INSERT: atomic by itself, no transaction round trips.
        return Submitted(item=public_id, annotation=annotation, spans=checked, created=True)
    with transaction.atomic():
        created = bool(checked) and _insert_if_absent(annotation)  # without spans, the INSERT was just tried
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
