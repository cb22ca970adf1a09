"""Saving an annotator's label for one item: one portable ORM path inside a transaction (docs/domain.md, 'The
annotation schema' and 'Assignment and the annotator's queue')."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from annotation.models import TRAINING, Annotation, Assignment, ExtraneousSpan, PoolItem
from annotation.schema import TAGS
from annotation.selectors import FAILED, QualificationFailed, qualification_status

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
    # Training items only: the expected answer and whether the label matched it (docs/domain.md, 'Assignment and
    # the annotator's queue'); None for every other item, gold included.
    feedback: dict | None = None


def _check_spans(spans: Sequence[Sequence[int]], length: int) -> list[tuple[int, int]]:
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


def _check_input(*, tags: Sequence[str], seconds: float) -> list[str]:
    """The checks that need no database; returns the tags as stored (distinct, in the schema's order)."""
    unknown = [tag for tag in tags if tag not in TAGS]
    if unknown:
        raise AnnotationRejected(
            f"unknown tag(s) {', '.join(map(repr, unknown))}; known: {', '.join(TAGS)}", field="tags"
        )
    if not 0 <= seconds <= MAX_SECONDS_PER_VISIT:
        raise AnnotationRejected(f"seconds must be between 0 and {MAX_SECONDS_PER_VISIT}", field="seconds")
    return sorted(set(tags), key=list(TAGS).index)


def _pool_has_training() -> RawSQL:
    """Whether the assignment's pool has training items. Raw SQL for one reason: the kind must be a literal. The save's
    statements are prepared, and in a generic plan `kind = $1` is expected to match every item of the pool, so
    PostgreSQL walked the whole pool to find none (0.3 s at 200,000 items); with the literal, the index
    `pool_item_kind` answers at once."""
    items, assignments = PoolItem._meta.db_table, Assignment._meta.db_table
    return RawSQL(
        f"EXISTS (SELECT 1 FROM {items} r WHERE r.pool_id = {assignments}.pool_id AND r.kind = '{TRAINING}')",
        (),
        output_field=BooleanField(),
    )


def _locked_assignment(*, user, public_id: str) -> Assignment:
    """The annotator's assignment of the item, with the item and its pool, locked until the save commits.

    The lock serialises every save of one annotator's item (two tabs, a double click), so the annotation can be read,
    then created or updated, without a race; on SQLite, transactions are serialised as a whole (IMMEDIATE).
    AnnotationRejected (404 or 403) when there is no such item or it is not the annotator's.
    """
    try:
        return (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("item__pool")
            .annotate(pool_has_training=_pool_has_training())
            .order_by()
            .get(annotator=user, item__public_id=public_id)
        )
    except Assignment.DoesNotExist:
        pass
    if not PoolItem.objects.filter(public_id=public_id).exists():
        raise AnnotationRejected(f"no item {public_id!r}", field="item", status=404)
    raise AnnotationRejected("this item is not assigned to you", field="item", status=403)


def _check_item(
    *, assignment: Assignment, user, label: str, extraneous: bool, spans: Sequence[Sequence[int]]
) -> list[tuple[int, int]]:
    """The checks against the item and its pool; returns the spans as stored."""
    item = assignment.item
    if item.kind != TRAINING and assignment.pool_has_training:
        qualification = qualification_status(pool=item.pool, annotator=user)
        if qualification["status"] == FAILED:
            raise QualificationFailed(qualification)
    if label not in item.pool.labels:
        raise AnnotationRejected(
            f"label {label!r} is not one of this pool's labels: {', '.join(item.pool.labels)}", field="label"
        )
    checked = _check_spans(spans, len(item.continuation))
    if checked and not extraneous:
        raise AnnotationRejected("extraneous words are marked but extraneous is false", field="extraneous")
    return checked


def _annotation_write(*, assignment: Assignment, user, fields: dict, seconds: float) -> tuple[Annotation, bool]:
    """Create the annotation, or update the annotator's earlier one (time summed over visits); True if created.

    Whether one exists is read from the assignment's `annotated` mark, as returned by the locking statement: the
    latest version of the row, committed by any save this one waited for. This path is the mark's only writer (the
    admin is read-only), in the same transaction as the annotation, so a first save needs no lookup; were an
    annotation ever written some other way, the unique (item, annotator) constraint would refuse the insert.
    """
    item = assignment.item
    if not assignment.annotated:
        return Annotation.objects.create(item=item, annotator=user, seconds=seconds, **fields), True
    if item.kind == TRAINING:
        # The qualification score is made of first answers: the feedback shows the expected one.
        raise AnnotationRejected(
            "training answers cannot be changed once saved (you have seen the expected answer)",
            field="item",
            status=409,
        )
    annotation = Annotation.objects.get(item=item, annotator=user)
    for name, value in fields.items():
        setattr(annotation, name, value)
    annotation.seconds += seconds
    annotation.save(update_fields=[*fields, "seconds", "updated_at"])
    annotation.spans.all().delete()
    return annotation, False


def _feedback(*, item: PoolItem, label: str) -> dict | None:
    if item.kind != TRAINING:
        return None
    return {
        "expected_label": item.gold_label,
        "expected_extraneous": item.gold_extraneous,
        "explanation": item.explanation,
        "correct": label == item.gold_label,
    }


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
    """Create or update `user`'s annotation of the item, its extraneous spans and the queue's `annotated` flag, in
    one transaction.

    The database allows one annotation per annotator and item; concurrent saves of one item by one annotator wait for
    each other on the assignment's row lock, so they neither duplicate nor lose work. Time is summed over visits.
    Raises AnnotationRejected (400, 403, 404, 409) or QualificationFailed (403) and then writes nothing.
    """
    tags = _check_input(tags=tags, seconds=seconds)
    fields = {"label": label, "extraneous": extraneous, "notes": notes, "tags": tags}
    with transaction.atomic():
        assignment = _locked_assignment(user=user, public_id=public_id)
        item = assignment.item
        checked = _check_item(assignment=assignment, user=user, label=label, extraneous=extraneous, spans=spans)
        annotation, created = _annotation_write(assignment=assignment, user=user, fields=fields, seconds=seconds)
        ExtraneousSpan.objects.bulk_create(
            [ExtraneousSpan(annotation=annotation, start=start, end=end) for start, end in checked]
        )
        if not assignment.annotated:
            assignment.annotated = True
            assignment.save(update_fields=["annotated"])
    return Submitted(
        item=public_id,
        annotation=annotation,
        spans=checked,
        created=created,
        feedback=_feedback(item=item, label=label),
    )
