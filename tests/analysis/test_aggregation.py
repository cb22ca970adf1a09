"""Label aggregation per item (majority, Dawid-Skene, MACE) against crowd-kit, its export, the report's `aggregates`
and `--human`, the quality dashboard's per-rater confusion matrices, and human-vs-heuristic agreement split by human
agreement (docs/domain.md, 'Multi-rater statistics')."""

from __future__ import annotations

import csv
import functools
import io
import json
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from irrCAC.raw import CAC

from accounts.roles import ANNOTATOR
from analysis.metrics.agreement import binary_agreement
from analysis.report.exports.csv import report_csv
from analysis.report.exports.latex import report_latex
from analysis.selectors import quality
from analysis.services import report_build
from annotation.models import Pool, PoolItem
from annotation.selectors import aggregate
from annotation.selectors.aggregate import AGGREGATE_COLUMNS, pool_ratings, ratings_aggregate
from tests.conftest import _person
from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

C, M, N = "correct", "misgendering", "no_pronoun"
pytestmark = pytest.mark.filterwarnings("ignore")  # pandas' deprecation warnings from inside crowd-kit

# item number: (heuristic_correct, [(rater, label)] in the order they were made). Items 1-3 are unanimous, 4-7 split
# (item 7 has three raters), item 8 has one rating.
ITEMS = {
    1: (True, [("ana", C), ("bo", C)]),
    2: (False, [("ana", M), ("bo", M)]),
    3: (False, [("ana", C), ("bo", C)]),
    4: (True, [("ana", M), ("bo", C)]),
    5: (False, [("ana", C), ("bo", M)]),
    6: (True, [("ana", N), ("bo", M)]),
    7: (True, [("ana", C), ("bo", M), ("cy", M)]),
    8: (True, [("bo", C)]),
}
GOLD = [(C, [("ana", C), ("bo", M)]), (M, [("ana", M), ("bo", M)]), (N, [("ana", C)])]


@pytest.fixture(scope="module")
def built(module_db) -> dict:
    """The raters, the pool and the pool without overlap, built once for the module: their ids. The tests only read
    them; what a test writes (another annotation) rolls back at its end."""
    with module_db():
        raters = {name: _person(name, ANNOTATOR) for name in ("ana", "bo", "cy")}
        lonely = build_pool(
            raters=raters, name="lonely", items={1: (True, [("ana", C)]), 2: (False, [("bo", M)])}, gold=[],
            prefix="lone",
        )  # fmt: skip
        return {
            "raters": {name: user.pk for name, user in raters.items()},
            "pool": build_pool(raters=raters).pk,
            "lonely": lonely.pk,
        }


@pytest.fixture
def raters(db, built):
    users = get_user_model().objects.in_bulk(list(built["raters"].values()))
    return {name: users[pk] for name, pk in built["raters"].items()}


def build_pool(*, raters: dict, name: str = "agg", items: dict = ITEMS, gold: list = GOLD, prefix: str = "it"):
    pool = PoolFactory(name=name)
    for number, (heuristic, made) in items.items():
        item = PoolItemFactory(pool=pool, heuristic_correct=heuristic, public_id=f"{prefix}{number}")
        for rater, label in made:
            AnnotationFactory(item=item, annotator=raters[rater], label=label)
    for gold_label, made in gold:
        item = PoolItemFactory(pool=pool, kind="gold", gold_label=gold_label)
        for rater, label in made:
            AnnotationFactory(item=item, annotator=raters[rater], label=label)
    return pool


@pytest.fixture
def pool(db, built):
    return Pool.objects.get(pk=built["pool"])


@pytest.fixture
def lonely_pool(db, built):
    """Every study item rated once: no overlap to aggregate."""
    return Pool.objects.get(pk=built["lonely"])


@pytest.fixture
def report(once, pool):
    """`report_build` of the pool with the default verdict, built once for the module's tests that only read it."""
    return once("report", lambda: report_build(pool=pool))


def _crowd(pool) -> pd.DataFrame:
    """The ratings as crowd-kit takes them, built here from ITEMS (task = public id)."""
    rows = [(f"it{number}", rater, label) for number, (_, made) in ITEMS.items() for rater, label in made]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


