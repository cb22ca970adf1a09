from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Assignment
from annotation.services.assignment import AssignmentError, assignments_create
from tests.annotation.factories import annotator_named
from tests.factories import PoolFactory, PoolItemFactory

CELLS = [
    (m, d, s, p) for m in ("m1", "m2") for d in ("misgendered", "ruff") for s in ("pre", "post") for p in ("he", "xe")
]


@pytest.fixture
def pool(db):
    pool = PoolFactory(name="study")
    for model, dataset, setting, pronoun in CELLS:  # 16 cells x 5 items
        for _ in range(5):
            PoolItemFactory(pool=pool, model_name=model, dataset=dataset, setting=setting, pronoun=pronoun)
    return pool


@pytest.fixture
def trio(db):
    return [annotator_named(name) for name in ("a1", "a2", "a3")]


def holders(pool) -> Counter:
    return Counter(Assignment.objects.filter(pool=pool).values_list("item_id", flat=True))


@pytest.mark.django_db
class TestAssign:
    def test_it_gives_every_item_one_annotator_and_the_overlap_two(self, pool, trio):
        result = assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=16, seed=1)

        counts = holders(pool)
        assert len(counts) == 80
        assert Counter(counts.values()) == {1: 64, 2: 16}
        assert result.created == 96 and result.overlap_items == 16

    def test_it_spreads_the_overlap_across_cells(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=16, seed=1)

        doubled = [item for item, n in holders(pool).items() if n == 2]
        cells = Counter(
            tuple(row)
            for row in pool.items.filter(pk__in=doubled).values_list("model_name", "dataset", "setting", "pronoun")
        )
        assert len(cells) == 16 and set(cells.values()) == {1}

    def test_it_never_gives_an_overlap_item_twice_to_one_person(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=30, seed=2)

        pairs = Counter(Assignment.objects.values_list("item_id", "annotator_id"))
        assert set(pairs.values()) == {1}

    def test_it_balances_workloads(self, pool, trio):
        result = assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=10, seed=3)

        loads = Counter(Assignment.objects.values_list("annotator__username", flat=True))
        assert sum(loads.values()) == 90
        assert max(loads.values()) - min(loads.values()) <= 1
        assert result.per_annotator == dict(loads)

    def test_it_balances_small_pools_with_overlap_for_any_seed(self, trio):
        # Regression: an overlap item's second unit handed out last could find only one eligible annotator.
        for seed in range(60):
            small = PoolFactory(name=f"small-{seed}")
            for _ in range(3):
                PoolItemFactory(pool=small)

            assignments_create(pool=small, usernames=["a1", "a2"], overlap=1, seed=seed)

            loads = Counter(Assignment.objects.filter(pool=small).values_list("annotator__username", flat=True))
            assert loads == {"a1": 2, "a2": 2}, f"seed {seed}"

    def test_it_orders_each_annotators_work_randomly_and_contiguously(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=0, seed=4)

        for user in trio[:2]:
            rows = list(
                Assignment.objects.filter(annotator=user).order_by("position").values_list("position", "item_id")
            )
            assert [p for p, _ in rows] == list(range(len(rows)))
            assert [i for _, i in rows] != sorted(i for _, i in rows)

    def test_it_does_not_duplicate_or_reshuffle_on_rerun(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=16, seed=1)
        before = set(Assignment.objects.values_list("item_id", "annotator_id", "position"))

        again = assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=16, seed=99)

        assert again.created == 0
        assert set(Assignment.objects.values_list("item_id", "annotator_id", "position")) == before

    def test_it_appends_new_items_after_existing_work(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=0, seed=1)
        before = set(Assignment.objects.values_list("item_id", "annotator_id", "position"))
        last = {u.pk: Assignment.objects.filter(annotator=u).count() for u in trio[:2]}
        new = [PoolItemFactory(pool=pool) for _ in range(4)]

        result = assignments_create(pool=pool, usernames=["a1", "a2"], overlap=0, seed=1)

        assert result.created == 4
        assert before <= set(Assignment.objects.values_list("item_id", "annotator_id", "position"))
        for row in Assignment.objects.filter(item__in=new):
            assert row.position >= last[row.annotator_id]

    def test_it_raises_the_overlap_later_without_moving_existing_work(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=4, seed=1)
        before = set(Assignment.objects.values_list("item_id", "annotator_id", "position"))

        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=10, seed=1)

        assert Counter(holders(pool).values()) == {1: 70, 2: 10}
        assert before <= set(Assignment.objects.values_list("item_id", "annotator_id", "position"))

    def test_it_rejects_bad_requests(self, pool, trio, researcher):
        with pytest.raises(AssignmentError, match="no such user: ghost"):
            assignments_create(pool=pool, usernames=["a1", "ghost"])
        with pytest.raises(AssignmentError, match="not annotators: rui_researcher"):
            assignments_create(pool=pool, usernames=["a1", "rui_researcher"])
        with pytest.raises(AssignmentError, match="overlap needs at least two annotators"):
            assignments_create(pool=pool, usernames=["a1"], overlap=3)
        with pytest.raises(AssignmentError, match="larger than the pool's 80 items"):
            assignments_create(pool=pool, usernames=["a1", "a2"], overlap=81)
        assert not Assignment.objects.exists()


@pytest.mark.django_db
class TestAssignCommand:
    def test_it_assigns_from_the_command_line(self, pool, trio, capsys):
        call_command("assign", "--pool", "study", "--annotators", "a1,a2,a3", "--overlap", "8", "--seed", "5")

        assert "88 new assignments, 8 items with two annotators" in capsys.readouterr().out
        assert Assignment.objects.count() == 88

    def test_it_names_an_unknown_pool(self, trio):
        with pytest.raises(CommandError, match="no pool named 'nope'"):
            call_command("assign", "--pool", "nope", "--annotators", "a1")
