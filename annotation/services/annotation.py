"""Saving an annotator's label for one item, in one transaction (docs/domain.md, 'The annotation schema' and
'Assignment and the annotator's queue')."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from django.db import connection, transaction
from django.db.models import Field, Model
from django.utils import timezone

from annotation.models import TRAINING, Annotation, Assignment, ExtraneousSpan, Pool, PoolItem, Referent, json_column
from annotation.referents import ReferentsRejected, referents_check
from annotation.schema import ALL_FLAGS, FLAG_SETS, TAGS
from annotation.selectors import FAILED, QualificationFailed, qualification_status
from annotation.services.stamp import pool_changed
from common.audit import CREATE, UPDATE, audit_record
from common.errors import ServiceError
from generation.models import Generation, Instance

MAX_SECONDS_PER_VISIT = 24 * 3600


class AnnotationRejected(ServiceError, ValueError):
    """The submission breaks a rule; `field` names the offending input, `status` the HTTP status it maps to."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status

    def body(self) -> dict[str, object]:
        return {"detail": str(self), "field": self.field}


class IdempotencyConflict(AnnotationRejected):
    """A save with the key of the save that last wrote the annotation, but a different answer (422): `conflicts`
    names the parts of the answer that differ. Replaying the old answer would silently lose the new one."""

    def __init__(self, message: str, *, conflicts: list[str]):
        super().__init__(message, field="idempotency_key", status=422)
        self.conflicts = conflicts

    def body(self) -> dict[str, object]:
        return {**super().body(), "conflicts": self.conflicts}


@dataclass(frozen=True)
class Submitted:
    item: str  # the item's public id
    annotation: Annotation
    spans: list[tuple[int, int]]  # as stored: distinct, sorted
    created: bool
    # Training items only: the expected answer and whether the label matched it (docs/domain.md, 'Assignment and
    # the annotator's queue'); None for every other item, gold included.
    feedback: dict | None = None
    replayed: bool = False  # a save sent again with the key of the one that last wrote the annotation: nothing written


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
    """The checks that need no database; returns the tags as stored (distinct, in the schema's order). Which flags
    the item's pool offers is checked with the pool (`_check_item`)."""
    unknown = [tag for tag in tags if tag not in ALL_FLAGS]
    if unknown:
        raise AnnotationRejected(
            f"unknown tag(s) {', '.join(map(repr, unknown))}; known: {', '.join(TAGS)}", field="tags"
        )
    if not 0 <= seconds <= MAX_SECONDS_PER_VISIT:
        raise AnnotationRejected(f"seconds must be between 0 and {MAX_SECONDS_PER_VISIT}", field="seconds")
    return sorted(set(tags), key=ALL_FLAGS.index)


# The save's statements: hand-written SQL, the same text on PostgreSQL and SQLite (table names from the models, values
# as parameters), because a measurement at human pace demands it (benchmarks/README.md, "Annotation API"): built
# by the ORM, the locking read alone (an assignment, an item and a pool instantiated, a subquery compiled) cost more
# than the rest of the request.
#
# The annotator's assignment of the item, with what the checks need, locked until the save commits (`FOR UPDATE OF`
# where the database has row locks; SQLite serialises whole transactions instead). Whether the pool has training items
# is asked with the kind as a literal, so that the index `pool_item_kind` answers at once.
_LOCK_SQL = """
SELECT a.id, a.annotated, i.id, i.kind, i.continuation, i.gold_label, i.gold_extraneous, i.explanation,
       p.labels, p.pass_mark, p.id, p.guideline_version, p.flags,
       EXISTS (SELECT 1 FROM {item} r WHERE r.pool_id = a.pool_id AND r.kind = '{training}'),
       EXISTS (SELECT 1 FROM {generation} g JOIN {instance} s ON s.id = g.instance_id
               WHERE g.id = i.generation_id AND s.distractors IS NOT NULL)
FROM {assignment} a
JOIN {item} i ON i.id = a.item_id
JOIN {pool} p ON p.id = a.pool_id
WHERE a.annotator_id = %s AND i.public_id = %s{lock}
"""

# One statement creates the annotation or updates the annotator's earlier one (time summed over visits), on both
# databases (SQLite >= 3.35 for RETURNING), and says which it did: an inserted row's two stamps are the same
# parameter, an updated row keeps its earlier `created_at`.
_UPSERT_SQL = """
INSERT INTO {annotation}
    (item_id, annotator_id, label, extraneous, notes, tags, idempotency_key, guideline_version, seconds, created_at,
     updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (item_id, annotator_id) DO UPDATE SET
    label = excluded.label, extraneous = excluded.extraneous, notes = excluded.notes, tags = excluded.tags,
    idempotency_key = excluded.idempotency_key, guideline_version = excluded.guideline_version,
    seconds = {annotation}.seconds + excluded.seconds, updated_at = excluded.updated_at
RETURNING id, seconds, created_at = updated_at
"""


