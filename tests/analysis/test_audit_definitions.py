"""An independent check of the report against the definitions (docs/domain.md, 'Metrics' and 'Aggregates') on a
seeded random study: two models x two datasets x two settings x two pronouns, every expected figure computed here
from the definition with numpy, scipy, statsmodels and spaCy, never from Concord's own helpers."""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from accounts.roles import ANNOTATOR
from analysis.report.exports.render import report_render
from analysis.services import report_build_uncached
from tests.conftest import _person
from tests.factories import (
    AnnotationFactory,
    DatasetFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    ProbResultFactory,
    TemplateFactory,
)

MODELS = ["m1", "m2"]
DATASETS = ["misgendered", "ruff"]
SETTINGS = ["pre", "post"]
PRONOUNS = ["he", "xe"]
LABELS = ["correct", "misgendering", "no_pronoun"]
WORDS = ["xe", "went", "home", "the", "market", "Xe", "bread", "and", ".", "a"]


def _approx(value):
    return pytest.approx(value, rel=1e-9, abs=1e-12)


def _sem(values) -> float | None:
    values = np.asarray(values, dtype=float)
    return None if values.size < 2 else float(stats.sem(values))


def _row(rows: list[dict], **keys) -> dict:
    matches = [row for row in rows if all(row[k] == v for k, v in keys.items())]
    assert len(matches) == 1, (keys, rows)
    return matches[0]


@functools.cache
def _tokenizer():
    import spacy  # here, not at collection: spaCy loads torch

    return spacy.blank("en")


def _repetition(text: str) -> float | None:
    tokens = [token.text.lower() for token in _tokenizer()(text)]
    product = 1.0
    for n in range(1, 5):
        grams = Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
        if not grams:
            return None
        product *= (len(grams) - sum(1 for c in grams.values() if c == 1)) / len(grams)
    return product**0.25


def study_build_random(annotator, second_annotator):
    """The random study and, per cell, what the test knows about it."""
    rng = np.random.default_rng(20240531)
    pool = PoolFactory(name="audit")
    truth: dict[tuple, dict] = {}
    for dataset_kind in DATASETS:
        dataset = DatasetFactory(name=dataset_kind, kind=dataset_kind)
        template = TemplateFactory(dataset=dataset)
        instances = {
            pronoun: [
                InstanceFactory(template=template, dataset=dataset, pronoun=pronoun, draw=draw)
                for draw in range(int(rng.integers(5, 9)))
            ]
            for pronoun in PRONOUNS
        }
        for model in MODELS:
            job = GenerationJobFactory(model=LanguageModelFactory(name=model), dataset=dataset, settings=SETTINGS)
            pool.jobs.add(job)
            for pronoun in PRONOUNS:
                # A cell whose probability side is constant (every instance right), as the paper's Mixtral xe.
                constant = model == "m2" and pronoun == "xe" and dataset_kind == "misgendered"
                for instance in instances[pronoun]:
                    m_prob = 1 if constant else int(rng.random() < 0.6)
                    ProbResultFactory(job=job, instance=instance, correct=bool(m_prob))
                    for setting in SETTINGS:
                        verdicts = (rng.random(5) < 0.7).astype(int).tolist()
                        texts = []
                        for index, verdict in enumerate(verdicts):
                            words = rng.choice(WORDS, int(rng.integers(1, 12))).tolist()
                            continuation = " " + " ".join(words)
                            generation = GenerationFactory(
                                job=job,
                                instance=instance,
                                setting=setting,
                                sample_index=index,
                                continuation=continuation,
                                heuristic_correct=bool(verdict),
                                first_pronoun="",
                                first_pronoun_offset=None,
                            )
                            texts.append(generation.context + generation.continuation)
                        cell = truth.setdefault((model, dataset_kind, setting, pronoun), {"instances": []})
                        cell["instances"].append({"m_prob": m_prob, "samples": verdicts, "texts": texts})
    people = [annotator, second_annotator]
    for model, dataset_kind, setting, pronoun in itertools.product(MODELS, DATASETS, SETTINGS, PRONOUNS):
        cell = truth[(model, dataset_kind, setting, pronoun)]
        cell["items"] = []
        for _ in range(int(rng.integers(3, 7))):
            heuristic = bool(rng.random() < 0.7)
            item = PoolItemFactory(
                pool=pool,
                model_name=model,
                dataset=dataset_kind,
                setting=setting,
                pronoun=pronoun,
                heuristic_correct=heuristic,
            )
            order = people if rng.random() < 0.5 else people[::-1]
            count = 2 if rng.random() < 0.6 else 1
            labels = [str(rng.choice(LABELS, p=[0.6, 0.25, 0.15])) for _ in range(count)]
            flags = [bool(rng.random() < 0.3) for _ in range(count)]
            for person, label, flag in zip(order, labels, flags, strict=False):
                AnnotationFactory(item=item, annotator=person, label=label, extraneous=flag)
            cell["items"].append(
                {
                    "heuristic": int(heuristic),
                    "labels": labels,
                    "flags": flags,
                    "by": [p.username for p in order][:count],
                }
            )
    return pool, truth