@functools.cache
def _crowd_aggregated() -> pd.DataFrame:
    """`ratings_aggregate` of ITEMS' ratings: computed once per process, and only read."""
    return ratings_aggregate(ratings=_crowd(None))


class TestAggregation:
    def test_it_gives_crowd_kits_majority_dawid_skene_and_mace(self, pool):
        from crowdkit.aggregation import MACE, DawidSkene, MajorityVote  # here, not at collection

        data = _crowd(pool)
        majority = MajorityVote().fit_predict(data)
        dawid_skene = DawidSkene(n_iter=100).fit(data)
        mace = MACE(n_restarts=1).fit_predict(data)
        aggregated = ratings_aggregate(ratings=data)
        assert list(aggregated.index) == [f"it{n}" for n in ITEMS]
        for task in aggregated.index:
            row = aggregated.loc[task]
            assert row["majority"] == majority[task]
            assert row["dawid_skene"] == dawid_skene.labels_[task]
            assert row["dawid_skene_posterior"] == pytest.approx(dawid_skene.probas_.loc[task, row["dawid_skene"]])
            assert row["mace"] == mace[task]
        assert list(aggregated["n_ratings"]) == [len(made) for _, made in ITEMS.values()]

    def test_it_reads_only_the_pools_study_annotations(self, pool):
        ratings = pool_ratings(pool=pool)
        assert len(ratings) == sum(len(made) for _, made in ITEMS.values())

    def test_the_export_writes_one_csv_row_per_item(self, pool, tmp_path):
        out = tmp_path / "agg.csv"
        call_command("export_annotations", "--pool", pool.name, "--aggregate", "--out", str(out), stdout=io.StringIO())
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        assert list(rows[0]) == AGGREGATE_COLUMNS
        assert [row["item"] for row in rows] == [f"it{n}" for n in ITEMS]
        expected = _crowd_aggregated()
        for row in rows:
            assert int(row["n_ratings"]) == expected.loc[row["item"], "n_ratings"]
            assert row["dawid_skene"] == expected.loc[row["item"], "dawid_skene"]
            assert row["mace"] == expected.loc[row["item"], "mace"]
            assert (row["model"], row["dataset"], row["setting"], row["pronoun"]) == (
                "test-model",
                "misgendered",
                "pre",
                "xe",
            )

    def test_the_export_writes_json_lines(self, pool, tmp_path):
        out = tmp_path / "agg.jsonl"
        call_command("export_annotations", "--pool", pool.name, "--aggregate", "--out", str(out), stdout=io.StringIO())
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == len(ITEMS)
        assert set(rows[0]) == set(AGGREGATE_COLUMNS)
        assert isinstance(rows[0]["dawid_skene_posterior"], float)

    def test_the_same_ratings_are_aggregated_once(self, pool, raters):
        aggregate.aggregates_memo_clear()  # an earlier test in this process may have aggregated these very ratings
        with mock.patch.object(aggregate, "ratings_aggregate", wraps=aggregate.ratings_aggregate) as computed:
            first = aggregate.pool_aggregates(pool=pool)
            assert aggregate.pool_aggregates(pool=pool) == first
            assert computed.call_count == 1
            AnnotationFactory(item=PoolItem.objects.get(public_id="it8"), annotator=raters["ana"], label=M)
            aggregate.pool_aggregates(pool=pool)
            assert computed.call_count == 2  # new ratings, new aggregates

    def test_the_same_ratings_under_other_ids_are_computed_once_and_named_by_their_own_ids(self, pool):
        aggregate.aggregates_memo_clear()
        data = pool_ratings(pool=pool)
        shifted = data.assign(task=data["task"] * 7 + 1000)  # other ids, in the same order
        with mock.patch.object(aggregate, "ratings_aggregate", wraps=aggregate.ratings_aggregate) as computed:
            first = aggregate.ratings_aggregate_cached(ratings=data)
            second = aggregate.ratings_aggregate_cached(ratings=shifted)
        assert computed.call_count == 1
        assert list(second.index) == [task * 7 + 1000 for task in first.index]
        pd.testing.assert_frame_equal(second.reset_index(drop=True), first.reset_index(drop=True))
        # computed on the ranks, named by the ids: what crowd-kit gives on the ids themselves
        pd.testing.assert_frame_equal(first, ratings_aggregate(ratings=data))

    def test_dawid_skene_alone_is_fitted_once_per_ratings_and_named_by_their_own_ids(self, pool, raters):
        aggregate.aggregates_memo_clear()
        data = pool_ratings(pool=pool)
        shifted = data.assign(task=data["task"] * 7 + 1000)
        with mock.patch.object(aggregate, "ratings_dawid_skene", wraps=aggregate.ratings_dawid_skene) as computed:
            first = aggregate.ratings_dawid_skene_cached(ratings=data)
            second = aggregate.ratings_dawid_skene_cached(ratings=shifted)
            assert computed.call_count == 1
            AnnotationFactory(item=PoolItem.objects.get(public_id="it8"), annotator=raters["ana"], label=M)
            aggregate.ratings_dawid_skene_cached(ratings=pool_ratings(pool=pool))
            assert computed.call_count == 2  # new ratings, a new fit
        assert second.to_dict() == {task * 7 + 1000: label for task, label in first.items()}
        # computed on the ranks, named by the ids: what crowd-kit gives on the ids themselves
        assert first.to_dict() == aggregate.ratings_dawid_skene(ratings=data).to_dict()

    def test_a_pool_without_overlap_is_refused_and_nothing_is_written(self, lonely_pool, tmp_path):
        out = tmp_path / "agg.csv"
        with pytest.raises(CommandError, match="no item has two or more ratings"):
            call_command("export_annotations", "--pool", lonely_pool.name, "--aggregate", "--out", str(out))
        assert not out.exists()

    def test_maces_e_step_on_arrays_gives_crowd_kits_numbers_to_the_last_bit(self):
        """Random ratings: task ids in any order, workers first seen out of sorted order, one to three labels, one to
        five raters per task; two EM steps (the second reads everything the first computed) and one or two restarts,
        against crowd-kit's own MACE."""
        from crowdkit.aggregation import MACE  # here, not at collection

        from annotation.selectors.mace import ArrayMACE

        for seed in range(12):
            rng = np.random.default_rng(seed)
            labels = [C, M, N][: 1 + seed % 3]
            workers = [f"rater{n}" for n in rng.permutation(int(rng.integers(1, 6)))]
            tasks = rng.choice(10_000, size=int(rng.integers(1, 40)), replace=False)
            rows = [
                (int(task), worker, str(rng.choice(labels)))
                for task in tasks
                for worker in rng.choice(workers, size=int(rng.integers(1, len(workers) + 1)), replace=False)
            ]
            data = pd.DataFrame(rows, columns=["task", "worker", "label"])
            settings = {"n_iter": 2, "n_restarts": 1 + seed % 2, "random_state": seed}
            theirs, ours = MACE(**settings).fit(data), ArrayMACE(**settings).fit(data)
            pd.testing.assert_frame_equal(ours.probas_, theirs.probas_, check_exact=True)
            pd.testing.assert_series_equal(ours.labels_, theirs.labels_, check_exact=True)
            assert np.array_equal(ours.thetas_, theirs.thetas_)
            assert np.array_equal(ours.spamming_, theirs.spamming_)

    def test_dawid_skene_on_arrays_gives_crowd_kits_numbers_to_the_last_bit(self):
        """Random ratings as above, some pools of hundreds of tasks (pandas sums those in blocks), raters of mirrored
        habits (ties between labels), and 0, 1, 2 or 100 EM steps: posteriors, labels, priors and error matrices
        equal crowd-kit's own Dawid-Skene exactly, and the loop stops after as many steps."""
        from crowdkit.aggregation import DawidSkene  # here, not at collection

        from annotation.selectors.dawid_skene import ArrayDawidSkene

        mirrored = [(task, worker, [C, M][(task + n) % 2]) for task in range(6) for n, worker in enumerate("ab")]
        cases = [(pd.DataFrame(mirrored, columns=["task", "worker", "label"]), 100)]
        for seed in range(16):
            rng = np.random.default_rng(seed)
            labels = [C, M, N][: 1 + seed % 3]
            workers = [f"rater{n}" for n in rng.permutation(int(rng.integers(1, 6)))]
            tasks = rng.choice(10_000, size=int(rng.integers(1, 400 if seed % 4 == 3 else 40)), replace=False)
            rows = [
                (int(task), worker, str(rng.choice(labels)))
                for task in tasks
                for worker in rng.choice(workers, size=int(rng.integers(1, len(workers) + 1)), replace=False)
            ]
            cases.append((pd.DataFrame(rows, columns=["task", "worker", "label"]), [0, 1, 2, 100][seed % 4]))
        for data, steps in cases:
            theirs, ours = DawidSkene(n_iter=steps).fit(data), ArrayDawidSkene(n_iter=steps).fit(data)
            pd.testing.assert_frame_equal(ours.probas_, theirs.probas_, check_exact=True)
            pd.testing.assert_series_equal(ours.labels_, theirs.labels_, check_exact=True)
            pd.testing.assert_series_equal(ours.priors_, theirs.priors_, check_exact=True)
            pd.testing.assert_frame_equal(ours.errors_, theirs.errors_, check_exact=True)
            assert ours.loss_history_ == pytest.approx(theirs.loss_history_, rel=1e-12)

    @pytest.mark.slow
    def test_one_mace_restart_is_crowd_kits_default_of_ten(self, pool):
        from crowdkit.aggregation import MACE  # here, not at collection

        data = _crowd(pool)
        default = MACE().fit(data)  # every restart starts from the same seeded point
        aggregated = ratings_aggregate(ratings=data)
        assert list(aggregated["mace"]) == list(default.labels_.reindex(aggregated.index))


