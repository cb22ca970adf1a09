"""Deleting a row with many dependent rows (a crowd-sized pool's 240,000 annotations) within PostgreSQL's 65,535
parameters a statement.

Django's delete collector reads every row that cascades from the deleted ones and then looks up their own dependents
with one `IN (...)` list of all their ids: past 65,535 ids PostgreSQL refuses the statement. `delete_in_batches`
deletes the dependents first, two levels down (a pool's annotations, then its items), `DELETE_BATCH` rows at a time
through the collector (so each batch's own dependents, signals and SET_NULLs are handled as Django handles them),
then the rows themselves; all in one transaction, so nothing is half-deleted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from django.db import models, transaction

DELETE_BATCH = 5_000  # rows a batch: its dependents' IN lists stay far below 65,535 parameters


def _cascades(model: type[models.Model]) -> list[tuple[type[models.Model], str]]:
    """The models whose rows are deleted with a row of `model` (on_delete CASCADE), each with the name of its field
    that points at `model`."""
    return [
        (relation.related_model, relation.field.name)
        for relation in model._meta.related_objects
        if relation.on_delete is models.CASCADE
        and not relation.many_to_many
        and isinstance(relation.related_model, type)  # never the string "self" once the models are loaded
    ]


def _delete_batched(queryset: models.QuerySet, counts: Counter) -> None:
    model = queryset.model
    while True:
        batch = list(queryset.order_by().values_list("pk", flat=True)[:DELETE_BATCH])
        if not batch:
            return
        counts.update(model._base_manager.filter(pk__in=batch).delete()[1])


def delete_in_batches(
    queryset: models.QuerySet, *, delete: Callable[[], tuple[int, dict[str, int]]]
) -> tuple[int, dict[str, int]]:
    """Delete the rows of `queryset` and every row that cascades from them, as `QuerySet.delete` does (its return
    value too): the rows two levels below first, then one level below, in batches, then the rows themselves by
    `delete()` (the plain delete of those rows)."""
    counts: Counter = Counter()
    model = queryset.model
    with transaction.atomic(using=queryset.db):
        ids = queryset.order_by().values("pk")
        for child, to_row in _cascades(model):
            for grandchild, to_child in _cascades(child):
                _delete_batched(grandchild._base_manager.filter(**{f"{to_child}__{to_row}__in": ids}), counts)
            _delete_batched(child._base_manager.filter(**{f"{to_row}__in": ids}), counts)
        counts.update(delete()[1])
    return sum(counts.values()), dict(counts)