def _built():
    pool, truth = study_build_random(_person("ana", ANNOTATOR), _person("bo", ANNOTATOR))
    return truth, report_build_uncached(pool=pool)


@pytest.fixture
def built(once, db):
    """What the test knows about the study, and its report: built once for the module (tests/analysis/conftest.py),
    since every test here only reads them."""
    return once("audit", _built)


@pytest.fixture
def truth(built):
    return built[0]


@pytest.fixture
def report(built):
    return built[1]


def _cells(truth):
    for (model, dataset, setting, pronoun), cell in sorted(truth.items()):
        yield {"model": model, "dataset": dataset, "setting": setting, "pronoun": pronoun}, cell


def _human(item) -> tuple[str, bool]:
    """With one or two annotations and no adjudication the human label is the first annotator's (a two-way tie goes
    to the first), and so is the extraneous flag."""
    return item["labels"][0], item["flags"][0]


def _by_annotator(item: dict) -> dict:
    """An item's two labels and flags in annotator-name order."""
    order = sorted(range(2), key=lambda k: item["by"][k])
    return {**item, "labels": [item["labels"][k] for k in order], "flags": [item["flags"][k] for k in order]}


class TestHumanSide:
    def test_human_vs_heuristic_is_raw_agreement_with_scipy_sem(self, truth, report):
        for keys, cell in _cells(truth):
            agree = [int((_human(i)[0] != "misgendering") == bool(i["heuristic"])) for i in cell["items"]]
            row = _row(report["human_vs_heuristic"], **keys)
            assert row["n"] == len(agree)
            assert row["agreement"] == _approx(np.mean(agree))
            assert row["sem"] == _approx(_sem(agree))

    def test_extraneous_rate_and_label_distribution(self, truth, report):
        for keys, cell in _cells(truth):
            flags = [int(_human(i)[1]) for i in cell["items"]]
            row = _row(report["extraneous_rate"], **keys)
            assert row["rate"] == _approx(np.mean(flags)) and row["sem"] == _approx(_sem(flags))
            counts = Counter(_human(i)[0] for i in cell["items"])
            row = _row(report["label_distribution"], **keys)
            assert {label: row[label] for label in LABELS} == {label: counts[label] for label in LABELS}

    def test_inter_annotator_on_the_two_annotations_by_annotator(self, truth, report):
        # docs/domain.md, "Headline figures": two fixed annotators are compared as annotators, whoever came first.
        pairs = [_by_annotator(i) for _, cell in _cells(truth) for i in cell["items"] if len(i["labels"]) == 2]
        views = {
            "pronoun_label": ([p["labels"][0] for p in pairs], [p["labels"][1] for p in pairs], LABELS),
            "pronoun_binary": (
                [int(p["labels"][0] != "misgendering") for p in pairs],
                [int(p["labels"][1] != "misgendering") for p in pairs],
                [0, 1],
            ),
            "extraneous": ([int(p["flags"][0]) for p in pairs], [int(p["flags"][1]) for p in pairs], [0, 1]),
        }
        for name, (a, b, categories) in views.items():
            block = report["inter_annotator"][name]
            agree = [int(x == y) for x, y in zip(a, b, strict=True)]
            assert block["n_items"] == len(pairs)
            assert block["raw_agreement"] == _approx(np.mean(agree))
            assert block["raw_agreement_sem"] == _approx(_sem(agree))
            table = np.array([[sum(x == r and y == c for x, y in zip(a, b, strict=True)) for c in categories]
                              for r in categories])  # fmt: skip
            expected = sm_cohens_kappa(table)
            assert block["cohen_kappa"] == _approx(expected.kappa)
            assert block["kappa_ci"] == _approx([expected.kappa_low, expected.kappa_upp])
            # Nominal Krippendorff's alpha from the coincidence matrix.
            coincidences = Counter()
            for x, y in zip(a, b, strict=True):
                coincidences[(x, y)] += 1
                coincidences[(y, x)] += 1
            totals = Counter()
            for (x, _), count in coincidences.items():
                totals[x] += count
            n = sum(totals.values())
            observed = sum(count for (x, y), count in coincidences.items() if x != y) / n
            chance = sum(totals[x] * totals[y] for x in totals for y in totals if x != y) / (n * (n - 1))
            assert block["krippendorff_alpha"] == _approx(1 - observed / chance)


