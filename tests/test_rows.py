"""`common.rows.rows_write`: plain tuples written as the ORM would write the same rows (defaults, a database default,
`auto_now` times), on either database."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import ORIGIN_IMPORTED, Annotation
from common.rows import INSERT_BATCH, rows_write
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = pytest.mark.django_db


def test_the_rows_read_back_as_given_and_the_other_columns_as_their_defaults(annotator):
    items = [PoolItemFactory(pool=PoolFactory()) for _ in range(3)]
    before = timezone.now()

    rows_write(Annotation, ("item_id", "annotator_id", "label"), ((item.pk, annotator.pk, "correct") for item in items))

    written = list(Annotation.objects.order_by("pk"))
    assert [(a.item_id, a.annotator_id, a.label) for a in written] == [(i.pk, annotator.pk, "correct") for i in items]
    for annotation in written:
        saved = Annotation(item=annotation.item, annotator=annotation.annotator, label="correct")
        assert (annotation.extraneous, annotation.notes, annotation.tags, annotation.seconds) == (
            saved.extraneous, saved.notes, saved.tags, saved.seconds
        )  # fmt: skip
        assert (annotation.idempotency_key, annotation.guideline_version, annotation.origin) == ("", None, "concord")
        assert before <= annotation.created_at == annotation.updated_at <= timezone.now()


def test_a_given_column_overrides_its_default_and_batches_past_one_insert_all_arrive():
    item = PoolItemFactory(pool=PoolFactory())
    people = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"rater{n}") for n in range(INSERT_BATCH + 3)]
    )

    rows_write(
        Annotation,
        ("annotator_id", "item_id", "label", "origin", "tags"),
        ((person.pk, item.pk, "misgendering", ORIGIN_IMPORTED, json.dumps(["t"])) for person in people),
    )

    assert Annotation.objects.filter(item=item, origin=ORIGIN_IMPORTED, tags=["t"]).count() == len(people)


def test_an_unknown_column_is_named_and_nothing_is_written(annotator):
    item = PoolItemFactory(pool=PoolFactory())
    with pytest.raises(ValueError, match=r"annotation\.Annotation has no column colour"):
        rows_write(Annotation, ("item_id", "annotator_id", "colour"), [(item.pk, annotator.pk, "red")])
    assert not Annotation.objects.exists()
