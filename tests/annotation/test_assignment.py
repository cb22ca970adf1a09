import copy
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Assignment
from annotation.services import annotation_submit
from annotation.services.assignment import AssignmentError, assignments_create
from tests.annotation.factories import annotator_named
from tests.factories import PoolFactory, PoolItemFactory

CELLS = [
    (m, d, s, p) for m in ("m1", "m2") for d in ("misgendered", "ruff") for s in ("pre", "post") for p in ("he", "xe")
]


@pytest.fixture(scope="module")
def pool_and_trio_built(module_db):
    """The study pool (16 cells x 5 items) and three annotators, built once per module (`module_db`): every test
    sees their rows, and its own writes roll back."""
    with module_db():
        pool = PoolFactory(name="study")
        for model, dataset, setting, pronoun in CELLS:  # 16 cells x 5 items
            for _ in range(5):
                PoolItemFactory(pool=pool, model_name=model, dataset=dataset, setting=setting, pronoun=pronoun)
        return pool, [annotator_named(name) for name in ("a1", "a2", "a3")]


@pytest.fixture
def pool(pool_and_trio_built, db):
    """The module's study pool, its record a copy for this test."""
    return copy.deepcopy(pool_and_trio_built[0])


@pytest.fixture
def trio(pool_and_trio_built, db):
    """The module's annotators a1, a2 and a3, their records copies for this test."""
    return copy.deepcopy(pool_and_trio_built[1])


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

    def test_it_keeps_every_holder_and_done_work_when_new_items_arrive(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=0, seed=1)
        pairs = set(Assignment.objects.values_list("item_id", "annotator_id"))
        new = [PoolItemFactory(pool=pool) for _ in range(4)]

        result = assignments_create(pool=pool, usernames=["a1", "a2"], overlap=0, seed=1)

        assert result.created == 4
        assert pairs <= set(Assignment.objects.values_list("item_id", "annotator_id"))
        assert set(Assignment.objects.filter(item__in=new).values_list("item_id", flat=True)) == {i.pk for i in new}
        for user in trio[:2]:
            positions = list(Assignment.objects.filter(annotator=user).values_list("position", flat=True))
            assert sorted(positions) == list(range(len(positions)))

    def test_it_raises_the_overlap_later_without_moving_existing_work(self, pool, trio):
        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=4, seed=1)
        pairs = set(Assignment.objects.values_list("item_id", "annotator_id"))

        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=10, seed=1)

        assert Counter(holders(pool).values()) == {1: 70, 2: 10}
        assert pairs <= set(Assignment.objects.values_list("item_id", "annotator_id"))


@pytest.mark.django_db
class TestRaters:
    def test_it_gives_each_overlap_item_the_asked_number_of_different_annotators(self, pool):
        names = ["r1", "r2", "r3", "r4"]
        for name in names:
            annotator_named(name)

        result = assignments_create(pool=pool, usernames=names, overlap=16, raters=3, seed=7)

        counts = holders(pool)
        assert Counter(counts.values()) == {1: 64, 3: 16}
        assert set(Counter(Assignment.objects.values_list("item_id", "annotator_id")).values()) == {1}
        loads = Counter(Assignment.objects.values_list("annotator__username", flat=True))
        assert sum(loads.values()) == 64 + 3 * 16 and max(loads.values()) - min(loads.values()) <= 1
        assert result.overlap_items == 16 and result.raters == 3

    def test_it_defaults_to_two_raters(self, pool, trio):
        assert assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=5, seed=1).raters == 2
        assert Counter(holders(pool).values()) == {1: 75, 2: 5}

    def test_it_keeps_workloads_level_with_three_raters_for_any_seed(self):
        names = ["r1", "r2", "r3", "r4"]
        for name in names:
            annotator_named(name)
        for seed in range(30):
            small = PoolFactory(name=f"raters-{seed}")
            for _ in range(8):
                PoolItemFactory(pool=small)

            assignments_create(pool=small, usernames=names, overlap=4, raters=3, seed=seed)  # 4 x 3 + 4 x 1

            loads = Counter(Assignment.objects.filter(pool=small).values_list("annotator__username", flat=True))
            assert sorted(loads.values()) == [4, 4, 4, 4], f"seed {seed}"

    def test_it_raises_the_raters_of_existing_overlap_items_on_a_rerun(self, pool):
        names = ["r1", "r2", "r3", "r4"]
        for name in names:
            annotator_named(name)
        assignments_create(pool=pool, usernames=names, overlap=8, seed=2)
        pairs = set(Assignment.objects.values_list("item_id", "annotator_id"))
        doubled = {item for item, n in holders(pool).items() if n == 2}

        assignments_create(pool=pool, usernames=names, overlap=8, raters=3, seed=2)

        assert {item for item, n in holders(pool).items() if n == 3} == doubled
        assert pairs <= set(Assignment.objects.values_list("item_id", "annotator_id"))

    def test_it_refuses_more_raters_than_annotators(self, pool, trio):
        with pytest.raises(AssignmentError, match="raters 4 needs at least 4 annotators; 3 named"):
            assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=2, raters=4)
        with pytest.raises(AssignmentError, match="raters must be at least 2"):
            assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=2, raters=1)
        assert not Assignment.objects.exists()


