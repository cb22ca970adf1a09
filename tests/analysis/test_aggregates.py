"""The paper's aggregates on the hand-built study (tests/analysis/factories.py): accuracy per cell, the conflict rate
and the qualitative examples, each worked out independently of the code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.services import report_build
from annotation.models import Adjudication, PoolItem
from tests.analysis.factories import HE_INSTANCES, XE_INSTANCES, study_build
from tests.analysis.test_tango_report import INSTANCES as TANGO_INSTANCES
from tests.analysis.test_tango_report import tango_pool  # noqa: F401 - the fixture of the TANGO tests
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
def report(study):
    return report_build(pool=study)


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
        assert row["n"] == 0 and row["prob"] is None and row["gen"] is None and row["gen_first"] is None


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


class TestExamples:
    @staticmethod
    def _expected(report_frame: pd.DataFrame, seed: int) -> pd.Series:
        return report_frame.sort_values("id").sample(n=1, random_state=seed).iloc[0]

    def test_it_draws_one_disagreement_per_model_and_pronoun(self, report, study):
        rows = [r for r in report["examples"] if r["kind"] == "disagreement"]
        assert [(r["model"], r["pronoun"]) for r in rows] == [("m1", "he"), ("m1", "xe")]
        # xe: human binary [1, 0, 0, 1] vs heuristic [1, 1, 0, 1]: only item 2 disagrees; he: item 5 (human 1, heuristic 0)
        xe_items = list(PoolItem.objects.filter(pool=study, pronoun="xe").order_by("id"))
        he_items = list(PoolItem.objects.filter(pool=study, pronoun="he").order_by("id"))
        xe = _row(rows, pronoun="xe")
        assert xe["public_id"] == xe_items[1].public_id and xe["candidates"] == 1
        assert xe["human_label"] == "misgendering" and xe["heuristic_correct"] is True
        assert _row(rows, pronoun="he")["public_id"] == he_items[0].public_id

    def test_it_draws_among_items_with_extraneous_words_and_prints_dashes_where_none(self, report, study):
        rows = [r for r in report["examples"] if r["kind"] == "extraneous"]
        # xe: item 2 flagged by ana first, bo not; the tie keeps ana's flag -> item 2 extraneous; he: item 6 (ana, alone)
        he_items = list(PoolItem.objects.filter(pool=study, pronoun="he").order_by("id"))
        assert _row(rows, pronoun="he")["public_id"] == he_items[1].public_id

    def test_the_draw_is_the_seeded_pandas_sample_over_the_candidates(self, study, annotator):
        items = [PoolItemFactory(pool=study, model_name="m2", pronoun="they", heuristic_correct=True) for _ in range(9)]
        for item in items:
            AnnotationFactory(item=item, annotator=annotator, label="misgendering")
        candidates = pd.DataFrame({"id": [item.id for item in items], "public_id": [i.public_id for i in items]})
        for seed in (131719, 0, 7):
            report = report_build(pool=study, examples_seed=seed)
            row = _row(report["examples"], model="m2", pronoun="they", kind="disagreement")
            assert row["public_id"] == self._expected(candidates, seed)["public_id"]
            assert row["candidates"] == 9
        drawn = {
            _row(
                report_build(pool=study, examples_seed=s)["examples"], model="m2", pronoun="they", kind="disagreement"
            )["public_id"]
            for s in range(6)
        }
        assert len(drawn) > 1
        extraneous = _row(report["examples"], model="m2", pronoun="they", kind="extraneous")
        assert extraneous["candidates"] == 0 and extraneous["public_id"] is None

    def test_the_default_seed_is_the_papers(self, report):
        assert report["examples_seed"] == 131719

    def test_an_adjudicated_label_decides_the_disagreement(self, study, annotator):
        item = PoolItemFactory(pool=study, model_name="m3", pronoun="she", heuristic_correct=True)
        AnnotationFactory(item=item, annotator=annotator, label="correct")
        assert (
            _row(report_build(pool=study)["examples"], model="m3", pronoun="she", kind="disagreement")["public_id"]
            is None
        )
        Adjudication.objects.create(item=item, label="misgendering")
        row = _row(report_build(pool=study)["examples"], model="m3", pronoun="she", kind="disagreement")
        assert row["public_id"] == item.public_id


def test_inter_annotator_kappa_is_zero_when_one_annotator_gives_one_label(annotator, second_annotator):
    """docs/domain.md, 'Metrics': the kappa rule holds for annotators too."""
    pool = PoolFactory(name="constant")
    second = ["correct", "misgendering", "correct", "no_pronoun"]
    for label in second:
        item = PoolItemFactory(pool=pool)
        AnnotationFactory(item=item, annotator=annotator, label="correct")
        AnnotationFactory(item=item, annotator=second_annotator, label=label)
    block = report_build(pool=pool)["inter_annotator"]["pronoun_label"]
    expected = sm_cohens_kappa(pd.crosstab(np.array(["correct"] * 4), np.array(second)).to_numpy())
    assert block["cohen_kappa"] == 0.0
    assert block["kappa_ci"] == pytest.approx([expected.kappa_low, expected.kappa_upp])
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