class TestAutomaticSide:
    def test_prob_vs_gen_pairs_m_prob_with_the_first_sample(self, truth, report):
        for keys, cell in _cells(truth):
            m_prob = np.array([i["m_prob"] for i in cell["instances"]])
            first = np.array([i["samples"][0] for i in cell["instances"]])
            row = _row(report["prob_vs_gen"], **keys)
            assert row["n"] == m_prob.size
            agree = (m_prob == first).astype(float)
            assert row["agreement"] == _approx(agree.mean()) and row["agreement_sem"] == _approx(stats.sem(agree))
            if np.unique(m_prob).size < 2 or np.unique(first).size < 2:
                assert row["mcc"] is None and row["mcc_ci"] is None
                assert row["kappa"] == 0.0
                continue
            pearson = stats.pearsonr(m_prob, first)
            interval = pearson.confidence_interval()
            assert row["mcc"] == _approx(pearson.statistic)
            assert row["mcc_ci"] == _approx([interval.low, interval.high])
            table = np.array([[np.sum((m_prob == r) & (first == c)) for c in (0, 1)] for r in (0, 1)])
            expected = sm_cohens_kappa(table)
            assert row["kappa"] == _approx(expected.kappa)
            assert row["kappa_ci"] == _approx([expected.kappa_low, expected.kappa_upp])

    def test_the_constant_cell_has_kappa_zero_with_the_crosstab_interval(self, truth, report):
        keys = {"model": "m2", "dataset": "misgendered", "pronoun": "xe"}
        for setting in SETTINGS:
            cell = truth[(keys["model"], keys["dataset"], setting, keys["pronoun"])]
            first = np.array([i["samples"][0] for i in cell["instances"]])
            row = _row(report["prob_vs_gen"], **keys, setting=setting)
            # pandas.crosstab(m_prob, first) of an all-ones m_prob: one row, a column per observed first verdict.
            table = np.array([[np.sum(first == c) for c in np.unique(first)]])
            if table.shape[1] < 2:
                continue
            expected = sm_cohens_kappa(table)
            assert row["kappa"] == 0.0 and row["mcc"] is None
            assert row["kappa_ci"] == _approx([expected.kappa_low, expected.kappa_upp])

    def test_instance_variation_shares_population_stds(self, truth, report):
        for keys, cell in _cells(truth):
            stds = np.array([np.std(i["samples"], ddof=0) for i in cell["instances"]])
            row = _row(report["instance_variation"], **keys)
            assert row["n"] == stds.size
            for level in (0.0, 0.4, 0.4899):
                share = float(np.mean(np.isclose(stds, level, atol=1e-4)))
                assert row["shares"][f"{round(level, 2):.2f}"] == _approx(share)

    def test_beta_by_moments_with_sample_variance(self, truth, report):
        for keys, cell in _cells(truth):
            m_prob = np.array([i["m_prob"] for i in cell["instances"]], dtype=float)
            mean_gen = np.array([np.mean(i["samples"]) for i in cell["instances"]])
            d = m_prob * (1 - mean_gen) + (1 - m_prob) * mean_gen
            mean, var = d.mean(), d.var(ddof=1)
            row = _row(report["beta_disagreement"], **keys)
            assert row["n"] == d.size and row["mean"] == _approx(mean) and row["var"] == _approx(var)
            c = mean * (1 - mean) / var - 1
            if c > 0:
                assert row["alpha"] == _approx(mean * c) and row["beta"] == _approx((1 - mean) * c)

    def test_repetition_rate_mean_and_population_std(self, truth, report):
        for keys, cell in _cells(truth):
            rates = [_repetition(text) for i in cell["instances"] for text in i["texts"]]
            rates = np.array([r for r in rates if r is not None])
            row = _row(report["repetition"], **keys)
            assert row["n"] == rates.size
            assert row["mean"] == pytest.approx(rates.mean(), abs=1e-9)
            assert row["std"] == pytest.approx(rates.std(ddof=0), abs=1e-9)


