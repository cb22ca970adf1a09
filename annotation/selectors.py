"""Reads for the annotation app.

Everything an annotator can load is built by `annotator_item_payload`: the opaque id, the context, the generated
text, the place in their own queue and their own annotation. Nothing else about an item (model, dataset, heuristic,
other people's labels) leaves the server through it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Exists, OuterRef, QuerySet

from annotation.models import Annotation, Assignment, Pool, PoolItem


@dataclass(frozen=True)
class _Slot:
    assignment_id: int
    position: int  # 1-based place in the annotator's whole queue
    total: int
    done: int
    previous: str | None
    next: str | None


# The annotator's queue with each row's place, neighbours and the queue's counts, computed by the database in one
# pass (window functions), then narrowed to the one row asked for. The API's hot path: it used to materialise the
# whole queue in Python on every request. Table names come from the models, values are parameters.
_SLOT_SQL = """
WITH queue AS (
    SELECT a.id, i.public_id, a.pool_id, a.position,
           EXISTS (SELECT 1 FROM {annotation} n WHERE n.item_id = a.item_id AND n.annotator_id = a.annotator_id)
               AS annotated
    FROM {assignment} a JOIN {item} i ON i.id = a.item_id
    WHERE a.annotator_id = %s {pool_filter}
), placed AS (
    SELECT id, public_id, annotated,
           ROW_NUMBER() OVER w AS place,
           COUNT(*) OVER () AS total,
           SUM(CASE WHEN annotated THEN 1 ELSE 0 END) OVER () AS done,
           LAG(public_id) OVER w AS previous,
           LEAD(public_id) OVER w AS following
    FROM queue
    WINDOW w AS (ORDER BY pool_id, position)
)
SELECT id, place, total, done, previous, following FROM placed WHERE {pick} ORDER BY place LIMIT 1
"""


def _slot(*, user, pool_name: str | None, public_id: str | None) -> _Slot | None:
    params: list = [user.pk]
    pool_filter = ""
    if pool_name:
        pool_filter = f"AND a.pool_id = (SELECT id FROM {Pool._meta.db_table} WHERE name = %s)"
        params.append(pool_name)
    if public_id is None:
        pick = "NOT annotated"
    else:
        pick = "public_id = %s"
        params.append(public_id)
    sql = _SLOT_SQL.format(
        annotation=Annotation._meta.db_table,
        assignment=Assignment._meta.db_table,
        item=PoolItem._meta.db_table,
        pool_filter=pool_filter,
        pick=pick,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else _Slot(*row)


def annotator_item_payload(*, user, assignment: Assignment, slot: _Slot) -> dict:
    item = assignment.item
    own = Annotation.objects.filter(item=item, annotator=user).prefetch_related("spans").first()
    return {
        "item": item.public_id,
        "context": item.context,
        "generation": item.continuation,
        "position": slot.position,
        "total": slot.total,
        "done": slot.done,
        "labels": list(assignment.pool.labels),
        "previous": slot.previous,
        "next": slot.next,
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


def _payload_for(*, user, slot: _Slot | None) -> dict | None:
    if slot is None:
        return None
    assignment = Assignment.objects.select_related("item", "pool").get(pk=slot.assignment_id)
    return annotator_item_payload(user=user, assignment=assignment, slot=slot)


def assignment_next(*, user, pool_name: str | None = None) -> dict | None:
    """The first item in the annotator's queue they have not annotated yet, or None when all are done."""
    return _payload_for(user=user, slot=_slot(user=user, pool_name=pool_name, public_id=None))


def assignment_item(*, user, public_id: str) -> dict | None:
    """One of the annotator's own items (for going back), placed in their whole queue; None if not theirs."""
    return _payload_for(user=user, slot=_slot(user=user, pool_name=None, public_id=public_id))


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
