"""Deleting a pool deletes every row of its, however many (common/deletion.py): a crowd-sized pool's annotations are
past the 65,535 parameters PostgreSQL takes in one statement, which Django's delete collector would pass at once."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from annotation.models import Annotation, Assignment, ExtraneousSpan, Pool, PoolItem, Referent
from common import deletion
from tests.annotation.test_crowd_pool import crowd_pool


def _small_pool(name: str, *, items: int, raters: int) -> Pool:
    pool = Pool.objects.create(name=name, labels=["misgendering", "correct"])
    rows = PoolItem.objects.bulk_create(
        [
            PoolItem(pool=pool, model_name="m", dataset="d", setting="free", pronoun="", template="",
                     context=f"C{i}. ", continuation=f"Text {i}.", external_id=f"{name}-{i}")
            for i in range(items)
        ]
    )  # fmt: skip
    people = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"{name}.r{a}", is_active=False) for a in range(raters)]
    )
    for position, item in enumerate(rows):
        Assignment.objects.bulk_create(
            [Assignment(pool=pool, item=item, annotator=person, position=position) for person in people]
        )
    made = Annotation.objects.bulk_create(
        [Annotation(item=item, annotator=person, label="correct") for person in people for item in rows]
    )
    Referent.objects.bulk_create(
        [Referent(annotation=annotation, start=0, end=4, word="Text", referent=Referent.TARGET) for annotation in made]
    )
    ExtraneousSpan.objects.bulk_create([ExtraneousSpan(annotation=annotation, start=0, end=4) for annotation in made])
    return pool


def _rows(pool_id: int) -> dict[str, int]:
    return {
        "items": PoolItem.objects.filter(pool_id=pool_id).count(),
        "assignments": Assignment.objects.filter(pool_id=pool_id).count(),
        "annotations": Annotation.objects.filter(item__pool_id=pool_id).count(),
        "referents": Referent.objects.filter(annotation__item__pool_id=pool_id).count(),
        "spans": ExtraneousSpan.objects.filter(annotation__item__pool_id=pool_id).count(),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["instance", "queryset"])
def test_a_pool_is_deleted_in_batches_with_every_row_of_its_and_no_other(monkeypatch, how):
    monkeypatch.setattr(deletion, "DELETE_BATCH", 7)  # many batches of each table
    doomed, kept = _small_pool("doomed", items=5, raters=4), _small_pool("kept", items=3, raters=2)
    doomed_id = doomed.pk
    before = _rows(kept.pk)

    total, counts = doomed.delete() if how == "instance" else Pool.objects.filter(name="doomed").delete()

    assert not Pool.objects.filter(pk=doomed_id).exists()
    assert _rows(doomed_id) == dict.fromkeys(before, 0)
    assert _rows(kept.pk) == before == {"items": 3, "assignments": 6, "annotations": 6, "referents": 6, "spans": 6}
    # Django's own count: the pool, 5 items, 20 assignments, 20 annotations, 20 referents and 20 spans.
    assert counts["annotation.Pool"] == 1 and counts["annotation.PoolItem"] == 5
    assert counts["annotation.Assignment"] == counts["annotation.Annotation"] == 20
    assert counts["annotation.Referent"] == counts["annotation.ExtraneousSpan"] == 20
    assert total == sum(counts.values())


@pytest.mark.slow  # 66,000 annotations written and deleted
@pytest.mark.django_db
def test_a_pool_past_postgresqls_65535_parameters_is_deleted():
    if connection.vendor != "postgresql":
        pytest.skip("the bound is PostgreSQL's")
    pool = crowd_pool(items=110, raters=600)  # 66,000 annotations: one list of their ids is past the bound
    pool_id = pool.pk

    total, counts = Pool.objects.filter(pk=pool_id).delete()

    assert counts["annotation.Annotation"] == 66_000 and counts["annotation.PoolItem"] == 110
    assert (
        not Annotation.objects.filter(item__pool_id=pool_id).exists() and not Pool.objects.filter(pk=pool_id).exists()
    )