@cache
def _sql() -> dict[str, str]:
    quote = connection.ops.quote_name
    tables = {
        "annotation": quote(Annotation._meta.db_table),
        "assignment": quote(Assignment._meta.db_table),
        "item": quote(PoolItem._meta.db_table),
        "pool": quote(Pool._meta.db_table),
        "span": quote(ExtraneousSpan._meta.db_table),
        "generation": quote(Generation._meta.db_table),
        "instance": quote(Instance._meta.db_table),
    }
    lock = f" {connection.ops.for_update_sql(of=('a',))}" if connection.features.has_select_for_update_of else ""
    return {
        "lock": _LOCK_SQL.format(**tables, training=TRAINING, lock=lock),
        "existing": (
            f"SELECT id, idempotency_key, label, extraneous FROM {tables['annotation']} "
            "WHERE item_id = %s AND annotator_id = %s"
        ),
        "upsert": _UPSERT_SQL.format(**tables),
        "mark": f"UPDATE {tables['assignment']} SET annotated = %s WHERE id = %s",
        # The old spans come back for the audit row (DELETE ... RETURNING: PostgreSQL, SQLite >= 3.35).
        "unspan": f"DELETE FROM {tables['span']} WHERE annotation_id = %s RETURNING start, {quote('end')}",
        "span": f"INSERT INTO {tables['span']} (annotation_id, start, {quote('end')}) VALUES ",
    }


@dataclass(frozen=True)
class _Locked:
    """The locked assignment's row: the annotator's assignment of the item, the item and its pool."""

    assignment_id: int
    annotated: bool
    item_id: int
    kind: str
    continuation: str
    gold_label: str
    gold_extraneous: bool | None
    explanation: str
    labels: list[str]
    pass_mark: float
    pool_id: int
    guideline_version: int | None
    flags: str
    pool_has_training: bool
    distractors: bool


def _locked_assignment(*, user, public_id: str) -> _Locked:
    """The annotator's assignment of the item, with the item and its pool, locked until the save commits.

    The lock serialises every save of one annotator's item (two tabs, a double click, a retry), so the `annotated`
    mark and the annotation read after it are the latest, committed by any save this one waited for; SQLite
    serialises whole transactions instead (IMMEDIATE). AnnotationRejected (404 or 403) when there is no such item or
    it is not the annotator's.
    """
    with connection.cursor() as cursor:
        cursor.execute(_sql()["lock"], [user.pk, public_id])
        row = cursor.fetchone()
    if row is not None:
        assignment_id, annotated, item_id, kind, continuation, gold_label, gold_extraneous, explanation, *pool = row
        labels, pass_mark, pool_id, guideline_version, flags, training, distractors = pool
        return _Locked(  # SQLite gives booleans as 0 and 1
            assignment_id=assignment_id,
            annotated=bool(annotated),
            item_id=item_id,
            kind=kind,
            continuation=continuation,
            gold_label=gold_label,
            gold_extraneous=None if gold_extraneous is None else bool(gold_extraneous),
            explanation=explanation,
            labels=json_column(Pool, "labels", labels),
            pass_mark=pass_mark,
            pool_id=pool_id,
            guideline_version=guideline_version,
            flags=flags,
            pool_has_training=bool(training),
            distractors=bool(distractors),
        )
    if not PoolItem.objects.filter(public_id=public_id).exists():
        raise AnnotationRejected(f"no item {public_id!r}", field="item", status=404)
    raise AnnotationRejected("this item is not assigned to you", field="item", status=403)


def _existing(*, locked: _Locked, user) -> tuple[int, str, str, bool] | None:
    """The annotator's annotation of the item (its id, idempotency key, label and extraneous flag: the last two for
    the audit row), read after the lock (so the latest committed), or None. Only an annotated assignment has one
    (the save sets both in one transaction)."""
    if not locked.annotated:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_sql()["existing"], [locked.item_id, user.pk])
        return cursor.fetchone()


def _check_item(
    *, locked: _Locked, user, label: str, extraneous: bool, spans: Sequence[Sequence[int]], tags: Sequence[str] = ()
) -> list[tuple[int, int]]:
    """The checks against the item and its pool; returns the spans as stored."""
    offered = FLAG_SETS[locked.flags]
    foreign = [tag for tag in tags if tag not in offered]
    if foreign:
        raise AnnotationRejected(
            f"tag(s) {', '.join(map(repr, foreign))} are not this pool's flags: {', '.join(offered)}", field="tags"
        )
    if locked.kind != TRAINING:
        if locked.pool_has_training:
            pool = Pool(pk=locked.pool_id, pass_mark=locked.pass_mark)
            qualification = qualification_status(pool=pool, annotator=user)
            if qualification["status"] == FAILED:
                raise QualificationFailed(qualification)
    elif locked.annotated:
        # The qualification score is made of first answers: the feedback shows the expected one.
        raise AnnotationRejected(
            "training answers cannot be changed once saved (you have seen the expected answer)",
            field="item",
            status=409,
        )
    if label not in locked.labels:
        raise AnnotationRejected(
            f"label {label!r} is not one of this pool's labels: {', '.join(locked.labels)}", field="label"
        )
    checked = _check_spans(spans, len(locked.continuation))
    if checked and not extraneous:
        raise AnnotationRejected("extraneous words are marked but extraneous is false", field="extraneous")
    return checked


