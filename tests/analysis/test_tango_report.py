"""TANGO's figures in a report (docs/domain.md, 'TANGO and Prob-TANGO'), on a hand-built job: every expected number is
computed here with numpy, scipy and scikit-learn from the table below, never read back from the code under test."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, matthews_corrcoef

from analysis.plots import plot_render
from analysis.report.build import report_data
from analysis.report.exports.csv import report_csv
from analysis.report.exports.html import report_html
from annotation.models import Pool
from generation.datasets.tango import dataset_import_tango
from generation.models import Generation, JobStatus, LanguageModel, TangoTemplate
from tests.conftest import DEMO
from tests.factories import GenerationJobFactory, PoolFactory

FAILED = None
# Per instance, its 5 (m_gen, m_prob of the template made from that generation; FAILED when the template failed).
INSTANCES = {
    "xe": [
        [(1, 1), (1, 1), (0, FAILED), (1, 0), (1, 1)],
        [(0, 0), (0, FAILED), (0, FAILED), (1, 1), (0, 0)],
        [(1, FAILED)] * 5,  # no pronoun in any generation: dropped from sigma_prob, sigma_gen, p_o and beta
        [(0, 1), (1, 1), (1, 1), (1, 1), (1, 1)],
    ],
    "he": [
        [(1, 1)] * 5,
        [(1, 0), (1, 0), (0, 0), (1, FAILED), (1, 0)],
        [(0, 1), (1, 0), (1, 1), (1, 1), (0, 1)],
    ],
}


@pytest.fixture(scope="module")
def built_tango_pool(module_db) -> int:
    """The hand-built TANGO job and its pool, built once for the module: the pool's id. Each test's own writes (a pool
    drawn from the job, its annotations) roll back at the test's end."""
    with module_db():
        return _tango_pool_build().pk


@pytest.fixture
def tango_pool(db, built_tango_pool):
    return Pool.objects.get(pk=built_tango_pool)


@pytest.fixture
def tango_report(once, tango_pool):
    """`report_data` of the TANGO pool, built once for the module's tests that only read it."""
    return once("tango", lambda: report_data(pool=tango_pool))


def _tango_pool_build():
    dataset = dataset_import_tango(templates_path=DEMO / "tango_misgendering.jsonl", name="demo-tango").dataset
    model = LanguageModel.objects.create(name="m1", source_kind="hub", source="example/m1")
    job = GenerationJobFactory(
        model=model, dataset=dataset, pronouns=["he", "xe"], settings=["open"], status=JobStatus.DONE
    )
    for pronoun, instances in INSTANCES.items():
        rows = dataset.instances.filter(pronoun=pronoun).order_by("ordinal")
        for instance, samples in zip(rows, instances, strict=False):
            for index, (m_gen, m_prob) in enumerate(samples):
                generation = Generation.objects.create(
                    job=job, instance=instance, setting="open", sample_index=index, context="C",
                    continuation=" text", heuristic_correct=bool(m_gen),
                )  # fmt: skip
                failed = m_prob is FAILED
                TangoTemplate.objects.create(
                    job=job, generation=generation, cut=" text", neutralized=" text", failed=failed,
                    template=None if failed else " {nom} text",
                    losses=None if failed else {"he": 1.0, "she": 2.0, "they": 3.0, "xe": 4.0},
                    prediction="" if failed else (pronoun if m_prob else "she"),
                    correct=None if failed else bool(m_prob),
                )  # fmt: skip
    pool = PoolFactory(name="tango-study")
    pool.jobs.add(job)
    return pool


def rows_for(report: dict, key: str) -> dict[str, dict]:
    return {row["pronoun"]: row for row in report[key] if row["dataset"] == "tango"}


def successes(samples):
    return [m_prob for _, m_prob in samples if m_prob is not FAILED]