class TestReport:
    def test_the_json_report_carries_the_aggregates(self, report):
        assert report["human_verdict"] == "default"
        assert [row["item"] for row in report["aggregates"]] == [f"it{n}" for n in ITEMS]
        assert set(report["aggregates"][0]) == set(AGGREGATE_COLUMNS)

    def test_a_pool_without_overlap_has_no_aggregates(self, lonely_pool):
        assert report_build(pool=lonely_pool)["aggregates"] == []

    @pytest.mark.parametrize("verdict", ["majority", "dawid_skene", "mace"])
    def test_the_heuristic_can_be_compared_with_an_aggregate(self, pool, verdict):
        report = report_build(pool=pool, human_verdict=verdict)
        aggregated = _crowd_aggregated()[verdict]
        agree = [(aggregated[f"it{n}"] != M) == heuristic for n, (heuristic, _) in ITEMS.items()]
        (row,) = report["human_vs_heuristic"]
        assert report["human_verdict"] == verdict
        assert row["agreement"] == pytest.approx(sum(agree) / len(agree))

    def test_the_heuristic_can_be_compared_with_the_first_annotation(self, pool):
        report = report_build(pool=pool, human_verdict="first")
        agree = [(made[0][1] != M) == heuristic for heuristic, made in ITEMS.values()]
        (row,) = report["human_vs_heuristic"]
        assert row["agreement"] == pytest.approx(sum(agree) / len(agree))

    def test_the_command_refuses_an_unknown_verdict_and_writes_nothing(self, pool, tmp_path):
        out = tmp_path / "report.json"
        with pytest.raises(CommandError, match="invalid choice"):
            call_command("report", "--pool", pool.name, "--human", "vote", "--out", str(out))
        with pytest.raises(CommandError, match="unknown human verdict"):
            call_command("report", pool=pool.name, human="vote", out=str(out))
        assert not out.exists()

    def test_the_command_refuses_an_aggregate_of_a_pool_without_overlap(self, lonely_pool, tmp_path):
        out = tmp_path / "report.json"
        with pytest.raises(CommandError, match="--human mace: .*no item has two or more ratings"):
            call_command("report", "--pool", lonely_pool.name, "--human", "mace", "--out", str(out))
        assert not out.exists()

    def test_the_command_writes_the_chosen_verdict(self, pool, tmp_path):
        out = tmp_path / "report.json"
        call_command("report", "--pool", pool.name, "--human", "majority", "--out", str(out), stderr=io.StringIO())
        assert json.loads(out.read_text())["human_verdict"] == "majority"

    def test_the_api_refuses_an_unknown_verdict_and_an_aggregate_without_overlap(
        self, pool, lonely_pool, api, researcher
    ):
        api.force_authenticate(researcher)
        response = api.get(f"/api/reports/{pool.name}/", {"format": "json", "human": "vote"})
        assert response.status_code == 400
        assert "human" in response.json()
        response = api.get(f"/api/reports/{lonely_pool.name}/", {"format": "json", "human": "dawid_skene"})
        assert response.status_code == 400
        response = api.get(f"/api/reports/{pool.name}/", {"format": "json", "human": "first"})
        assert response.status_code == 200
        assert response.json()["human_verdict"] == "first"

    def test_the_downloads_take_the_verdict_too(self, pool, lonely_pool, client, researcher):
        client.force_login(researcher)
        assert client.get(f"/reports/{pool.name}/export/json/", {"human": "vote"}).status_code == 400
        assert client.get(f"/reports/{lonely_pool.name}/export/json/", {"human": "mace"}).status_code == 400
        response = client.get(f"/reports/{pool.name}/export/json/", {"human": "dawid_skene"})
        assert response.status_code == 200
        assert json.loads(response.content)["human_verdict"] == "dawid_skene"

    def test_human_vs_heuristic_is_split_by_human_agreement(self, report):
        # unanimous items 1-3: human c/m/c vs heuristic 1/0/0 -> agree, agree, disagree: 2/3
        # split items 4-7, default label (ties to the first given): m, c, n, m vs heuristic 1/0/1/1 -> 0, 0, 1, 0: 1/4
        (row,) = report["human_vs_heuristic"]
        assert row["agreement_unanimous"] == pytest.approx(2 / 3)
        assert row["agreement_unanimous_n"] == 3
        assert row["agreement_split"] == pytest.approx(1 / 4)
        assert row["agreement_split_n"] == 4
        assert row["n"] == 8

    def test_every_agreement_and_accuracy_has_a_bootstrap_interval(self, report):
        (row,) = report["human_vs_heuristic"]
        assert row["agreement_boot_ci"][0] <= row["agreement"] <= row["agreement_boot_ci"][1]
        for view in ("pronoun_label", "pronoun_binary", "extraneous"):
            block = report["inter_annotator"][view]
            assert len(block["raw_agreement_boot_ci"]) == 2
            assert "gwet_ac1" in block and "gwet_ac1_ci" in block
            assert all("raw_agreement_boot_ci" in pair for pair in block["pairwise"])
        (accuracy,) = report["accuracy"]
        assert accuracy["human_boot_ci"][0] <= accuracy["human"] <= accuracy["human_boot_ci"][1]

    def test_the_inter_annotator_block_gives_irrcacs_ac1_over_every_rating(self, report):
        block = report["inter_annotator"]["pronoun_label"]
        overlap = [[label for _, label in made] for _, made in ITEMS.values() if len(made) > 1]
        frame = pd.DataFrame([row + [None] * (3 - len(row)) for row in overlap])
        expected = CAC(frame, categories=[C, M, N]).gwet()["est"]["coefficient_value"]
        assert block["gwet_ac1"] == pytest.approx(expected, abs=1e-5)

    def test_the_tables_and_the_latex_carry_the_new_figures(self, report):
        header = report_csv(report=report, table="human_vs_heuristic").splitlines()[0].split(",")
        for column in ("agreement_boot_ci_low", "agreement_boot_ci_high", "agreement_unanimous", "agreement_split_n"):
            assert column in header
        inter = report_csv(report=report, table="inter_annotator").splitlines()[0].split(",")
        assert {"gwet_ac1", "gwet_ac1_ci_low", "raw_agreement_boot_ci_low", "fleiss_kappa"} <= set(inter)
        aggregates = report_csv(report=report, table="aggregates").splitlines()[0].split(",")
        assert aggregates == AGGREGATE_COLUMNS
        tex = report_latex(report=report)
        assert "Gwet's AC1 [95\\% CI]" in tex
        assert "Unanimous & Split" in tex
        # this pool has no job: prob_vs_gen's LaTeX from one row with a constant probability side
        cell = {"model": "m", "dataset": "misgendered", "setting": "pre", "pronoun": "xe"}
        row = {**cell, **binary_agreement([1] * 10, [1, 1, 1, 0, 1, 1, 1, 1, 0, 1])}
        tex = report_latex(report={**report, "prob_vs_gen": [row]}, table="prob_vs_gen")
        assert "as the paper computes it" in tex and "square table" in tex
        assert "0.000 [-" in tex and "0.000 [undefined]" in tex  # the paper's interval, then the square table's

    def test_the_page_says_why_ac1_and_the_aggregates_are_there(self, pool, client, researcher):
        client.force_login(researcher)
        page = client.get(f"/reports/{pool.name}/").content.decode()
        assert "Gwet's AC1 is shown beside" in page
        assert "The aggregates (majority vote, Dawid-Skene" in page