def _referents(*, locked: _Locked, referents: Sequence) -> list[tuple[int, int, str, str]]:
    """The referents as stored: checked against the item's pronoun tokens on distractor items (docs/domain.md, 'RUFF
    with distractors'); none elsewhere, where sending any is an error (the same check, without loading the item when
    there is nothing to check)."""
    if not locked.distractors and not referents:
        return []
    item = PoolItem.objects.select_related("generation__instance").get(pk=locked.item_id)
    try:
        return referents_check(item=item, referents=referents)
    except ReferentsRejected as exc:
        raise AnnotationRejected(str(exc), field="referents") from None


@cache
def _prep(name: str, model: type[Model] = Annotation):
    """The model field's conversion of a Python value into what the database driver takes (JSON, datetimes)."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)  # a concrete column, not a relation's reverse side
    return lambda value: field.get_db_prep_save(value, connection)


def _audit(
    *,
    annotation_id: int,
    user,
    created: bool,
    old: tuple[str, bool] | None,
    old_spans: list[tuple[int, int]] | None,
    fields: dict,
    spans: list[tuple[int, int]],
    guideline_version: int | None,
    stamp,
) -> None:
    """The save's audit row: old and new label, extraneous flag and spans ([] for none; null old values for a new
    annotation), the guideline version in `additional_data`. No username: the actor is the user's id."""
    old_label, old_extraneous = old if old is not None else (None, None)
    changes = {
        "label": [old_label, fields["label"]],
        "extraneous": [None if old_extraneous is None else bool(old_extraneous), fields["extraneous"]],
        "spans": [None if old_spans is None else [list(span) for span in old_spans], [list(span) for span in spans]],
    }
    audit_record(
        event="annotation.save",
        obj=Annotation(pk=annotation_id),
        actor=user,
        action=CREATE if created else UPDATE,
        changes=changes,
        data={"guideline_version": guideline_version},
        object_repr=f"annotation {annotation_id}",
        timestamp=stamp,
    )


def _annotation_write(
    *,
    locked: _Locked,
    user,
    fields: dict,
    seconds: float,
    spans: list[tuple[int, int]],
    referents: list[tuple[int, int, str, str]],
    old: tuple[str, bool] | None = None,
) -> tuple[Annotation, bool]:
    """Create the annotation, or update the annotator's earlier one; then its spans, its referents and the `annotated`
    mark. True if created.

    The assignment's lock covers the annotation too: every save of it takes that lock first. This path is the mark's
    only writer besides `assign` (the admin is read-only), in the same transaction as the annotation. Spans and
    referents are deleted only from an earlier annotation (a new one has none) and inserted only when there are
    some; the mark is written only when it changes. The audit row (`_audit`) follows, with the old spans that
    their DELETE returned, and the pool's change stamp is bumped last (the report cache's key).
    """
    sql = _sql()
    now = timezone.now()
    stamp = _prep("created_at")(now)
    with connection.cursor() as cursor:
        cursor.execute(
            sql["upsert"],
            [
                locked.item_id,
                user.pk,
                fields["label"],
                fields["extraneous"],
                fields["notes"],
                _prep("tags")(fields["tags"]),
                fields["idempotency_key"],
                locked.guideline_version,
                seconds,
                stamp,
                stamp,
            ],
        )
        annotation_id, total_seconds, created = cursor.fetchone()
        old_spans = None
        if not created:
            cursor.execute(sql["unspan"], [annotation_id])
            old_spans = sorted((start, end) for start, end in cursor.fetchall())
        if spans:
            rows = ", ".join(["(%s, %s, %s)"] * len(spans))
            cursor.execute(sql["span"] + rows, [value for span in spans for value in (annotation_id, *span)])
        if not locked.annotated:
            cursor.execute(sql["mark"], [True, locked.assignment_id])
        _audit(
            annotation_id=annotation_id,
            user=user,
            created=bool(created),
            old=old,
            old_spans=old_spans,
            fields=fields,
            spans=spans,
            guideline_version=locked.guideline_version,
            stamp=now,  # the aware time: the ORM prepares it for the database itself
        )
        # Last, so that the pool's stamp row is locked only for the commit (every save in the pool bumps it).
        pool_changed(pools=[locked.pool_id])
    if locked.distractors:
        # Distractor items: one referent per pronoun token, replaced whole.
        if not created:
            Referent.objects.filter(annotation_id=annotation_id).delete()
        Referent.objects.bulk_create(
            Referent(annotation_id=annotation_id, start=start, end=end, word=word, referent=referent)
            for start, end, word, referent in referents
        )
    annotation = Annotation(
        id=annotation_id,
        item_id=locked.item_id,
        annotator_id=user.pk,
        seconds=total_seconds,
        updated_at=now,
        guideline_version=locked.guideline_version,
        **fields,
    )
    return annotation, bool(created)  # SQLite gives booleans as 0 and 1