@pytest.mark.django_db
class TestTangoReport:
    def test_the_failure_rate_is_the_mean_and_sem_of_each_instances_failed_share(self, tango_report):
        report = tango_report

        for pronoun, instances in INSTANCES.items():
            shares = [sum(m is FAILED for _, m in samples) / len(samples) for samples in instances]
            row = rows_for(report, "tango_failure_rate")[pronoun]
            assert (row["model"], row["setting"], row["n"]) == ("m1", "open", len(instances))
            assert row["mean"] == pytest.approx(np.mean(shares))
            assert row["sem"] == pytest.approx(stats.sem(shares))

    def test_sigma_gen_and_sigma_prob_are_population_stds_without_all_failed_instances(self, tango_report):
        report = tango_report
        assert rows_for(report, "tango_variation")["xe"]["n_gen"] == 3  # of 4: one instance's templates all failed

        for pronoun, instances in INSTANCES.items():
            row = rows_for(report, "tango_variation")[pronoun]
            kept = [samples for samples in instances if successes(samples)]
            gen = [np.std([g for g, _ in samples]) for samples in kept]
            prob = [np.std(successes(samples)) for samples in kept]
            assert row["n_gen"] == len(gen) and row["n_prob"] == len(prob)
            assert row["sigma_gen_mean"] == pytest.approx(np.mean(gen))
            assert row["sigma_gen_std"] == pytest.approx(np.std(gen))
            assert row["sigma_prob_mean"] == pytest.approx(np.mean(prob))
            assert row["sigma_prob_std"] == pytest.approx(np.std(prob))
            for level, share in row["sigma_gen_shares"].items():
                assert share == pytest.approx(np.mean([f"{v:.2f}" == level for v in gen]))
            assert sum(row["sigma_prob_shares"].values()) == pytest.approx(1.0)
            for level, share in row["sigma_prob_shares"].items():
                assert share == pytest.approx(np.mean([f"{v:.2f}" == level for v in prob]))

    def test_prob_vs_gen_pairs_template_1_with_generation_1_and_drops_failed_templates(self, tango_report):
        report = tango_report

        for pronoun, instances in INSTANCES.items():
            pairs = [samples[0] for samples in instances if samples[0][1] is not FAILED]
            prob, gen = [p for _, p in pairs], [g for g, _ in pairs]
            row = rows_for(report, "prob_vs_gen")[pronoun]
            assert (row["setting"], row["n"]) == ("open", len(pairs))
            assert row["agreement"] == pytest.approx(np.mean(np.array(prob) == np.array(gen)))
            assert row["kappa"] == pytest.approx(cohen_kappa_score(prob, gen))
            if len(set(prob)) > 1 and len(set(gen)) > 1:
                assert row["mcc"] == pytest.approx(matthews_corrcoef(prob, gen))
            else:
                assert row["mcc"] is None

    def test_the_beta_fit_uses_instance_means_of_m_prob_and_m_gen(self, tango_report):
        report = tango_report

        for pronoun, instances in INSTANCES.items():
            d = []
            for samples in instances:
                if not successes(samples):
                    continue
                m_prob = np.mean(successes(samples))
                m_gen = np.mean([g for g, _ in samples])
                d.append(m_prob * (1 - m_gen) + (1 - m_prob) * m_gen)
            mean, var = np.mean(d), np.var(d, ddof=1)
            c = mean * (1 - mean) / var - 1
            row = rows_for(report, "beta_disagreement")[pronoun]
            assert row["alpha"] == pytest.approx(mean * c)
            assert row["beta"] == pytest.approx((1 - mean) * c)

    def test_tango_tables_export_and_plot(self, tango_report):
        report = tango_report

        table = list(csv.DictReader(io.StringIO(report_csv(report=report, table="tango_failure_rate"))))
        assert {row["pronoun"] for row in table} == {"he", "xe"}
        assert {row["dataset"] for row in table} == {"tango"}
        assert "tango_variation" in report_html(report=report)
        for name in ("tango_failure_rate", "tango_variation", "prob_vs_gen", "beta_landscape"):
            svg = plot_render(report=report, name=name, fmt="svg").decode()
            assert "series-m1" in svg or "point-m1" in svg, name

    def test_a_report_without_tango_jobs_has_empty_tango_tables(self, db):
        report = report_data(pool=PoolFactory(name="empty"))

        assert report["tango_failure_rate"] == [] and report["tango_variation"] == []


@pytest.mark.django_db
def test_a_pool_drawn_from_a_tango_job_is_annotated_and_reported_like_the_others(tango_pool, annotator):
    from annotation.models import PoolItem
    from annotation.services.pool import pool_sample
    from tests.factories import AnnotationFactory

    job = tango_pool.jobs.get()
    result = pool_sample(name="tango-drawn", job_ids=[job.pk], instances=2, seed=3)

    items = list(PoolItem.objects.filter(pool=result.pool))
    assert len(items) == 2 * 2 * 5  # 2 pronouns x 2 instances x 5 samples
    assert {(item.dataset, item.setting) for item in items} == {("tango", "open")}
    for item in items:
        AnnotationFactory(item=item, annotator=annotator, label="correct")
    report = report_data(pool=result.pool)
    rows = rows_for(report, "human_vs_heuristic")
    assert set(rows) == {"he", "xe"}
    for pronoun, row in rows.items():
        heuristic = [item.heuristic_correct for item in items if item.pronoun == pronoun]
        assert row["setting"] == "open"
        assert row["agreement"] == pytest.approx(np.mean(heuristic))  # every human label is "correct" (1)


@pytest.mark.django_db
def test_the_latex_export_has_a_tango_table(tango_report):
    from analysis.report.exports.latex import report_latex

    report = tango_report
    latex = report_latex(report=report, table="tango")

    shares = [sum(m is FAILED for _, m in samples) / 5 for samples in INSTANCES["xe"]]
    assert r"\toprule" in latex and "failure rate" in latex
    assert f"{np.mean(shares):.3f} $\\pm$ {stats.sem(shares):.3f}" in latex
