"""Saving an annotator's label for one item."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import IntegrityError, transaction

from annotation.models import Annotation, Assignment, ExtraneousSpan, PoolItem
from annotation.schema import TAGS

MAX_SECONDS_PER_VISIT = 24 * 3600


class AnnotationRejected(ValueError):
    """The submission breaks a rule; `field` names the offending input, `status` the HTTP status it maps to."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status


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
) -> tuple[Annotation, bool]:
    """Create or update `user`'s annotation of the item; returns (annotation, created).

    The database allows one annotation per annotator and item. Two concurrent submits (two tabs, a double click)
    race on that constraint: the loser's insert fails inside a savepoint and it updates the winner's row under a
    row lock instead, so neither duplicates nor loses work. Time is summed over visits.
    """
    item = PoolItem.objects.select_related("pool").filter(public_id=public_id).first()
    if item is None:
        raise AnnotationRejected(f"no item {public_id!r}", field="item", status=404)
    if not Assignment.objects.filter(item=item, annotator=user).exists():
        raise AnnotationRejected("this item is not assigned to you", field="item", status=403)
    if label not in item.pool.labels:
        raise AnnotationRejected(
            f"label {label!r} is not one of this pool's labels: {', '.join(item.pool.labels)}", field="label"
        )
    unknown = [tag for tag in tags if tag not in TAGS]
    if unknown:
        raise AnnotationRejected(
            f"unknown tag(s) {', '.join(map(repr, unknown))}; known: {', '.join(TAGS)}", field="tags"
        )
    checked = _check_spans(spans, item.continuation)
    if checked and not extraneous:
        raise AnnotationRejected("extraneous words are marked but extraneous is false", field="extraneous")
    if not 0 <= seconds <= MAX_SECONDS_PER_VISIT:
        raise AnnotationRejected(f"seconds must be between 0 and {MAX_SECONDS_PER_VISIT}", field="seconds")

    fields = {"label": label, "extraneous": extraneous, "notes": notes, "tags": sorted(set(tags), key=list(TAGS).index)}
    with transaction.atomic():
        annotation = None
        try:
            with transaction.atomic():
                annotation = Annotation.objects.create(item=item, annotator=user, seconds=seconds, **fields)
        except IntegrityError:
            pass
        created = annotation is not None
        if not created:
            # An earlier save exists (an edit, another tab, a double click): update it under its row lock.
            annotation = Annotation.objects.select_for_update().get(item=item, annotator=user)
            for name, value in fields.items():
                setattr(annotation, name, value)
            annotation.seconds += seconds
            annotation.save()
            annotation.spans.all().delete()
        ExtraneousSpan.objects.bulk_create(
            ExtraneousSpan(annotation=annotation, start=start, end=end) for start, end in checked
        )
    return annotation, created
