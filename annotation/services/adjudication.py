"""A researcher's verdict on an overlap item; the annotators' own labels are kept untouched."""

from __future__ import annotations

from annotation.models import Adjudication, PoolItem


class AdjudicationError(ValueError):
    pass


def adjudication_save(
    *, item: PoolItem, label: str, extraneous: bool | None, notes: str = "", adjudicator=None
) -> Adjudication:
    if label not in item.pool.labels:
        raise AdjudicationError(f"label {label!r} is not one of this pool's labels: {', '.join(item.pool.labels)}")
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item, defaults={"label": label, "extraneous": extraneous, "notes": notes, "adjudicator": adjudicator}
    )
    return adjudication