class TestQualityConfusion:
    def test_each_rater_is_counted_against_gold_by_hand(self, pool):
        data = quality.quality_dashboard(pool=pool)
        gold = data["confusion_gold"]
        assert gold["ana"][C] == {C: 1, M: 0, N: 0}
        assert gold["ana"][M] == {C: 0, M: 1, N: 0}
        assert gold["ana"][N] == {C: 1, M: 0, N: 0}
        assert gold["bo"][C] == {C: 0, M: 1, N: 0}
        assert gold["cy"][C] == {C: 0, M: 0, N: 0}

    def test_each_rater_is_counted_against_the_heuristic_by_hand(self, pool):
        heuristic = quality.quality_dashboard(pool=pool)["confusion_heuristic"]
        # ana on items 1-7: heuristic 1 (correct) on 1, 4, 6, 7 -> c, m, n, c; 0 on 2, 3, 5 -> m, c, c
        assert heuristic["ana"] == {C: {C: 2, M: 1, N: 1}, M: {C: 2, M: 1, N: 0}}
        assert heuristic["cy"] == {C: {C: 0, M: 1, N: 0}, M: {C: 0, M: 0, N: 0}}

    def test_each_rater_is_counted_against_crowd_kits_dawid_skene(self, pool):
        from crowdkit.aggregation import DawidSkene  # here, not at collection

        data = quality.quality_dashboard(pool=pool)
        labels = DawidSkene(n_iter=100).fit(_crowd(pool)).labels_
        expected = {C: {C: 0, M: 0, N: 0}, M: {C: 0, M: 0, N: 0}, N: {C: 0, M: 0, N: 0}}
        for number, (_, made) in ITEMS.items():
            for rater, label in made:
                if rater == "bo":
                    expected[labels[f"it{number}"]][label] += 1
        assert data["aggregate"] == "dawid_skene"
        assert data["confusion_aggregate"]["bo"] == expected

    def test_the_dashboard_gives_ac1_and_the_page_shows_it(self, pool, client, researcher):
        data = quality.quality_dashboard(pool=pool)
        overlap = [[label for _, label in made] for _, made in ITEMS.values() if len(made) > 1]
        frame = pd.DataFrame([row + [None] * (3 - len(row)) for row in overlap])
        assert data["gwet_ac1"] == pytest.approx(
            CAC(frame, categories=[C, M, N]).gwet()["est"]["coefficient_value"], abs=1e-5
        )
        client.force_login(researcher)
        page = client.get(f"/pools/{pool.name}/quality/").content.decode()
        assert "Gwet" in page and "quality-confusion" in page
        assert f"{data['gwet_ac1']:.3f}" in page

    def test_the_api_carries_the_confusion_matrices(self, pool, api, researcher):
        api.force_authenticate(researcher)
        data = api.get(f"/api/pools/{pool.name}/quality/").json()
        for key in ("confusion_gold", "confusion_aggregate", "confusion_heuristic", "gwet_ac1", "gwet_ac1_ci"):
            assert key in data
        assert set(data["confusion_gold"]) == {"ana", "bo", "cy"}

    def test_a_pool_without_overlap_has_empty_aggregate_tables(self, lonely_pool):
        data = quality.quality_dashboard(pool=lonely_pool)
        assert all(
            n == 0 for table in data["confusion_aggregate"].values() for row in table.values() for n in row.values()
        )
