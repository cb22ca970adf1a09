"""Reads for the annotation app.

Everything an annotator can load is built by `_payload`: the opaque id, the context, the generated
text, the place in their own queue and their own annotation. Nothing else about an item (model, dataset, heuristic,
other people's labels) leaves the server through it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache

from django.db import connection
from django.db.models import Count, QuerySet

from annotation.models import Annotation, Assignment, ExtraneousSpan, Pool, PoolItem, json_column

# The API's hot path: one statement finds the annotator's item (the first one not annotated, or one by id) with its
# text, the pool's labels, the annotator's own annotation and its place in their queue. The first open item is the
# first entry of the partial index `assignment_open`; place, length and done count come from one pass over the
# `assignment_queue` index (the `annotated` flag is in it), and the neighbours are one step along it either way.
# Walking the queue past the annotated items instead cost the database time in proportion to the work done
# (0.5 ms at 200 items), and numbering the whole queue with window functions about 5 ms. The annotator is a
# parameter in every part rather than a join to the first, so that each part is planned against its index.
# Table names come from the models, values are parameters.
_ITEM_SQL = """
WITH a AS (
    SELECT a.item_id, a.pool_id, a.position
    FROM {assignment} a
    WHERE a.annotator_id = %(user)s {scope_a} AND {pick}
    ORDER BY a.annotator_id, a.pool_id, a.position
    LIMIT 1
), c AS (
    SELECT SUM(CASE WHEN (b.pool_id, b.position) <= (a.pool_id, a.position) THEN 1 ELSE 0 END) AS place,
           COUNT(*) AS total,
           SUM(CASE WHEN b.annotated THEN 1 ELSE 0 END) AS done
    FROM {assignment} b CROSS JOIN a
    WHERE b.annotator_id = %(user)s {scope_b}
)
SELECT i.public_id, i.context, i.continuation, p.labels,
       c.place, c.total, c.done,
       (SELECT j.public_id FROM {assignment} b JOIN {item} j ON j.id = b.item_id
         WHERE b.annotator_id = %(user)s {scope_b}
           AND (b.annotator_id, b.pool_id, b.position) < (%(user)s, a.pool_id, a.position)
         ORDER BY b.annotator_id DESC, b.pool_id DESC, b.position DESC LIMIT 1) AS previous,
       (SELECT j.public_id FROM {assignment} b JOIN {item} j ON j.id = b.item_id
         WHERE b.annotator_id = %(user)s {scope_b}
           AND (b.annotator_id, b.pool_id, b.position) > (%(user)s, a.pool_id, a.position)
         ORDER BY b.annotator_id, b.pool_id, b.position LIMIT 1) AS following,
       n.id, n.label, n.extraneous, n.notes, n.tags
FROM a
CROSS JOIN c
JOIN {item} i ON i.id = a.item_id
JOIN {pool} p ON p.id = a.pool_id
LEFT JOIN {annotation} n ON n.item_id = a.item_id AND n.annotator_id = %(user)s
"""
# Literal, not a parameter: a prepared statement's generic plan can use the partial index only if the query itself
# implies the index's condition.
_NOT_ANNOTATED = "NOT a.annotated"
_BY_ID = "a.item_id = (SELECT id FROM {item} WHERE public_id = %(public_id)s)"


@cache
def _item_sql(*, pooled: bool, by_id: bool) -> str:
    scope = f"(SELECT id FROM {Pool._meta.db_table} WHERE name = %(pool)s)"
    tables = {
        "annotation": Annotation._meta.db_table,
        "assignment": Assignment._meta.db_table,
        "item": PoolItem._meta.db_table,
        "pool": Pool._meta.db_table,
    }
    return _ITEM_SQL.format(
        **tables,
        scope_a=f"AND a.pool_id = {scope}" if pooled else "",
        scope_b=f"AND b.pool_id = {scope}" if pooled else "",
        pick=(_BY_ID if by_id else _NOT_ANNOTATED).format(**tables),
    )


def _item_row(*, user, pool_name: str | None, public_id: str | None) -> tuple | None:
    sql = _item_sql(pooled=bool(pool_name), by_id=public_id is not None)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"user": user.pk, "pool": pool_name, "public_id": public_id})
        return cursor.fetchone()


def _payload(row: tuple | None) -> dict | None:
    """The annotator's view of one item: the only place an item is turned into something an annotator can load."""
    if row is None:
        return None
    public_id, context, continuation, labels, place, total, done, previous, following, *own = row
    annotation_id, label, extraneous, notes, tags = own
    annotation = None
    if annotation_id is not None:
        annotation = {
            "label": label,
            "extraneous": bool(extraneous),
            "extraneous_spans": [
                list(span)
                for span in ExtraneousSpan.objects.filter(annotation_id=annotation_id).values_list("start", "end")
            ],
            "notes": notes,
            "tags": list(json_column(Annotation, "tags", tags)),
        }
    return {
        "item": public_id,
        "context": context,
        "generation": continuation,
        "position": place,
        "total": total,
        "done": done,
        "labels": list(json_column(Pool, "labels", labels)),
        "previous": previous,
        "next": following,
        "annotation": annotation,
    }


def assignment_next(*, user, pool_name: str | None = None) -> dict | None:
    """The first item in the annotator's queue they have not annotated yet, or None when all are done."""
    return _payload(_item_row(user=user, pool_name=pool_name, public_id=None))


def assignment_item(*, user, public_id: str) -> dict | None:
    """One of the annotator's own items (for going back), placed in their whole queue; None if not theirs."""
    return _payload(_item_row(user=user, pool_name=None, public_id=public_id))


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
    assignments = Assignment.objects.filter(pool=pool)
    per_user: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_cell: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for username, done, *cell in assignments.values_list(
        "annotator__username", "annotated", "item__model_name", "item__dataset", "item__setting", "item__pronoun"
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