class TestAggregates:
    def test_accuracy_per_cell(self, truth, report):
        for keys, cell in _cells(truth):
            m_prob = [i["m_prob"] for i in cell["instances"]]
            every = [v for i in cell["instances"] for v in i["samples"]]
            first = [i["samples"][0] for i in cell["instances"]]
            human = [int(_human(i)[0] != "misgendering") for i in cell["items"]]
            row = _row(report["accuracy"], **keys)
            for name, values in (("prob", m_prob), ("gen", every), ("gen_first", first), ("human", human)):
                assert row[name] == _approx(np.mean(values)), name
                assert row[f"{name}_sem"] == _approx(_sem(values)), name
                assert row[f"{name}_n"] == len(values), name

    def test_conflict_rate_sums_conflicts_over_instances(self, truth, report):
        rows = []
        for keys, cell in _cells(truth):
            for i in cell["instances"]:
                rows.append({**keys, "conflict": int(i["m_prob"] != i["samples"][0])})
        total = _row(report["conflict_rate"], scope="all", value="all")
        assert total["instances"] == len(rows)
        assert total["rate"] == _approx(np.mean([r["conflict"] for r in rows]))
        for scope in ("dataset", "model", "pronoun", "setting"):
            for value in {r[scope] for r in rows}:
                flags = [r["conflict"] for r in rows if r[scope] == value]
                row = _row(report["conflict_rate"], scope=scope, value=value)
                assert (row["conflicts"], row["instances"]) == (sum(flags), len(flags))
                assert row["rate"] == _approx(sum(flags) / len(flags))


class TestExports:
    def test_csv_and_json_carry_the_reports_numbers_unrounded(self, report):
        for table in ("prob_vs_gen", "accuracy", "beta_disagreement", "conflict_rate", "human_vs_heuristic"):
            rows = list(csv.DictReader(io.StringIO(report_render(report=report, fmt="csv", table=table).body)))
            data = json.loads(report_render(report=report, fmt="json", table=table).body)["rows"]
            assert len(rows) == len(report[table]) == len(data)
            for row, parsed, original in zip(rows, data, report[table], strict=True):
                for key, value in original.items():
                    if isinstance(value, float):
                        assert float(row[key]) == value and parsed[key] == value, (table, key)
                    elif isinstance(value, list):
                        assert [float(row[f"{key}_low"]), float(row[f"{key}_high"])] == value, (table, key)
                        assert parsed[f"{key}_low"] == value[0] and parsed[f"{key}_high"] == value[1]
                    elif value is None:
                        assert row[key if not key.endswith("_ci") else f"{key}_low"] == "", (table, key)

    def test_latex_prints_the_reports_numbers_to_three_decimals(self, report):
        latex = report_render(report=report, fmt="latex", table="prob_vs_gen").body
        for row in report["prob_vs_gen"]:
            assert f"{row['agreement']:.3f}" in latex
            if row["kappa_ci"]:
                assert f"{row['kappa']:.3f} [{row['kappa_ci'][0]:.3f}, {row['kappa_ci'][1]:.3f}]" in latex
