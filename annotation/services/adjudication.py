"""A researcher's verdict on a study item whose annotators disagree; the annotators' own annotations stay untouched.

Each part is settled on its own: the pronoun label (blank: not adjudicated), the extraneous flag (None: not
adjudicated) and the marked words (None: not adjudicated; a list, possibly empty, replaces the annotators' sets).
"""

from __future__ import annotations

from django.db import transaction

from annotation.models import STUDY, Adjudication, PoolItem
from annotation.referents import ReferentsRejected, referents_check
from annotation.services.stamp import pool_changed
from common.audit import CREATE, UPDATE, audit_record
from common.errors import ServiceError


class AdjudicationError(ServiceError, ValueError):
    pass


def _clean_spans(item: PoolItem, spans) -> list[list[int]]:
    cleaned = set()
    for span in spans:
        try:
            start, end = (int(value) for value in span)
        except (TypeError, ValueError):
            raise AdjudicationError(f"a marked word is two character offsets [start, end], not {span!r}") from None
        if not 0 <= start < end <= len(item.continuation):
            raise AdjudicationError(
                f"marked word [{start}, {end}] is outside the generated text (0 to {len(item.continuation)} characters)"
            )
        cleaned.add((start, end))
    return [list(span) for span in sorted(cleaned)]


def adjudication_save(
    *,
    item: PoolItem,
    label: str = "",
    extraneous: bool | None = None,
    spans: list[list[int]] | list[tuple[int, int]] | None = None,
    notes: str = "",
    adjudicator=None,
    referents: list | None = None,
) -> Adjudication:
    """Store (or replace) the verdict on `item`: who settled it and when are kept beside it."""
    if item.kind != STUDY:
        raise AdjudicationError(f"{item.kind} items have a known answer and are not adjudicated")
    if label and label not in item.pool.labels:
        raise AdjudicationError(f"label {label!r} is not one of this pool's labels: {', '.join(item.pool.labels)}")
    cleaned = _clean_spans(item, spans) if spans is not None else None
    if extraneous is False and cleaned:
        raise AdjudicationError("marked words were kept but the extraneous flag was settled as no")
    # Distractor items: the verdict on the referents, one per pronoun token as an annotator gives them (None: not
    # adjudicated); stored as [[start, end, referent], ...] in code points.
    settled = None
    if referents is not None:
        try:
            settled = [
                [start, end, referent] for start, end, _, referent in referents_check(item=item, referents=referents)
            ]
        except ReferentsRejected as exc:
            raise AdjudicationError(str(exc)) from None
    if not label and extraneous is None and cleaned is None and settled is None and not notes.strip():
        raise AdjudicationError("nothing to save: settle the label, the extraneous flag or the marked words")
    with transaction.atomic():
        before = Adjudication.objects.select_for_update().filter(item=item).first()
        adjudication, created = Adjudication.objects.update_or_create(
            item=item,
            defaults={
                "label": label,
                "extraneous": extraneous,
                "spans": cleaned,
                "referents": settled,
                "notes": notes,
                "adjudicator": adjudicator,
            },
        )
        fields = ("label", "extraneous", "spans", "referents")
        audit_record(
            event="adjudication.save",
            obj=adjudication,
            actor=adjudicator,
            action=CREATE if created else UPDATE,
            changes={
                name: [getattr(before, name) if before is not None else None, getattr(adjudication, name)]
                for name in fields
            },
            data={"item": item.public_id, "pool": item.pool.name},
        )
        pool_changed(pools=[item.pool_id])
    return adjudication
