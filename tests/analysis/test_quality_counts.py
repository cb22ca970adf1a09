"""The quality dashboard's counts, computed in columns over the annotation frame, against the same counts made one
annotation at a time from the database, on a pool of four raters with study and gold items and missing verdicts."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from accounts.roles import ANNOTATOR
from analysis.metrics.multirater import fleiss_kappa, gwet_ac1
from analysis.selectors.quality import quality_dashboard
from annotation.models import GOLD, STUDY, Annotation
from tests.conftest import _person
from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

LABELS = ["correct", "misgendering", "no_pronoun"]


@pytest.fixture
def pool(db):
    rng = random.Random(7)
    pool = PoolFactory(labels=LABELS)
    people = [_person(f"rater{k}", ANNOTATOR) for k in range(4)]
    for i in range(24):
        gold = i % 6 == 0
        item = PoolItemFactory(
            pool=pool, kind=GOLD if gold else STUDY, gold_label=rng.choice(LABELS) if gold else "",
            heuristic_correct=[True, False, None][i % 3],
        )  # fmt: skip
        for person in rng.sample(people, rng.randint(1, 4)):
            AnnotationFactory(item=item, annotator=person, label=rng.choice(LABELS), seconds=rng.uniform(0.5, 9))
    return pool


def test_per_rater_counts_and_agreement_equal_those_counted_one_annotation_at_a_time(pool):
    data = quality_dashboard(pool=pool)
    rows = list(Annotation.objects.filter(item__pool=pool).select_related("item", "annotator"))
    by_rater = {row["annotator"]: row for row in data["annotator_quality"]}
    for name in {a.annotator.username for a in rows}:
        own = [a for a in rows if a.annotator.username == name]
        gold = [a for a in own if a.item.kind == GOLD]
        seconds = [a.seconds for a in own]
        assert by_rater[name]["items"] == sum(a.item.kind == STUDY for a in own)
        assert by_rater[name]["gold_n"] == len(gold)
        assert by_rater[name]["gold_correct"] == sum(a.label == a.item.gold_label for a in gold)
        assert by_rater[name]["median_seconds"] == float(np.median(seconds))
        heuristic = Counter(
            ("correct" if a.item.heuristic_correct else "misgendering", a.label)
            for a in own
            if a.item.kind == STUDY and a.item.heuristic_correct is not None
        )
        table = data["confusion_heuristic"][name]
        assert {(truth, label): n for truth, row in table.items() for label, n in row.items() if n} == heuristic
        gold_table = data["confusion_gold"][name]
        assert sum(gold_table[truth][label] for truth in LABELS for label in LABELS) == len(gold)
    items: dict[int, list[str]] = {}
    for a in sorted(rows, key=lambda a: a.item_id):
        if a.item.kind == STUDY:
            items.setdefault(a.item_id, []).append(a.label)
    ratings = list(items.values())
    expected = {**gwet_ac1(ratings, categories=LABELS), **fleiss_kappa(ratings, categories=LABELS)}
    assert expected["fleiss_n_items"] > 5
    for key in ("gwet_ac1", "gwet_ac1_ci", "fleiss_kappa", "fleiss_n_items"):
        assert data[key] == expected[key]


def test_the_kappa_matrix_is_cohens_kappa_of_each_pair_on_their_shared_items(pool):
    from sklearn.metrics import cohen_kappa_score

    data = quality_dashboard(pool=pool)
    matrix = data["kappa_matrix"]
    labels = {
        (a.annotator.username, a.item_id): a.label
        for a in Annotation.objects.filter(item__pool=pool, item__kind=STUDY).select_related("annotator")
    }
    names = matrix["annotators"]
    for i, a in enumerate(names):
        assert matrix["kappa"][i][i] is None
        for j, b in enumerate(names):
            if i == j:
                continue
            shared = sorted(item for (who, item) in labels if who == a and (b, item) in labels)
            assert matrix["n"][i][j] == len(shared)
            x, y = [labels[a, item] for item in shared], [labels[b, item] for item in shared]
            if len(shared) >= 2 and len(set(x) | set(y)) > 1 and matrix["kappa"][i][j] is not None:
                assert matrix["kappa"][i][j] == pytest.approx(cohen_kappa_score(x, y, labels=LABELS), abs=1e-12)