def _feedback(*, locked: _Locked, label: str, extraneous: bool) -> dict | None:
    """A training item's answer, part by part: `correct` is the label's match (the score counts labels only);
    `extraneous_correct` the flag's, None where the item gives no expected flag."""
    if locked.kind != TRAINING:
        return None
    expected_extraneous = locked.gold_extraneous
    return {
        "expected_label": locked.gold_label,
        "expected_extraneous": expected_extraneous,
        "explanation": locked.explanation,
        "correct": label == locked.gold_label,
        "extraneous_correct": None if expected_extraneous is None else bool(extraneous) == expected_extraneous,
    }


def _replayed(
    *, annotation_id: int, public_id: str, locked: _Locked, fields: dict, spans: Sequence, referents: Sequence
) -> Submitted:
    """What is stored, for a save sent again with the key of the one that last wrote the annotation and the same
    answer (its time aside: the clock runs between tries). IdempotencyConflict when the answer differs."""
    annotation = Annotation.objects.get(pk=annotation_id)
    stored = [(start, end) for start, end in annotation.spans.values_list("start", "end")]
    conflicts = [name for name in ("label", "extraneous") if fields[name] != getattr(annotation, name)]
    if _check_spans(spans, len(locked.continuation)) != stored:
        conflicts.append("extraneous_spans")
    conflicts.extend(name for name in ("notes", "tags") if fields[name] != getattr(annotation, name))
    if (locked.distractors or referents) and _referents(locked=locked, referents=referents) != [
        (start, end, word, referent)
        for start, end, word, referent in annotation.referents.values_list("start", "end", "word", "referent")
    ]:
        conflicts.append("referents")
    if conflicts:
        raise IdempotencyConflict(
            f"Idempotency-Key {fields['idempotency_key']!r} was used for a different answer (it differs in "
            f"{', '.join(conflicts)}): nothing was saved; send a changed answer with a new key",
            conflicts=conflicts,
        )
    return Submitted(
        item=public_id,
        annotation=annotation,
        spans=stored,
        created=False,
        feedback=_feedback(locked=locked, label=annotation.label, extraneous=annotation.extraneous),
        replayed=True,
    )


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
    idempotency_key: str = "",
    referents: Sequence = (),
) -> Submitted:
    """Create or update `user`'s annotation of the item, its extraneous spans and the queue's `annotated` flag, in
    one transaction.

    The database allows one annotation per annotator and item; concurrent saves of one item by one annotator wait for
    each other on the assignment's row lock, so they neither duplicate nor lose work. Time is summed over visits. A
    save whose `idempotency_key` last wrote the annotation is a replay: it writes nothing and returns what is stored,
    or, when its answer differs, IdempotencyConflict (422) (docs/domain.md, "Assignment and the annotator's queue").
    Raises AnnotationRejected (400, 403, 404, 409, 422) or
    QualificationFailed (403) and then writes nothing.
    """
    tags = _check_input(tags=tags, seconds=seconds)
    fields = {
        "label": label,
        "extraneous": extraneous,
        "notes": notes,
        "tags": tags,
        "idempotency_key": idempotency_key,
    }
    with transaction.atomic():
        locked = _locked_assignment(user=user, public_id=public_id)
        existing = _existing(locked=locked, user=user)
        if idempotency_key and existing is not None and existing[1] == idempotency_key:
            return _replayed(
                annotation_id=existing[0],
                public_id=public_id,
                locked=locked,
                fields=fields,
                spans=spans,
                referents=referents,
            )
        checked = _check_item(locked=locked, user=user, label=label, extraneous=extraneous, spans=spans, tags=tags)
        resolved = _referents(locked=locked, referents=referents)
        annotation, created = _annotation_write(
            locked=locked,
            user=user,
            fields=fields,
            seconds=seconds,
            spans=checked,
            referents=resolved,
            old=(existing[2], existing[3]) if existing is not None else None,
        )
    return Submitted(
        item=public_id,
        annotation=annotation,
        spans=checked,
        created=created,
        feedback=_feedback(locked=locked, label=label, extraneous=extraneous),
    )
