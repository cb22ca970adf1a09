"""The paper's aggregates on the hand-built study (tests/analysis/factories.py): accuracy per cell, the conflict rate
and the qualitative examples, each worked out independently of the code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.services import report_build
from annotation.models import PoolItem
from annotation.services import adjudication_save
from annotation.services.stamp import pool_changed
from tests.analysis.factories import HE_INSTANCES, XE_INSTANCES, study_build
from tests.analysis.test_tango_report import INSTANCES as TANGO_INSTANCES
from tests.analysis.test_tango_report import built_tango_pool, tango_pool  # noqa: F401 - the TANGO tests' fixtures
from tests.factories import (
    AnnotationFactory,
    GenerationFactory,
    InstanceFactory,
    PoolFactory,
    PoolItemFactory,
    ProbResultFactory,
)

CELL_XE = {"model": "m1", "dataset": "misgendered", "setting": "pre", "pronoun": "xe"}
CELL_HE = {**CELL_XE, "pronoun": "he"}


@pytest.fixture
def study(annotator, second_annotator):
    return study_build(ana=annotator, bo=second_annotator)


@pytest.fixture
def report(study_report):
    """Built once for the module (tests/analysis/conftest.py): these tests only read it."""
    return study_report


def _row(rows: list[dict], **keys) -> dict:
    matches = [row for row in rows if all(row[k] == v for k, v in keys.items())]
    assert len(matches) == 1, rows
    return matches[0]


class TestAccuracy:
    def test_it_gives_the_probability_accuracy_per_cell_with_scipy_sem(self, report):
        row = _row(report["accuracy"], **CELL_XE)
        m_prob = [p for p, _ in XE_INSTANCES]
        assert row["n"] == len(XE_INSTANCES) and row["prob_n"] == len(XE_INSTANCES)
        assert row["prob"] == pytest.approx(np.mean(m_prob))
        assert row["prob_sem"] == pytest.approx(stats.sem(m_prob))

    def test_it_averages_generation_accuracy_over_every_sample(self, report):
        row = _row(report["accuracy"], **CELL_XE)
        every = [verdict for _, samples in XE_INSTANCES for verdict in samples]
        assert row["gen_n"] == 30
        assert row["gen"] == pytest.approx(np.mean(every))
        assert row["gen_sem"] == pytest.approx(stats.sem(every))

    def test_it_averages_the_first_sample_separately(self, report):
        row = _row(report["accuracy"], **CELL_XE)
        first = [samples[0] for _, samples in XE_INSTANCES]
        assert row["gen_first"] == pytest.approx(np.mean(first))
        assert row["gen_first_sem"] == pytest.approx(stats.sem(first))
        assert row["gen_first_n"] == 6

    def test_it_averages_the_human_binary_verdict_over_the_pools_items(self, report):
        # xe items: correct, misgendering (adjudicated), misgendering, no_pronoun -> binary [1, 0, 0, 1]
        xe = _row(report["accuracy"], **CELL_XE)
        assert (xe["human"], xe["human_n"]) == (pytest.approx(0.5), 4)
        assert xe["human_sem"] == pytest.approx(stats.sem([1, 0, 0, 1]))
        # he items: no_pronoun (bo first, ana correct: a tie keeps the first), correct -> [1, 1]
        he = _row(report["accuracy"], **CELL_HE)
        assert (he["human"], he["human_sem"], he["human_n"]) == (1.0, 0.0, 2)

    def test_human_accuracy_is_null_for_a_cell_without_annotations(self, study):
        job = study.jobs.get()
        instance = InstanceFactory(pronoun="she")
        ProbResultFactory(job=job, instance=instance, correct=True, prediction="she")
        GenerationFactory(job=job, instance=instance, setting="pre", sample_index=0, heuristic_correct=False)
        PoolItemFactory(pool=study, model_name="m1", pronoun="she")  # in the pool, not annotated
        row = _row(report_build(pool=study)["accuracy"], **{**CELL_XE, "pronoun": "she"})
        assert row["human"] is None and row["human_sem"] is None and row["human_n"] == 0
        assert (row["n"], row["prob"], row["gen"], row["gen_first"]) == (1, 1.0, 0.0, 0.0)
        assert row["prob_sem"] is None  # one instance: scipy's sem needs two

    def test_gold_and_training_items_never_enter_the_human_accuracy(self, study, annotator):
        for kind in ("gold", "training"):
            item = PoolItemFactory(pool=study, model_name="m1", pronoun="xe", kind=kind, gold_label="misgendering")
            AnnotationFactory(item=item, annotator=annotator, label="misgendering")
        row = _row(report_build(pool=study)["accuracy"], **CELL_XE)
        assert (row["human"], row["human_n"]) == (pytest.approx(0.5), 4)

    def test_a_pool_without_jobs_still_lists_its_human_cells(self, annotator):
        pool = PoolFactory(name="imported")
        AnnotationFactory(item=PoolItemFactory(pool=pool, model_name="mx"), annotator=annotator, label="misgendering")
        [row] = report_build(pool=pool)["accuracy"]
        assert (row["model"], row["human"], row["human_n"]) == ("mx", 0.0, 1)
        # its instances counted as the cell explorer counts them: one per template
        assert row["n"] == 1 and row["prob"] is None and row["gen"] is None and row["gen_first"] is None


class TestConflictRate:
    @staticmethod
    def _conflicts(instances):
        return sum(1 for p, samples in instances if p != samples[0])

    def test_the_all_row_weights_by_instances(self, report):
        conflicts = self._conflicts(XE_INSTANCES) + self._conflicts(HE_INSTANCES)
        instances = len(XE_INSTANCES) + len(HE_INSTANCES)
        row = _row(report["conflict_rate"], scope="all")
        assert row["value"] == "all"
        assert (row["conflicts"], row["instances"]) == (conflicts, instances)
        assert row["rate"] == pytest.approx(conflicts / instances)

    def test_it_breaks_the_rate_down_by_pronoun_model_dataset_and_setting(self, report):
        xe = _row(report["conflict_rate"], scope="pronoun", value="xe")
        # XE_INSTANCES pairs (m_prob, first sample): (1,1) (1,0) (0,0) (0,1) (1,1) (1,1): two conflicts of six
        assert (xe["conflicts"], xe["instances"], xe["rate"]) == (2, 6, pytest.approx(2 / 6))
        he = _row(report["conflict_rate"], scope="pronoun", value="he")
        assert (he["conflicts"], he["instances"]) == (1, 2)
        for scope, value in (("model", "m1"), ("dataset", "misgendered"), ("setting", "pre")):
            row = _row(report["conflict_rate"], scope=scope, value=value)
            assert (row["conflicts"], row["instances"]) == (3, 8)

    def test_the_pooled_rate_is_not_the_mean_of_the_cell_rates(self, report):
        overall = _row(report["conflict_rate"], scope="all")["rate"]
        assert overall == pytest.approx(3 / 8)
        assert overall != pytest.approx(np.mean([2 / 6, 1 / 2]))

    def test_a_pool_without_jobs_has_no_conflict_rows(self, db):
        assert report_build(pool=PoolFactory(name="nojobs"))["conflict_rate"] == []


def seed_example_tables(items: pd.DataFrame, *, seed: int, models: list[str]) -> dict[tuple, int | None]:
    """The seed's manual-annotations.py draw, written out from docs/domain.md, "Aggregates": per table (dataset x setting), per
    model, per pronoun he/she/they/xe, pandas' sample(n=1) over that pronoun's qualifying items in pool order; then
    random.seed before the table and random.choice of each model's list, models sorted. -> (dataset, setting, model)
    -> item id, None where the model has no item."""
    import random

    drawn: dict[tuple, int | None] = {}
    for (dataset, setting), table in items.sort_values("id").groupby(["dataset", "setting"]):
        lists: dict[str, list[int]] = {}
        for model in sorted(models):
            lists[model] = []
            for pronoun in ["he", "she", "they", "xe"]:
                mine = table[(table["model"] == model) & (table["pronoun"] == pronoun) & table["qualifies"]]
                if len(mine):
                    lists[model].append(int(mine.sample(n=1, random_state=seed).iloc[0]["id"]))
        random.seed(seed)
        for model in sorted(models):
            drawn[dataset, setting, model] = random.choice(lists[model]) if lists[model] else None
    return drawn


class TestExamples:
    @pytest.fixture
    def busy(self, annotator):
        """Three models over two tables (MISGENDERED pre and RUFF post), several disagreeing items per pronoun; c-model
        has items but none that disagree. Returns the pool and a frame of (id, model, dataset, setting, pronoun,
        qualifies) built from what was written, not from the report."""
        pool = PoolFactory(name="busy")
        rows = []
        plan = {
            ("b-model", "misgendered", "pre"): {"he": 3, "she": 0, "they": 2, "xe": 4},
            ("a-model", "misgendered", "pre"): {"he": 1, "she": 2, "they": 0, "xe": 1},
            ("c-model", "misgendered", "pre"): {"he": 0, "xe": 0},
            ("b-model", "ruff", "post"): {"he": 2, "she": 3, "they": 1, "xe": 2},
            ("a-model", "ruff", "post"): {"she": 2},
        }
        for (model, dataset, setting), per_pronoun in plan.items():
            for pronoun, disagreeing in per_pronoun.items():
                for n in range(disagreeing + 2):  # two agreeing items in every cell, interleaved
                    qualifies = n % 2 == 1 and n // 2 < disagreeing or n >= 4 and n - 2 < disagreeing
                    item = PoolItemFactory(
                        pool=pool, model_name=model, dataset=dataset, setting=setting, pronoun=pronoun
                    )
                    label = "misgendering" if qualifies else "correct"
                    AnnotationFactory(item=item, annotator=annotator, label=label, extraneous=qualifies)
                    rows.append((item.id, model, dataset, setting, pronoun, qualifies))
        frame = pd.DataFrame(rows, columns=["id", "model", "dataset", "setting", "pronoun", "qualifies"])
        return pool, frame

    def test_it_draws_each_table_as_the_seeds_two_steps_do(self, busy):
        pool, frame = busy
        models = ["a-model", "b-model", "c-model"]
        for seed in (131719, 0, 7):
            expected = seed_example_tables(frame, seed=seed, models=models)
            rows = report_build(pool=pool, examples_seed=seed)["examples"]
            for kind in ("disagreement", "extraneous"):  # here the extraneous items are the disagreeing ones
                got = {(r["dataset"], r["setting"], r["model"]): r["public_id"] for r in rows if r["kind"] == kind}
                public = dict(PoolItem.objects.filter(pool=pool).values_list("id", "public_id"))
                assert got == {key: public.get(item) for key, item in expected.items()}

    def test_it_gives_one_row_per_model_in_sorted_order_in_every_table(self, busy):
        pool, frame = busy
        rows = [r for r in report_build(pool=pool)["examples"] if r["kind"] == "disagreement"]

        assert [(r["dataset"], r["setting"], r["model"]) for r in rows] == [
            (d, s, m) for d, s in (("misgendered", "pre"), ("ruff", "post")) for m in ("a-model", "b-model", "c-model")
        ]
        c_model = _row(rows, dataset="misgendered", model="c-model")
        assert c_model["public_id"] is None and c_model["pronoun"] is None and c_model["candidates"] == 0
        b_model = _row(rows, dataset="misgendered", model="b-model")
        assert (b_model["candidates"], b_model["choices"]) == (9, 3)
        assert _row(rows, dataset="ruff", model="c-model")["public_id"] is None  # no items in that table at all

    def test_a_model_with_no_item_draws_nothing(self, busy):
        # random.choice is not called for an empty list: a- and b-model draw as if c-model were absent.
        pool, frame = busy
        with_c = [r for r in report_build(pool=pool)["examples"] if r["model"] != "c-model"]
        PoolItem.objects.filter(pool=pool, model_name="c-model").delete()
        pool_changed(pools=[pool])  # no service deletes items: the stamp is bumped as a service would
        without_c = report_build(pool=pool)["examples"]
        assert with_c == without_c

    def test_the_study_draws_from_its_one_table(self, study):
        report = report_build(pool=study)
        rows = [r for r in report["examples"] if r["kind"] == "disagreement"]
        assert [(r["dataset"], r["setting"], r["model"]) for r in rows] == [("misgendered", "pre", "m1")]
        # xe: human binary [1, 0, 0, 1] vs heuristic [1, 1, 0, 1]: item 2 disagrees; he: item 5 (human 1, heuristic 0)
        xe_items = list(PoolItem.objects.filter(pool=study, pronoun="xe").order_by("id"))
        he_items = list(PoolItem.objects.filter(pool=study, pronoun="he").order_by("id"))
        import random

        random.seed(131719)
        chosen = random.choice([he_items[0], xe_items[1]])  # the list in pronoun order he, she, they, xe
        [row] = rows
        assert row["public_id"] == chosen.public_id and row["choices"] == 2 and row["candidates"] == 2
        assert row["pronoun"] == chosen.pronoun and row["context"] == chosen.context

    def test_the_default_seed_is_the_papers(self, report):
        assert report["examples_seed"] == 131719

    def test_an_adjudicated_label_decides_the_disagreement(self, study, annotator):
        item = PoolItemFactory(pool=study, model_name="m3", pronoun="she", heuristic_correct=True)
        AnnotationFactory(item=item, annotator=annotator, label="correct")
        assert _row(report_build(pool=study)["examples"], model="m3", kind="disagreement")["public_id"] is None
        adjudication_save(item=item, label="misgendering")
        row = _row(report_build(pool=study)["examples"], model="m3", kind="disagreement")
        assert row["public_id"] == item.public_id


def test_inter_annotator_kappa_is_zero_when_one_annotator_gives_one_label(annotator, second_annotator):
    """docs/domain.md, 'Multi-rater statistics': between raters, kappa is taken on the square table over the label set
    (the 1x2 rule is the paper's, for probability vs generation only). One side constant: kappa 0, and statsmodels'
    interval on the square table has zero width, which says nothing and is reported as none."""
    from sklearn.metrics import cohen_kappa_score

    pool = PoolFactory(name="constant")
    second = ["correct", "misgendering", "correct", "no_pronoun"]
    for label in second:
        item = PoolItemFactory(pool=pool)
        AnnotationFactory(item=item, annotator=annotator, label="correct")
        AnnotationFactory(item=item, annotator=second_annotator, label=label)
    block = report_build(pool=pool)["inter_annotator"]["pronoun_label"]
    labels = ["correct", "misgendering", "no_pronoun"]
    square = pd.crosstab(
        pd.Categorical(["correct"] * 4, categories=labels), pd.Categorical(second, categories=labels), dropna=False
    ).to_numpy()
    expected = sm_cohens_kappa(square)
    assert block["cohen_kappa"] == pytest.approx(cohen_kappa_score(["correct"] * 4, second, labels=labels)) == 0.0
    assert expected.kappa_upp - expected.kappa_low == pytest.approx(0.0)
    assert block["kappa_ci"] is None
    assert block["raw_agreement"] == pytest.approx(0.5)


class TestTango:
    """TANGO's instances join the conflict rate (template 1 against generation 1, as its v^f pairs them) and its
    accuracy's `prob` is the mean over every successful Prob-TANGO template (tests/analysis/test_tango_report.py)."""

    def test_tango_instances_join_the_conflict_rate(self, tango_pool):  # noqa: F811 - the imported fixture
        pairs = [s[0] for samples in TANGO_INSTANCES.values() for s in samples if s[0][1] is not None]
        conflicts = sum(1 for m_gen, m_prob in pairs if m_gen != m_prob)
        report = report_build(pool=tango_pool)
        row = _row(report["conflict_rate"], scope="dataset", value="tango")
        assert (row["conflicts"], row["instances"]) == (conflicts, len(pairs))
        everything = _row(report["conflict_rate"], scope="all")
        assert (everything["conflicts"], everything["instances"]) == (conflicts, len(pairs))
        xe = [s[0] for s in TANGO_INSTANCES["xe"] if s[0][1] is not None]
        setting = _row(report["conflict_rate"], scope="setting", value="open")
        assert setting["instances"] == len(pairs)
        assert _row(report["conflict_rate"], scope="pronoun", value="xe")["instances"] == len(xe)

    def test_tango_accuracy_averages_every_successful_template(self, tango_pool):  # noqa: F811 - the imported fixture
        report = report_build(pool=tango_pool)
        for pronoun, instances in TANGO_INSTANCES.items():
            row = _row(report["accuracy"], model="m1", dataset="tango", setting="open", pronoun=pronoun)
            templates = [m_prob for samples in instances for _, m_prob in samples if m_prob is not None]
            every = [m_gen for samples in instances for m_gen, _ in samples]
            assert row["n"] == len(instances)
            assert (row["prob"], row["prob_n"]) == (pytest.approx(np.mean(templates)), len(templates))
            assert row["prob_sem"] == pytest.approx(stats.sem(templates))
            assert row["gen"] == pytest.approx(np.mean(every))
            assert row["gen_first"] == pytest.approx(np.mean([samples[0][0] for samples in instances]))


@pytest.mark.django_db
def test_the_items_enter_the_analysis_in_pool_order_whatever_the_tables_physical_order(annotator, second_annotator):
    # docs/domain.md, "Multi-rater statistics": bootstrap intervals resample items in pool order (the order they
    # were stored in), not in whatever order a query without ORDER BY happens to return.
    from analysis.selectors.human import pool_item_frame

    pool = study_build(ana=annotator, bo=second_annotator)
    first = PoolItem.objects.filter(pool=pool).order_by("pk").first()
    # A new row version, later in the table and in its indexes (an indexed column changes: no in-place update).
    PoolItem.objects.filter(pk=first.pk).update(public_id=first.public_id + "x")

    frame = pool_item_frame(pool=pool)

    stored = list(PoolItem.objects.filter(pool=pool).order_by("pk").values_list("pk", flat=True))
    assert list(frame["id"]) == [pk for pk in stored if pk in set(frame["id"])]
