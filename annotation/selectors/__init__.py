"""Reads for the annotation app.

Everything an annotator can load is built by `_payload`: the opaque id, the context, the generated
text, the phase (training or not), the place in their own queue and their own annotation. Nothing else about an item
(model, dataset, heuristic, item kind beyond the phase, gold answers, other people's labels) leaves the server
through it: a gold item looks exactly like a study item (docs/domain.md, 'The annotation schema').
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q

from annotation.models import (
    TRAINING,
    Annotation,
    Assignment,
    ExtraneousSpan,
    Pool,
    PoolItem,
    Referent,
    json_column,
)
from annotation.referents import item_people
from common.errors import ServiceError
from generation.models import Generation, Instance

# Qualification (docs/domain.md, 'Assignment and the annotator's queue'): what `qualification_status` says about one annotator.
NOT_REQUIRED = "not_required"
IN_PROGRESS = "in_progress"
PASSED = "passed"
FAILED = "failed"


class QualificationFailed(ServiceError, PermissionError):
    """The annotator's training score is below the pool's pass mark: its study and gold items stay closed (403)."""

    status = 403

    def __init__(self, qualification: dict):
        self.qualification = qualification
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        q = self.qualification
        return (
            f"You labelled {q['correct']} of the {q['total']} training items as expected ({q['score']:.0%}); this pool "
            f"needs {q['pass_mark']:.0%} before its items open. Ask the researcher who runs it for a new training round."
        )

    def body(self) -> dict:
        """The API's 403 body, the same for every refused request."""
        return {"detail": self.detail, "qualification": self.qualification}


def qualification_from_counts(*, total: int, done: int, correct: int, pass_mark: float) -> dict:
    """The qualification dict from the annotator's training counts: items assigned, saved, and labelled as expected.

    The score is known once every training item is saved; until then it is None.
    """
    if total == 0:
        status = NOT_REQUIRED
    elif done < total:
        status = IN_PROGRESS
    else:
        status = PASSED if correct / total >= pass_mark else FAILED
    score = round(correct / total, 4) if total and done >= total else None
    return {"status": status, "correct": correct, "total": total, "score": score, "pass_mark": pass_mark}


def qualification_statuses(*, pool: Pool) -> dict[str, dict]:
    """`qualification_status` for every annotator with work in the pool, by username, in three queries."""
    expected = {
        (username, item_id): label
        for username, item_id, label in Assignment.objects.filter(pool=pool, item__kind=TRAINING).values_list(
            "annotator__username", "item_id", "item__gold_label"
        )
    }
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # total, done, correct
    for username, _ in expected:
        counts[username][0] += 1
    given = Annotation.objects.filter(item__pool=pool, item__kind=TRAINING).values_list(
        "annotator__username", "item_id", "label"
    )
    for username, item_id, label in given:
        if (username, item_id) in expected:
            counts[username][1] += 1
            counts[username][2] += label == expected[username, item_id]
    usernames = Assignment.objects.filter(pool=pool).values_list("annotator__username", flat=True)
    return {
        username: qualification_from_counts(
            total=counts[username][0], done=counts[username][1], correct=counts[username][2], pass_mark=pool.pass_mark
        )
        for username in set(usernames)
    }


def qualification_status(*, pool: Pool, annotator) -> dict:
    """{"status": "not_required" | "in_progress" | "passed" | "failed", "correct", "total", "score", "pass_mark"}.

    Over the pool's training items assigned to the annotator: `correct` counts their saved labels equal to the
    expected one; the score is correct / total once all are saved.
    """
    own = Annotation.objects.filter(item=OuterRef("item"), annotator=annotator)
    counts = Assignment.objects.filter(annotator=annotator, pool=pool, item__kind=TRAINING).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Exists(own)),
        correct=Count("pk", filter=Exists(own.filter(label=OuterRef("item__gold_label")))),
    )
    return qualification_from_counts(**counts, pass_mark=pool.pass_mark)