def queue_of(user, pool) -> list[Assignment]:
    return list(Assignment.objects.filter(pool=pool, annotator=user).select_related("item").order_by("position"))


@pytest.mark.django_db
class TestGoldAndTraining:
    def test_it_gives_every_annotator_every_gold_item_spread_through_the_queue(self, pool, trio):
        gold = [PoolItemFactory(pool=pool, kind="gold", gold_label="correct") for _ in range(10)]

        result = assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=0, seed=3)

        assert result.gold_items == 10
        ranks = []
        for user in trio:
            queue = queue_of(user, pool)
            assert {row.item_id for row in queue if row.item.kind == "gold"} == {item.pk for item in gold}
            ranks += [i / (len(queue) - 1) for i, row in enumerate(queue) if row.item.kind == "gold"]
        # 30 uniform ranks in [0, 1]: mean 0.5 with a standard error of about 0.05.
        assert 0.35 < sum(ranks) / len(ranks) < 0.65
        assert min(ranks) < 0.25 and max(ranks) > 0.75

    def test_gold_items_do_not_count_as_study_work(self, pool, trio):
        PoolItemFactory(pool=pool, kind="gold", gold_label="correct")

        result = assignments_create(pool=pool, usernames=["a1", "a2", "a3"], overlap=10, seed=3)

        study = Counter(Assignment.objects.filter(item__kind="study").values_list("annotator__username", flat=True))
        assert sum(study.values()) == 90 and max(study.values()) - min(study.values()) <= 1
        assert result.overlap_items == 10 and result.created == 90 + 3

    def test_it_puts_the_training_items_first_in_every_queue(self, pool, trio):
        training = [PoolItemFactory(pool=pool, kind="training", gold_label="correct") for _ in range(4)]
        PoolItemFactory(pool=pool, kind="gold", gold_label="misgendering")

        assignments_create(pool=pool, usernames=["a1", "a2"], overlap=0, seed=5)

        for user in trio[:2]:
            kinds = [row.item.kind for row in queue_of(user, pool)]
            assert kinds[:4] == ["training"] * 4 and "training" not in kinds[4:]
            assert {row.item_id for row in queue_of(user, pool)[:4]} == {item.pk for item in training}


