"""The report of the hand-built study (tests/analysis/factories.py), figure by figure, worked out independently."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.services import report_build
from generation.models import Generation
from tests.analysis.factories import CONTINUATIONS, XE_INSTANCES, study_build

CELL_XE = {"model": "m1", "dataset": "misgendered", "setting": "pre", "pronoun": "xe"}
CELL_HE = {**CELL_XE, "pronoun": "he"}


@pytest.fixture
def report(study_report):
    """Built once for the module (tests/analysis/conftest.py): these tests only read it."""
    return study_report


def _row(rows: list[dict], cell: dict) -> dict:
    matches = [row for row in rows if all(row[k] == v for k, v in cell.items())]
    assert len(matches) == 1, rows
    return matches[0]


class TestInterAnnotator:
    # Overlap items 1, 2, 3, 5 as (first, second): correct/correct, misgendering/correct, misgendering/misgendering,
    # no_pronoun/correct (bo annotated item 5 first).
    FIRST = ["correct", "misgendering", "misgendering", "no_pronoun"]
    SECOND = ["correct", "correct", "misgendering", "correct"]

    # The same items' labels by annotator (docs/domain.md, "Headline figures": two fixed annotators get Cohen's
    # kappa between them, whoever annotated an item first).
    ANA = ["correct", "misgendering", "misgendering", "correct"]
    BO = ["correct", "correct", "misgendering", "no_pronoun"]

    def test_it_compares_the_two_annotations_of_the_overlap_items_by_annotator(self, report):
        block = report["inter_annotator"]["pronoun_label"]
        assert block["n_items"] == 4
        assert block["raw_agreement"] == pytest.approx(2 / 4)
        assert block["kappa_method"] == "cohen"
        labels = ["correct", "misgendering", "no_pronoun"]
        assert block["cohen_kappa"] == pytest.approx(cohen_kappa_score(self.ANA, self.BO, labels=labels))
        assert block["kappa_ci"][0] < block["cohen_kappa"] < block["kappa_ci"][1]

    def test_it_collapses_labels_to_binary(self, report):
        block = report["inter_annotator"]["pronoun_binary"]
        # binary first = [1, 0, 0, 1], second = [1, 1, 0, 1]: p_o = 3/4, kappa = 1/2, alpha = 8/15 (worked in test_metrics)
        assert block["raw_agreement"] == pytest.approx(0.75)
        assert block["cohen_kappa"] == pytest.approx(0.5)
        assert block["krippendorff_alpha"] == pytest.approx(8 / 15)

    def test_it_compares_the_extraneous_flags(self, report):
        block = report["inter_annotator"]["extraneous"]
        # first = [F, T, F, F], second = [F, F, T, F]
        assert block["raw_agreement"] == pytest.approx(0.5)
        assert block["cohen_kappa"] == pytest.approx(cohen_kappa_score([0, 1, 0, 0], [0, 0, 1, 0]))

    def test_it_gives_the_label_confusion_table(self, report):
        confusion = report["inter_annotator"]["confusion"]
        assert confusion["labels"] == ["correct", "misgendering", "no_pronoun"]
        assert confusion["matrix"] == [[1, 0, 0], [1, 1, 0], [1, 0, 0]]

    def test_it_counts_the_annotator_pairs(self, report):
        pairs = {(p["annotator_1"], p["annotator_2"]): p for p in report["inter_annotator"]["annotator_pairs"]}
        assert pairs[("ana", "bo")]["n_items"] == 3
        assert pairs[("bo", "ana")]["n_items"] == 1


class TestHumanSide:
    def test_it_scores_the_human_verdict_against_the_heuristic_per_cell(self, report):
        # xe: human binary [1, 0 (adjudicated), 0, 1] vs heuristic [1, 1, 0, 1]; he: [1 (bo first), 1] vs [0, 1]
        xe = _row(report["human_vs_heuristic"], CELL_XE)
        assert (xe["n"], xe["agreement"]) == (4, pytest.approx(0.75))
        assert xe["sem"] == pytest.approx(stats.sem([1, 0, 1, 1]))
        he = _row(report["human_vs_heuristic"], CELL_HE)
        assert (he["n"], he["agreement"]) == (2, pytest.approx(0.5))
        assert he["sem"] == pytest.approx(stats.sem([0, 1]))

    def test_it_lists_the_disagreeing_items(self, report):
        rows = report["disagreements"]
        assert sorted(row["human_label"] for row in rows) == ["misgendering", "no_pronoun"]
        assert {row["heuristic_correct"] for row in rows} == {True, False}

    def test_it_counts_labels_per_cell(self, report):
        xe = _row(report["label_distribution"], CELL_XE)
        assert (xe["n"], xe["correct"], xe["misgendering"], xe["no_pronoun"]) == (4, 1, 2, 1)
        he = _row(report["label_distribution"], CELL_HE)
        assert (he["n"], he["correct"], he["misgendering"], he["no_pronoun"]) == (2, 1, 0, 1)

    def test_it_rates_extraneous_language_using_the_first_annotator_when_adjudication_leaves_it_open(self, report):
        xe = _row(report["extraneous_rate"], CELL_XE)
        assert xe["rate"] == pytest.approx(0.25)
        assert xe["sem"] == pytest.approx(stats.sem([0, 1, 0, 0]))
        assert _row(report["extraneous_rate"], CELL_HE)["rate"] == pytest.approx(0.5)


class TestAutomaticSide:
    def test_it_pairs_probability_results_with_the_first_sample(self, report):
        m_prob = [p for p, _ in XE_INSTANCES]
        first = [s[0] for _, s in XE_INSTANCES]
        row = _row(report["prob_vs_gen"], CELL_XE)
        assert row["n"] == 6
        assert row["mcc"] == pytest.approx(stats.pearsonr(m_prob, first).statistic)
        assert row["kappa"] == pytest.approx(cohen_kappa_score(m_prob, first))
        assert row["agreement"] == pytest.approx(np.mean(np.array(m_prob) == np.array(first)))
        assert row["agreement_sem"] == pytest.approx(stats.sem(np.array(m_prob) == np.array(first)))
        assert len(row["mcc_ci"]) == 2 and len(row["kappa_ci"]) == 2

    def test_it_leaves_mcc_undefined_but_gives_kappa_zero_when_the_probability_side_is_constant(self, report):
        # he: m_prob = [1, 1], first samples = [1, 0]; kappa's interval is statsmodels' on the observed 1 x 2 table.
        row = _row(report["prob_vs_gen"], CELL_HE)
        assert row["mcc"] is None and row["mcc_ci"] is None
        assert row["kappa"] == 0.0
        expected = sm_cohens_kappa(np.array([[1, 1]]))
        assert row["kappa_ci"] == pytest.approx([expected.kappa_low, expected.kappa_upp])
        assert row["agreement"] == pytest.approx(0.5)

    def test_it_shares_instances_by_sample_variation(self, report):
        row = _row(report["instance_variation"], CELL_XE)
        stds = [f"{np.std(samples):.2f}" for _, samples in XE_INSTANCES]
        assert row["n"] == 6
        assert row["shares"] == {key: stds.count(key) / 6 for key in ("0.00", "0.40", "0.49")}

    def test_it_fits_the_beta_by_moments(self, report):
        d = [p * (1 - np.mean(s)) + (1 - p) * np.mean(s) for p, s in XE_INSTANCES]
        mean, var = np.mean(d), np.var(d, ddof=1)
        c = mean * (1 - mean) / var - 1
        row = _row(report["beta_disagreement"], CELL_XE)
        assert row["alpha"] == pytest.approx(mean * c)
        assert row["beta"] == pytest.approx((1 - mean) * c)
        # he: d = [0, 1], so the sample variance exceeds mean (1 - mean) and no beta fits
        he = _row(report["beta_disagreement"], CELL_HE)
        assert he["alpha"] is None and he["beta"] is None

    def test_it_averages_repetition_rates_of_the_stored_generations(self, annotator, second_annotator):
        report = report_build(pool=study_build(ana=annotator, bo=second_annotator))  # read beside its generations
        import spacy  # here, not at collection: spaCy loads torch

        tokenizer = spacy.blank("en").tokenizer

        def rr(text: str) -> float | None:
            words = [t.text.lower() for t in tokenizer(text)]
            if len(words) < 4:
                return None
            rates = []
            for n in range(1, 5):
                grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
                types = set(grams)
                rates.append(sum(1 for g in types if grams.count(g) > 1) / len(types))
            return float(np.prod(rates) ** 0.25)

        # The stored generation is context + continuation, as the released sample files keep it.
        stored = Generation.objects.order_by("id").values_list("context", "continuation")
        texts = [context + continuation for context, continuation in stored]
        assert [c for _, c in stored] == [CONTINUATIONS[i % len(CONTINUATIONS)] for i in range(len(texts))]
        xe = [rr(t) for t in texts[: 5 * len(XE_INSTANCES)]]
        xe = [x for x in xe if x is not None]
        row = _row(report["repetition"], CELL_XE)
        assert row["n"] == len(xe)
        assert row["mean"] == pytest.approx(np.mean(xe))
        assert row["std"] == pytest.approx(np.std(xe))


def test_it_reports_no_overlap_as_zero_items_and_nulls(annotator, second_annotator):
    from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

    pool = PoolFactory(name="solo")
    AnnotationFactory(item=PoolItemFactory(pool=pool), annotator=annotator, label="correct")
    report = report_build(pool=pool)
    for key in ("pronoun_label", "pronoun_binary", "extraneous"):
        block = report["inter_annotator"][key]
        assert block["n_items"] == 0
        assert block["raw_agreement"] is None
        assert block["cohen_kappa"] is None and block["kappa_ci"] is None
        assert block["krippendorff_alpha"] is None
    assert report["prob_vs_gen"] == [] and report["repetition"] == []
    assert report["human_vs_heuristic"][0]["sem"] is None


def test_it_reports_an_empty_pool(db):
    from tests.factories import PoolFactory

    report = report_build(pool=PoolFactory(name="empty"))
    assert report["n_annotated"] == 0
    assert report["inter_annotator"]["pronoun_label"]["n_items"] == 0
    assert report["human_vs_heuristic"] == [] and report["disagreements"] == []


@pytest.mark.django_db
def test_a_finished_generation_chunk_fills_the_repetition_cache_for_its_generations(django_capture_on_commit_callbacks):
    """Reports start warm: a finished chunk's signal queues the fill for exactly its own instances (inline without a
    broker)."""
    from analysis.models import RepetitionRate
    from generation.models import Job
    from generation.signals import chunk_finished
    from tests.factories import GenerationFactory, GenerationJobFactory, InstanceFactory

    job = GenerationJobFactory()
    mine, other = InstanceFactory(), InstanceFactory()
    for index in range(2):
        GenerationFactory(
            job=job, instance=mine, sample_index=index, continuation=" the cat sat on the mat the cat sat"
        )
    GenerationFactory(job=job, instance=other, continuation=" xe left early and never came back")

    with django_capture_on_commit_callbacks(execute=True):
        chunk_finished.send(sender=Job, job_id=job.pk, instance_ids=[mine.pk])

    cached = RepetitionRate.objects.filter(job=job)
    assert set(cached.values_list("generation__instance_id", flat=True)) == {mine.pk}
    assert cached.count() == 2 and all(rate is not None for rate in cached.values_list("rate", flat=True))
