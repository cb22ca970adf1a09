"""Reads for the annotation app.

Everything an annotator can load is built by `annotator_item_payload`: the opaque id, the context, the generated
text, the place in their own queue and their own annotation. Nothing else about an item (model, dataset, heuristic,
other people's labels) leaves the server through it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from annotation.models import Annotation, Assignment, Pool, PoolItem


def assignment_queue(*, user, pool_name: str | None = None) -> QuerySet[Assignment]:
    """The annotator's work in the order they see it: pool by pool, then their own random position."""
    queue = Assignment.objects.filter(annotator=user)
    if pool_name:
        queue = queue.filter(pool__name=pool_name)
    return queue.order_by("pool_id", "position")


def _annotated(user) -> Exists:
    return Exists(Annotation.objects.filter(item_id=OuterRef("item_id"), annotator=user))


def _place(queue: QuerySet[Assignment], assignment: Assignment) -> int:
    """1-based position of the assignment in the queue."""
    before = queue.filter(
        Q(pool_id__lt=assignment.pool_id) | Q(pool_id=assignment.pool_id, position__lt=assignment.position)
    ).count()
    return before + 1


def _neighbour(queue: QuerySet[Assignment], assignment: Assignment, *, forward: bool) -> str | None:
    if forward:
        after = Q(pool_id__gt=assignment.pool_id) | Q(pool_id=assignment.pool_id, position__gt=assignment.position)
        order = ("pool_id", "position")
    else:
        after = Q(pool_id__lt=assignment.pool_id) | Q(pool_id=assignment.pool_id, position__lt=assignment.position)
        order = ("-pool_id", "-position")
    return queue.filter(after).order_by(*order).values_list("item__public_id", flat=True).first()


def annotator_item_payload(*, user, assignment: Assignment, queue: QuerySet[Assignment]) -> dict:
    item = assignment.item
    own = Annotation.objects.filter(item=item, annotator=user).prefetch_related("spans").first()
    return {
        "item": item.public_id,
        "context": item.context,
        "generation": item.continuation,
        "position": _place(queue, assignment),
        "total": queue.count(),
        "labels": list(assignment.pool.labels),
        "previous": _neighbour(queue, assignment, forward=False),
        "next": _neighbour(queue, assignment, forward=True),
        "annotation": None
        if own is None
        else {
            "label": own.label,
            "extraneous": own.extraneous,
            "extraneous_spans": [[span.start, span.end] for span in own.spans.all()],
            "notes": own.notes,
            "tags": list(own.tags),
        },
    }


def assignment_next(*, user, pool_name: str | None = None) -> dict | None:
    """The first item in the annotator's queue they have not annotated yet, or None when all are done."""
    queue = assignment_queue(user=user, pool_name=pool_name)
    assignment = (
        queue.filter(~_annotated(user)).select_related("item", "pool").order_by("pool_id", "position").first()
    )
    if assignment is None:
        return None
    return annotator_item_payload(user=user, assignment=assignment, queue=queue)


def assignment_for_item(*, user, public_id: str) -> Assignment | None:
    return Assignment.objects.filter(annotator=user, item__public_id=public_id).select_related("item", "pool").first()


def item_exists(*, public_id: str) -> bool:
    return PoolItem.objects.filter(public_id=public_id).exists()


# Researchers -------------------------------------------------------------------------------------------------------


@dataclass
class AnnotatorProgress:
    username: str
    assigned: int
    done: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assigned) if self.assigned else 0


@dataclass
class CellProgress:
    model: str
    dataset: str
    setting: str
    pronoun: str
    items: int
    assignments: int
    done: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assignments) if self.assignments else 0


def pool_progress(*, pool: Pool) -> tuple[list[AnnotatorProgress], list[CellProgress]]:
    assignments = Assignment.objects.filter(pool=pool).annotate(
        done=Exists(Annotation.objects.filter(item_id=OuterRef("item_id"), annotator_id=OuterRef("annotator_id")))
    )
    per_user: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_cell: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for username, done, *cell in assignments.values_list(
        "annotator__username", "done", "item__model_name", "item__dataset", "item__setting", "item__pronoun"
    ):
        per_user[username][0] += 1
        per_user[username][1] += done
        per_cell[tuple(cell)][0] += 1
        per_cell[tuple(cell)][1] += done
    items = PoolItem.objects.filter(pool=pool).values_list("model_name", "dataset", "setting", "pronoun")
    items_per_cell: dict[tuple, int] = defaultdict(int)
    for cell in items:
        items_per_cell[cell] += 1
    annotators = [AnnotatorProgress(name, *counts) for name, counts in sorted(per_user.items())]
    cells = [
        CellProgress(*cell, items=count, assignments=per_cell[cell][0], done=per_cell[cell][1])
        for cell, count in sorted(items_per_cell.items())
    ]
    return annotators, cells


def pool_disagreements(*, pool: Pool) -> list[PoolItem]:
    """Items annotated by two or more people who chose different labels, with their annotations and verdict."""
    items = (
        PoolItem.objects.filter(pool=pool)
        .annotate(
            n_annotations=Count("annotations", distinct=True),
            n_labels=Count("annotations__label", distinct=True),
        )
        .filter(n_annotations__gte=2, n_labels__gte=2)
        .select_related("adjudication")
        .prefetch_related("annotations__annotator", "annotations__spans")
        .order_by("pk")
    )
    return list(items)


def pool_summaries() -> QuerySet[Pool]:
    return Pool.objects.annotate(
        n_items=Count("items", distinct=True),
        n_assignments=Count("assignments", distinct=True),
    ).order_by("-created_at")