@pytest.mark.django_db
class TestBlindingAcrossBatches:
    """Items assigned by a later run are shuffled into the open part of each queue; done work and the item in
    progress (the first open one) keep their places."""

    def test_later_items_are_spread_through_the_open_part_and_done_work_stays(self, trio):
        means = []
        for seed in range(5):
            pool = PoolFactory(name=f"batches-{seed}")
            for _ in range(60):
                PoolItemFactory(pool=pool)
            assignments_create(pool=pool, usernames=["a1", "a2"], seed=seed)
            for row in queue_of(trio[0], pool)[:10]:
                annotation_submit(user=trio[0], public_id=row.item.public_id, label="correct")
            before = {row.item_id: row.position for row in queue_of(trio[0], pool)}
            in_progress = queue_of(trio[0], pool)[10]
            later = {PoolItemFactory(pool=pool).pk for _ in range(30)}

            assignments_create(pool=pool, usernames=["a1", "a2"], seed=seed)

            queue = queue_of(trio[0], pool)
            assert [row.position for row in queue] == list(range(len(queue)))
            for row in queue[:10]:  # done work
                assert row.annotated and row.position == before[row.item_id]
            assert queue[10].pk == in_progress.pk and queue[10].position == in_progress.position
            open_part = queue[11:]
            ranks = [i / (len(open_part) - 1) for i, row in enumerate(open_part) if row.item_id in later]
            assert len(ranks) == 15
            means.append(sum(ranks) / len(ranks))
            # Not all at the end: some later item comes before some earlier one.
            assert min(ranks) < 0.5
        assert 0.4 < sum(means) / len(means) < 0.6

    def test_annotated_items_beyond_the_first_open_one_keep_their_places_too(self, trio):
        pool = PoolFactory(name="skipped")
        for _ in range(20):
            PoolItemFactory(pool=pool)
        assignments_create(pool=pool, usernames=["a1"], seed=1)
        queue = queue_of(trio[0], pool)
        for row in (queue[0], queue[5], queue[12]):  # done out of order (gone back and forth)
            annotation_submit(user=trio[0], public_id=row.item.public_id, label="correct")
        for _ in range(10):
            PoolItemFactory(pool=pool)

        result = assignments_create(pool=pool, usernames=["a1"], seed=1)

        after = {row.pk: row.position for row in queue_of(trio[0], pool)}
        for kept in (queue[0], queue[1], queue[5], queue[12]):  # three done, and queue[1], in progress
            assert after[kept.pk] == kept.position
        assert result.created == 10 and result.reordered > 0

    def test_training_items_added_later_come_right_after_the_item_in_progress(self, trio):
        pool = PoolFactory(name="late-training")
        for _ in range(20):
            PoolItemFactory(pool=pool)
        assignments_create(pool=pool, usernames=["a1"], seed=1)
        first = queue_of(trio[0], pool)[0]
        annotation_submit(user=trio[0], public_id=first.item.public_id, label="correct")
        for _ in range(3):
            PoolItemFactory(pool=pool, kind="training", gold_label="correct")

        assignments_create(pool=pool, usernames=["a1"], seed=1)

        kinds = [row.item.kind for row in queue_of(trio[0], pool)]
        assert kinds[2:5] == ["training"] * 3 and "training" not in kinds[:2] + kinds[5:]

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

    def test_it_takes_the_number_of_raters(self, pool, trio, capsys):
        call_command("assign", "--pool", "study", "--annotators", "a1,a2,a3", "--overlap", "8", "--raters", "3")

        assert "96 new assignments, 8 items with three annotators" in capsys.readouterr().out
        assert Counter(holders(pool).values()) == {1: 72, 3: 8}

    def test_it_names_an_unknown_pool(self, trio):
        with pytest.raises(CommandError, match="no pool named 'nope'"):
            call_command("assign", "--pool", "nope", "--annotators", "a1")


@pytest.mark.django_db
class TestAssignPage:
    def test_an_admin_can_ask_for_three_raters(self, client, admin_user, pool):
        for name in ("r1", "r2", "r3"):
            annotator_named(name)
        client.force_login(admin_user)

        response = client.post(
            "/pools/study/assign/", {"annotators": ["r1", "r2", "r3"], "overlap": 8, "raters": 3, "seed": 0}
        )

        assert response.status_code == 302
        assert Counter(holders(pool).values()) == {1: 72, 3: 8}

    def test_the_page_offers_the_raters_field(self, client, admin_user, pool):
        client.force_login(admin_user)

        html = client.get("/pools/study/assign/").content.decode()

        assert 'name="raters"' in html
