"""Reads for the annotation app.

Everything an annotator can load is built by `annotator_item_payload`: the opaque id, the context, the generated
text, the place in their own queue and their own annotation. Nothing else about an item (model, dataset, heuristic,
other people's labels) leaves the server through it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, QuerySet

from annotation.models import Annotation, Assignment, Pool, PoolItem


def assignment_queue(*, user, pool_name: str | None = None) -> QuerySet[Assignment]:
    """The annotator's work in the order they see it: pool by pool, then their own random position."""
    queue = Assignment.objects.filter(annotator=user)
    if pool_name:
        queue = queue.filter(pool__name=pool_name)
    return queue.order_by("pool_id", "position")


def _annotated(user) -> Exists:
    return Exists(Annotation.objects.filter(item_id=OuterRef("item_id"), annotator=user))


@dataclass(frozen=True)
class _Slot:
    assignment_id: int
    public_id: str
    annotated: bool


def _slots(queue: QuerySet[Assignment], user) -> list[_Slot]:
    """The whole queue in one query (a few hundred narrow rows): positions, neighbours and counts come from it."""
    rows = queue.annotate(annotated=_annotated(user)).values_list("pk", "item__public_id", "annotated")
    return [_Slot(*row) for row in rows]


def annotator_item_payload(*, user, assignment: Assignment, slots: list[_Slot]) -> dict:
    item = assignment.item
    index = next(i for i, slot in enumerate(slots) if slot.assignment_id == assignment.pk)
    own = None
    if slots[index].annotated:
        own = Annotation.objects.filter(item=item, annotator=user).prefetch_related("spans").first()
    return {
        "item": item.public_id,
        "context": item.context,
        "generation": item.continuation,
        "position": index + 1,
        "total": len(slots),
        "done": sum(slot.annotated for slot in slots),
        "labels": list(assignment.pool.labels),
        "previous": slots[index - 1].public_id if index > 0 else None,
        "next": slots[index + 1].public_id if index + 1 < len(slots) else None,
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


def _payload_for(*, user, queue: QuerySet[Assignment], pick) -> dict | None:
    slots = _slots(queue, user)
    slot = pick(slots)
    if slot is None:
        return None
    assignment = Assignment.objects.select_related("item", "pool").get(pk=slot.assignment_id)
    return annotator_item_payload(user=user, assignment=assignment, slots=slots)


def assignment_next(*, user, pool_name: str | None = None) -> dict | None:
    """The first item in the annotator's queue they have not annotated yet, or None when all are done."""
    queue = assignment_queue(user=user, pool_name=pool_name)
    return _payload_for(user=user, queue=queue, pick=lambda slots: next((s for s in slots if not s.annotated), None))


def assignment_item(*, user, public_id: str) -> dict | None:
    """One of the annotator's own items (for going back), placed in their whole queue; None if not theirs."""
    queue = assignment_queue(user=user)
    return _payload_for(
        user=user, queue=queue, pick=lambda slots: next((s for s in slots if s.public_id == public_id), None)
    )


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
