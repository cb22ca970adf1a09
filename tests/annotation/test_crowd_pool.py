"""A crowd-sized pool (docs/domain.md, "Bring your own study"): hundreds of raters per item, as a Prolific study of
that size makes. Its exports stream every annotation, and adjudication reads it, with no query past PostgreSQL's
65,535 parameters; its aggregates are defined however many ratings an item has; the label pattern
`labels[(a*7+i)%3]` (no item with a majority) aggregates on a small pool as crowd-kit's own models do."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import ORIGIN_IMPORTED, Annotation, Pool, PoolItem
from annotation.selectors import mace
from annotation.selectors.aggregate import ratings_aggregate
from annotation.selectors.research import pool_disagreements
from common.frames import pd
from common.rows import rows_write

LABELS = ["misgendering", "correct", "no_pronoun"]


def crowd_pool(*, items: int, raters: int) -> Pool:
    """`raters` imported raters who each label every one of `items` items, rater a's label of item i being
    labels[(a*7+i)%3]; the annotations written as plain rows (`common.rows`: COPY on PostgreSQL), not as objects."""
    pool = Pool.objects.create(name="crowd", labels=LABELS)
    rows = PoolItem.objects.bulk_create(
        [
            PoolItem(
                pool=pool, model_name="m", dataset="mystudy", setting="free", pronoun="", template="",
                context=f"Context {i}. ", continuation=f"Text {i}.", external_id=f"item-{i}",
            )
            for i in range(items)
        ]
    )  # fmt: skip
    people = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"imported.crowd.r{a}", is_active=False) for a in range(raters)]
    )
    rows_write(
        Annotation,
        ("item_id", "annotator_id", "label", "origin"),
        (
            (item.pk, person.pk, LABELS[(a * 7 + i) % 3], ORIGIN_IMPORTED)
            for a, person in enumerate(people)
            for i, item in enumerate(rows)
        ),
    )
    return pool


@pytest.mark.slow  # 66,000 annotations written and read three times
@pytest.mark.django_db
def test_it_exports_and_adjudicates_a_pool_past_postgresqls_65535_parameters(researcher, tmp_path):
    pool = crowd_pool(items=110, raters=600)  # 66,000 annotations: one list of their ids is past the bound
    api = APIClient()
    api.force_authenticate(researcher)

    response = api.get(f"/api/pools/{pool.name}/annotations/?format=csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    call_command("export_annotations", "--pool", pool.name, "--out", str(tmp_path / "all.jsonl"), stdout=io.StringIO())
    disagreements = pool_disagreements(pool=pool)

    assert response.status_code == 200 and response.streaming
    assert len(rows) == 66_000
    assert rows[0]["n_annotations"] == "600" and [row["annotation_order"] for row in rows[:3]] == ["1", "2", "3"]
    assert {row["label"] for row in rows if row["item_id"] == rows[0]["item_id"]} == set(LABELS)
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 66_000
    assert len(disagreements) == 110 and all(len(row.annotations) == 600 for row in disagreements)


def _ratings(items: int, raters: int) -> pd.DataFrame:
    rows = [(i, f"r{a:03d}", LABELS[(a * 7 + i) % 3]) for a in range(raters) for i in range(items)]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def test_the_pattern_aggregates_on_a_small_pool_as_crowd_kits_own_models_do():
    from crowdkit.aggregation import MACE, DawidSkene

    ratings = _ratings(items=6, raters=9)

    ours = ratings_aggregate(ratings=ratings)

    theirs_mace = MACE(n_restarts=1, random_state=0).fit_predict(ratings)
    theirs_ds = DawidSkene(n_iter=100).fit_predict(ratings)
    assert ours["mace"].tolist() == theirs_mace.reindex(ours.index).tolist()
    assert ours["dawid_skene"].tolist() == theirs_ds.reindex(ours.index).tolist()
    assert (ours["n_ratings"] == 9).all()


def test_mace_computed_in_logarithms_gives_crowd_kits_numbers(monkeypatch):
    """The path a task with hundreds of ratings takes, forced on every task of a small pool: the same posteriors as
    crowd-kit's MACE (which computes them as plain products)."""
    from crowdkit.aggregation import MACE

    rng = np.random.default_rng(3)
    ratings = pd.DataFrame(
        [(i, f"r{a}", LABELS[int(rng.integers(3))]) for a in range(7) for i in range(20)],
        columns=["task", "worker", "label"],
    )
    monkeypatch.setattr(mace, "SCALED_BELOW", 1.0)  # every task's marginals from their logarithms

    ours = mace.ArrayMACE(n_restarts=1, random_state=0).fit(ratings)

    theirs = MACE(n_restarts=1, random_state=0).fit(ratings)
    assert np.allclose(ours.probas_.to_numpy(), theirs.probas_.loc[ours.probas_.index, ours.probas_.columns], atol=1e-9)


def test_an_item_with_hundreds_of_ratings_has_every_aggregate():
    """crowd-kit's MACE multiplies one factor per rating: past about 600 ratings the product is 0 and its posteriors
    NaN ('Encountered all NA values'). With 700 raters of whom 80% give an item's true label, every model finds it."""
    rng = np.random.default_rng(5)
    truth = {i: LABELS[i % 3] for i in range(4)}
    ratings = pd.DataFrame(
        [
            (i, f"r{a}", truth[i] if rng.random() < 0.8 else LABELS[int(rng.integers(3))])
            for a in range(700)
            for i in truth
        ],
        columns=["task", "worker", "label"],
    )

    aggregated = ratings_aggregate(ratings=ratings)

    for model in ("majority", "dawid_skene", "mace"):
        assert aggregated[model].to_dict() == truth, model
    assert aggregated["dawid_skene_posterior"].between(0, 1).all()