# The annotator API's hot path, in hand-written SQL because a measurement at human pace demands it
# (benchmarks/README.md, "Annotation API"): the same reads built by the ORM cost the server several times the CPU
# per request, mostly in compiling the query, and 200 annotators at human pace then saturate 2 cores.
#
# One statement finds the annotator's item (the first one not annotated, or one by id) with its text, the pool's
# labels, whether it has distractors, the annotator's own annotation, its place in their queue and their training
# counts in the item's pool. The first open item is the first entry of the partial index `assignment_open`; place,
# length and done count come from one pass over the `assignment_queue` index, and the neighbours are one step along
# it either way. The training counts read the pool's training items through the index `pool_item_kind`, so a pool
# without any pays one empty index probe. The annotator is a parameter in every part rather than a join to the
# first, so that each part is planned against its index. Table names come from the models, values are parameters.
_QUEUE_ITEM_SQL = """
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
), t AS (
    SELECT COUNT(*) AS total, COUNT(m.id) AS done,
           SUM(CASE WHEN m.label = r.gold_label THEN 1 ELSE 0 END) AS correct
    FROM a
    JOIN {item} r ON r.pool_id = a.pool_id AND r.kind = '{training}'
    JOIN {assignment} b ON b.item_id = r.id AND b.annotator_id = %(user)s
    LEFT JOIN {annotation} m ON m.item_id = r.id AND m.annotator_id = %(user)s
)
SELECT i.public_id, i.context, i.continuation, i.kind, p.labels, p.pass_mark,
       c.place, c.total, c.done, t.total, t.done, t.correct,
       (SELECT j.public_id FROM {assignment} b JOIN {item} j ON j.id = b.item_id
         WHERE b.annotator_id = %(user)s {scope_b}
           AND (b.annotator_id, b.pool_id, b.position) < (%(user)s, a.pool_id, a.position)
         ORDER BY b.annotator_id DESC, b.pool_id DESC, b.position DESC LIMIT 1) AS previous,
       (SELECT j.public_id FROM {assignment} b JOIN {item} j ON j.id = b.item_id
         WHERE b.annotator_id = %(user)s {scope_b}
           AND (b.annotator_id, b.pool_id, b.position) > (%(user)s, a.pool_id, a.position)
         ORDER BY b.annotator_id, b.pool_id, b.position LIMIT 1) AS following,
       i.id, s.distractors,
       n.id, n.label, n.extraneous, n.notes, n.tags
FROM a
CROSS JOIN c
CROSS JOIN t
JOIN {item} i ON i.id = a.item_id
JOIN {pool} p ON p.id = a.pool_id
LEFT JOIN {generation} g ON g.id = i.generation_id
LEFT JOIN {instance} s ON s.id = g.instance_id
LEFT JOIN {annotation} n ON n.item_id = a.item_id AND n.annotator_id = %(user)s
"""
# Literal, not a parameter: a generic plan can use the partial index only if the query itself implies its condition.
_NOT_ANNOTATED = "NOT a.annotated"
_BY_ID = "a.item_id = (SELECT id FROM {item} WHERE public_id = %(public_id)s)"


@cache
def _queue_item_sql(*, pooled: bool, by_id: bool) -> str:
    quote = connection.ops.quote_name
    tables = {
        "annotation": quote(Annotation._meta.db_table),
        "assignment": quote(Assignment._meta.db_table),
        "item": quote(PoolItem._meta.db_table),
        "pool": quote(Pool._meta.db_table),
        "generation": quote(Generation._meta.db_table),
        "instance": quote(Instance._meta.db_table),
    }
    scope = f"(SELECT id FROM {tables['pool']} WHERE name = %(pool)s)"
    return _QUEUE_ITEM_SQL.format(
        **tables,
        training=TRAINING,
        scope_a=f"AND a.pool_id = {scope}" if pooled else "",
        scope_b=f"AND b.pool_id = {scope}" if pooled else "",
        pick=(_BY_ID if by_id else _NOT_ANNOTATED).format(**tables),
    )


def _own_annotation(*, annotation_id: int, label: str, extraneous, notes: str, tags, distractors: bool) -> dict:
    own = {
        "label": label,
        "extraneous": bool(extraneous),  # SQLite gives booleans as 0 and 1
        "extraneous_spans": [
            list(span)
            for span in ExtraneousSpan.objects.filter(annotation_id=annotation_id).values_list("start", "end")
        ],
        "notes": notes,
        "tags": list(json_column(Annotation, "tags", tags)),
    }
    if distractors:
        own["referents"] = [
            {"start": start, "end": end, "referent": referent}
            for start, end, referent in Referent.objects.filter(annotation_id=annotation_id).values_list(
                "start", "end", "referent"
            )
        ]
    return own


def _payload(*, user, pool_name: str | None, public_id: str | None) -> dict | None:
    """The annotator's view of one item (the first open one, or the one named): the only place an item is turned into
    something an annotator can load.

    Raises QualificationFailed for a study or gold item of a pool whose training the annotator failed.
    """
    sql = _queue_item_sql(pooled=bool(pool_name), by_id=public_id is not None)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"user": user.pk, "pool": pool_name, "public_id": public_id})
        row = cursor.fetchone()
    if row is None:
        return None
    public_id, context, continuation, kind, labels, pass_mark, place, total, done, *rest = row
    training_total, training_done, training_correct, previous, following, item_id, distractors, *own = rest
    if kind != TRAINING:
        qualification = qualification_from_counts(
            total=training_total, done=training_done, correct=training_correct or 0, pass_mark=pass_mark
        )
        if qualification["status"] == FAILED:
            raise QualificationFailed(qualification)
    annotation_id, label, extraneous, notes, tags = own
    annotation = None
    if annotation_id is not None:
        annotation = _own_annotation(
            annotation_id=annotation_id,
            label=label,
            extraneous=extraneous,
            notes=notes,
            tags=tags,
            distractors=distractors is not None,
        )
    # Distractor items only: both people (target marked) and the pronoun tokens that need a referent.
    people = None
    if distractors is not None:
        people = item_people(PoolItem.objects.select_related("generation__instance__template").get(pk=item_id))
    return {
        "item": public_id,
        "context": context,
        "generation": continuation,
        # Gold items say "study" too: only the qualification round is shown as such.
        "phase": "training" if kind == TRAINING else "study",
        "position": place,
        "total": total,
        "done": done,
        "labels": list(json_column(Pool, "labels", labels)),
        "previous": previous,
        "next": following,
        "annotation": annotation,
        **(people or {}),
    }


def assignment_next(*, user, pool_name: str | None = None) -> dict | None:
    """The first item in the annotator's queue (within `pool_name` when given: place, total and done too) that they
    have not annotated yet, or None when all are done. QualificationFailed if it is closed to them."""
    return _payload(user=user, pool_name=pool_name, public_id=None)


def assignment_item(*, user, public_id: str, pool_name: str | None = None) -> dict | None:
    """One of the annotator's own items (for going back), placed in their whole queue, or in the named pool's part of
    it; None if not theirs (or not in that pool). QualificationFailed if it is closed to them."""
    return _payload(user=user, pool_name=pool_name, public_id=public_id)


@dataclass
class AnnotatorPool:
    """One pool of an annotator's work, with their own progress in it (the pool picker of /annotate/)."""

    name: str
    assigned: int
    done: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assigned) if self.assigned else 0


def annotator_pools(*, user) -> list[AnnotatorPool]:
    """The pools in which the annotator has work, by name, with the same done count as the pool-scoped next."""
    rows = (
        Assignment.objects.filter(annotator=user)
        .values("pool__name")
        .annotate(assigned=Count("pk"), done=Count("pk", filter=Q(annotated=True)))
        .order_by("pool__name")
    )
    return [AnnotatorPool(name=row["pool__name"], assigned=row["assigned"], done=row["done"]) for row in rows]
