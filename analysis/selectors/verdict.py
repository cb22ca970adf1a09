"""The judge's verdict in the report (docs/domain.md, 'The judge's verdict'): for each finished judge run that covers
the pool (a run over the pool, or over one of its generation jobs: each pool item then takes its generation's label),
may the judge replace the annotators, and what are the rates once it labels everything?

- `judge_verdict`: one row per run: the Alternative Annotator Test, chance-corrected agreement (with the item's human
  label, with each annotator, and the human ceiling) and selective judging with a guarantee.
- `prediction_powered`: for runs over a generation job, the prediction-powered misgendering rate per model x dataset
  x pronoun (and pronoun "all"), the unit being a context (instance x setting).

Only study items count. The human label here is the one of docs/domain.md, "The judge's verdict": the adjudicated
label, else the majority of the annotations, a tie having none (unlike the report's other sections, where a tie goes to the first annotator).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import TypedDict, cast

import numpy as np

from analysis.metrics.multirater import SCALE_KEYS
from analysis.metrics.scales import errors, human_value, label_numbers, weighted_kappas
from analysis.metrics.verdict import (
    alt_test_by_epsilon,
    chance_corrected,
    coverage_at,
    human_label,
    ppi_mean,
    selective_threshold,
)
from analysis.report.machine_types import JudgeVerdictRow, PredictionPoweredRow
from annotation.labelset import label_keys, rate_positive
from annotation.models import NOMINAL, STUDY, Pool, PoolItem
from annotation.schema import MISGENDERING
from common.frames import pd
from generation.datasets.labels import dataset_label
from judging.models import JudgeMode, JudgeRun, MachineLabel
from judging.scoring import option_probabilities
from judging.selectors import covering_runs, run_pool_labels

DEFAULT_EPSILON = 0.15
DEFAULT_ALPHA = 0.1
DEFAULT_DELTA = 0.1
ALT_TEST_Q = 0.05
MIN_ITEMS = 30  # an annotator's items for the Alt-Test; a pair's shared items for the human ceiling
PPI_ALPHA = 0.05
NOTE = (
    "A judge is a model: its verdict holds for this pool, these annotators and this epsilon, not for the judge in "
    "general."
)
CHANCE_KEYS = ("cohen_kappa", "scott_pi", "gwet_ac1")


@dataclass(frozen=True)
class VerdictParameters:
    """The report's parameters of the verdict: the Alt-Test's epsilon, q and minimum items per annotator, selective
    judging's alpha and delta."""

    epsilon: float = DEFAULT_EPSILON
    alpha: float = DEFAULT_ALPHA
    delta: float = DEFAULT_DELTA
    q: float = ALT_TEST_Q
    min_items: int = MIN_ITEMS


class VerdictQuery(TypedDict):
    """The parameters as a request gives them (None: not given), to pass on as keyword arguments."""

    epsilon: float | None
    alpha: float | None
    delta: float | None
    q: float | None
    min_items: int | None


def verdict_parameters(
    *,
    epsilon: float | None = None,
    alpha: float | None = None,
    delta: float | None = None,
    q: float | None = None,
    min_items: int | None = None,
) -> VerdictParameters:
    """The parameters, checked: epsilon in [0, 1), alpha, delta and q in (0, 1), min_items a whole number of at least
    1; None takes the default. Raises ValueError with every problem, each as "<name>: <why>", separated by "; "."""
    values = {
        "epsilon": DEFAULT_EPSILON if epsilon is None else epsilon,
        "alpha": DEFAULT_ALPHA if alpha is None else alpha,
        "delta": DEFAULT_DELTA if delta is None else delta,
        "q": ALT_TEST_Q if q is None else q,
    }
    problems = []
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            problems.append(f"{name}: must be a number, got {value!r}")
        elif name == "epsilon" and not 0 <= value < 1:
            problems.append(f"epsilon: must be in [0, 1), got {value}")
        elif name != "epsilon" and not 0 < value < 1:
            problems.append(f"{name}: must be in (0, 1), got {value}")
    items = MIN_ITEMS if min_items is None else min_items
    if isinstance(items, bool) or not isinstance(items, int) or items < 1:
        problems.append(f"min_items: must be a whole number of at least 1, got {items!r}")
    if problems:
        raise ValueError("; ".join(problems))
    return VerdictParameters(**{name: float(value) for name, value in values.items()}, min_items=int(items))


# --- the human side ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanSide:
    """Per annotated study item: its human label (None: a tie) and its annotations {annotator: label}; on an ordinal
    or interval pool (docs/domain.md, "Scales") its human value too, and `numbers` (label -> rank or value)."""

    label: dict[int, str | None]
    annotations: dict[int, dict[str, str]]
    value: dict[int, float | None] = field(default_factory=dict)
    numbers: dict[str, float] | None = None

    def positive(self, item_id: int, positive: str | frozenset[str]) -> float | None:
        """1.0 when people call the item positive, 0.0 when not, None when it has no human label: its human label is
        the positive label, or (a threshold: the labels at or above it) its human value is at or above the
        threshold's (docs/domain.md, "Scales": an interval item rated 3 and 4 has the mean 3.5, below a threshold of
        4, though its median label is 3)."""
        label = self.label.get(item_id)
        if label is None:
            return None
        if isinstance(positive, str) or self.numbers is None:
            return float(label in positives_of(positive))
        value = self.value.get(item_id)
        threshold = min(self.numbers[label] for label in positive if label in self.numbers)
        return None if value is None else float(value >= threshold)


def human_side(*, frame: pd.DataFrame, labels: list[str] | None = None, scale: str = NOMINAL) -> HumanSide:
    """The human side of the verdict. On a nominal pool the label is the adjudicated one, else the majority (a tie
    has none); on an ordinal or interval pool the human value is the adjudicated label's number, else the median
    (ordinal; the lower middle for an even count) or the mean (interval) of the annotations' numbers, and the human
    label the adjudicated one, else the median label (the lower middle one), which the kappas compare with."""
    numbers = label_numbers(labels or [], scale) if scale != NOMINAL else None
    if frame.empty:
        return HumanSide({}, {}, {}, numbers)
    if numbers is not None:
        return _scaled_side(frame, numbers, scale)
    adjudicated = frame["adjudicated_label"] if "adjudicated_label" in frame else pd.Series([None] * len(frame))
    by_item: dict[int, str | None] = {}
    annotations: dict[int, dict[str, str]] = {}
    for item_id, annotators, given, adjudication in zip(
        frame["id"], frame["annotators"], frame["labels"], adjudicated, strict=True
    ):
        given = list(given) if isinstance(given, list) else []
        settled = adjudication if isinstance(adjudication, str) and adjudication else None
        by_item[int(item_id)] = human_label(adjudicated=settled, labels=given)
        annotations[int(item_id)] = dict(zip(list(annotators), given, strict=True)) if given else {}
    return HumanSide(by_item, annotations)


def _scaled_side(frame: pd.DataFrame, numbers: dict[str, float], scale: str) -> HumanSide:
    adjudicated = frame["adjudicated_label"] if "adjudicated_label" in frame else pd.Series([None] * len(frame))
    labels: dict[int, str | None] = {}
    values: dict[int, float | None] = {}
    annotations: dict[int, dict[str, str]] = {}
    for item_id, annotators, given, adjudication in zip(
        frame["id"], frame["annotators"], frame["labels"], adjudicated, strict=True
    ):
        given = [str(label) for label in given] if isinstance(given, list) else []
        known = sorted((label for label in given if label in numbers), key=lambda label: numbers[label])
        if isinstance(adjudication, str) and adjudication in numbers:
            labels[int(item_id)], values[int(item_id)] = adjudication, numbers[adjudication]
        elif known:
            labels[int(item_id)] = known[(len(known) - 1) // 2]
            values[int(item_id)] = human_value([numbers[label] for label in known], scale)
        else:
            labels[int(item_id)], values[int(item_id)] = None, None
        annotations[int(item_id)] = dict(zip(list(annotators), given, strict=True)) if given else {}
    return HumanSide(labels, annotations, values, numbers)


def _study_ids(pool: Pool) -> set[int]:
    return set(PoolItem.objects.filter(pool=pool, kind=STUDY).values_list("id", flat=True))


# --- agreement -----------------------------------------------------------------------------------------------------


def _agreement_row(
    against: str, a: list[str], b: list[str], labels: list[str], *, scale: str = NOMINAL,
    numbers: dict[str, float] | None = None, b_values: list[float] | None = None,
) -> dict:  # fmt: skip
    """Chance-corrected agreement of the judge (a) with b; on an ordinal or interval pool weighted kappa and MAE and
    RMSE too (b's numbers: `b_values`, else its labels'), None on a nominal one."""
    figures = chance_corrected(a, b, categories=labels)
    scaled: dict = dict.fromkeys(SCALE_KEYS)
    if numbers is not None:
        scaled.update(weighted_kappas(a, b, labels=labels, scale=scale))
        scaled.update(errors([numbers[x] for x in a], b_values if b_values is not None else [numbers[y] for y in b]))
    return {"against": against, **figures, **scaled}


def human_ceiling(*, side: HumanSide, labels: list[str], min_items: int = MIN_ITEMS, scale: str = NOMINAL) -> dict:
    """The mean over pairs of annotators that share at least `min_items` items of each figure (`n`: how many
    pairs; intervals: the mean of the pairs' bounds)."""
    by_annotator: dict[str, dict[int, str]] = defaultdict(dict)
    for item_id, given in side.annotations.items():
        for annotator, label in given.items():
            by_annotator[annotator][item_id] = label
    pairs: list[dict] = []
    for first, second in combinations(sorted(by_annotator), 2):
        shared = sorted(set(by_annotator[first]) & set(by_annotator[second]))
        if len(shared) >= min_items:
            figures = _agreement_row(
                "", [by_annotator[first][i] for i in shared], [by_annotator[second][i] for i in shared], labels,
                scale=scale, numbers=side.numbers,
            )  # fmt: skip
            pairs.append(figures)
    row: dict = {"against": "human_ceiling", "n": len(pairs)}
    for key in (*CHANCE_KEYS, *SCALE_KEYS):
        row[key] = _mean([pair[key] for pair in pairs])
    keys = list(label_keys(labels).values())  # the per-class figures' keys (analysis.metrics.verdict.per_class_kappa)
    row["per_class_kappa"] = {key: _mean([pair["per_class_kappa"].get(key) for pair in pairs]) for key in keys}
    for key in CHANCE_KEYS:
        row[f"{key}_boot_ci"] = _mean_interval([pair[f"{key}_boot_ci"] for pair in pairs])
    row["per_class_kappa_boot_ci"] = {
        key: _mean_interval([pair["per_class_kappa_boot_ci"].get(key) for pair in pairs]) for key in keys
    }
    return row


def _mean_interval(intervals: list) -> list[float] | None:
    bounds = [interval for interval in intervals if interval is not None]
    return [float(np.mean([b[0] for b in bounds])), float(np.mean([b[1] for b in bounds]))] if bounds else None


def _mean(values: list) -> float | None:
    defined = [value for value in values if value is not None]
    return float(np.mean(defined)) if defined else None


# --- one run -------------------------------------------------------------------------------------------------------


def _run_labels(run: JudgeRun, pool: Pool, study: set[int]) -> dict[int, tuple[str, float | None]]:
    """item id -> (label, confidence) of the run's labelled study items (a blank sampled label left out; None: an
    imported label without a confidence)."""
    return {
        row.item_id: (row.label, row.confidence)
        for row in run_pool_labels(run=run, pool=pool)
        if row.item_id in study and row.label
    }


def run_verdict(
    *, run: JudgeRun, pool: Pool, side: HumanSide, labels: list[str], parameters: VerdictParameters,
    study: set[int], ceiling: dict,
) -> dict:  # fmt: skip
    judged = _run_labels(run, pool, study)
    judge_labels = {item_id: label for item_id, (label, _) in judged.items()}
    annotations = {item_id: given for item_id, given in side.annotations.items() if item_id in judge_labels}
    judge_by_item: dict[Hashable, str] = {item: label for item, label in judge_labels.items()}  # any item keys
    annotations_by_item: dict[Hashable, Mapping[str, str]] = {item: given for item, given in annotations.items()}
    numbers = side.numbers
    # An ordinal or interval pool's Alt-Test aligns by negative RMSE over the labels' numbers (docs/domain.md,
    # "Scales"); a judge's label outside them (a nominal extension) has none, so such items are left out there.
    if numbers is not None:
        judge_by_item = {item: label for item, label in judge_by_item.items() if label in numbers}
        annotations_by_item = {
            item: given
            for item, given in annotations_by_item.items()
            if all(label in numbers for label in given.values())
        }
    by_epsilon = alt_test_by_epsilon(
        judge=judge_by_item, annotations=annotations_by_item, q=parameters.q, min_items=parameters.min_items,
        values=numbers, epsilon=parameters.epsilon,
    )  # fmt: skip
    test = by_epsilon["test"]
    scale = pool.scale

    labelled = sorted(i for i in judge_labels if side.label.get(i) is not None)
    # Annotated items whose labels tie (no adjudication) have no human label: left out of every figure, counted here.
    n_ties = sum(1 for i in judge_labels if i in side.label and side.label[i] is None and side.annotations.get(i))
    agreement = [
        _agreement_row(
            "human",
            [judge_labels[i] for i in labelled],
            [side.label[i] or "" for i in labelled],
            labels,
            scale=scale,
            numbers=numbers,
            b_values=[side.value[i] or 0.0 for i in labelled] if numbers is not None else None,
        )  # fmt: skip
    ]
    by_annotator: dict[str, list[int]] = defaultdict(list)
    for item_id in sorted(annotations):
        for annotator in annotations[item_id]:
            by_annotator[annotator].append(item_id)
    for annotator in sorted(by_annotator):
        items = by_annotator[annotator]
        agreement.append(
            _agreement_row(
                annotator,
                [judge_labels[i] for i in items],
                [annotations[i][annotator] for i in items],
                labels,
                scale=scale,
                numbers=numbers,
            )  # fmt: skip
        )
    agreement.append(ceiling)

    given = [judged[i][1] for i in labelled]
    confidences = [confidence for confidence in given if confidence is not None]
    # An imported judge may have given no confidences: selective judging then says it needs them.
    needs_confidences = len(confidences) < len(given)
    selective = selective_threshold(
        confidences=[] if needs_confidences else confidences,
        agree=[] if needs_confidences else [judged[i][0] == side.label[i] for i in labelled],
        alpha=parameters.alpha,
        delta=parameters.delta,
    )
    coverage_job = None
    if run.source_job_id is not None and not needs_confidences:
        job_confidences = MachineLabel.objects.filter(run=run, confidence__isnull=False)
        coverage_job = coverage_at(
            selective["threshold"], [c for c in job_confidences.values_list("confidence", flat=True) if c is not None]
        )
    return {
        "judge": run.judge.name,
        "version": run.judge.version,
        "run": run.pk,
        "epsilon": parameters.epsilon,
        "q": parameters.q,
        "min_items": parameters.min_items,
        "n_ties": n_ties,
        "alt_test": {
            "omega": test["omega"],
            "rho": test["rho"],
            "passed": test["passed"],
            "tested": test["tested"],
            "skipped": test["skipped"],
            "annotators": test["annotators"],
            "omega_by_epsilon": by_epsilon["omega_by_epsilon"],
            "annotators_by_epsilon": by_epsilon["annotators_by_epsilon"],
            "note": test["note"],
        },
        "agreement": agreement,
        "selective": {
            "alpha": selective["alpha"],
            "delta": selective["delta"],
            "threshold": selective["threshold"],
            "coverage": selective["coverage"],
            "coverage_job": coverage_job,
            "agreement_above": selective["agreement_above"],
            "n": len(labelled) if needs_confidences else selective["n"],
            "curve": selective["curve"],
            "needs_confidences": needs_confidences,
        },
    }


def judge_verdict(
    *,
    pool: Pool,
    frame: pd.DataFrame,
    labels: list[str],
    parameters: VerdictParameters | None = None,
    runs: list[JudgeRun] | None = None,
) -> list[JudgeVerdictRow]:
    """One row per finished judge run that covers the pool (the newest per judge and scope), by judge name. `runs`:
    `covering_runs` of the pool, read here unless the caller has them."""
    runs = covering_runs(pool=pool) if runs is None else runs
    if not runs:
        return []
    parameters = parameters or VerdictParameters()
    side = human_side(frame=frame, labels=labels, scale=pool.scale)
    study = _study_ids(pool)
    ceiling = human_ceiling(side=side, labels=labels, scale=pool.scale)
    result = [
        run_verdict(run=run, pool=pool, side=side, labels=labels, parameters=parameters, study=study, ceiling=ceiling)
        for run in runs
    ]
    return cast(list[JudgeVerdictRow], result)


# --- prediction-powered rates ----------------------------------------------------------------------------------------


def _stratum_rows(*, run: JudgeRun, model: str, dataset: str, pronoun: str, units: dict, labelled: dict) -> dict:
    """units: context -> the judge's P(positive label) of each of its samples; labelled: context -> [(Y sample,
    Yhat sample)] of its pool samples with a human label."""
    # Plain sums: a stratum has thousands of contexts of a few samples, where numpy's mean costs more than the sum.
    y = [math.fsum(h for h, _ in pairs) / len(pairs) for _, pairs in sorted(labelled.items())]
    yhat = [math.fsum(p for _, p in pairs) / len(pairs) for _, pairs in sorted(labelled.items())]
    unlabelled = [
        math.fsum(values) / len(values) for context, values in sorted(units.items()) if context not in labelled
    ]
    figures = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=unlabelled, alpha=PPI_ALPHA)
    return {"judge": run.judge.name, "run": run.pk, "model": model, "dataset": dataset, "pronoun": pronoun, **figures}


def positives_of(positive: str | frozenset[str]) -> frozenset[str]:
    """The labels a rate counts: one positive label, or those at or above a threshold (docs/domain.md, "Scales")."""
    return frozenset([positive]) if isinstance(positive, str) else positive


def _p_positive(run: JudgeRun, options: dict[str, str], scores: dict, positive: str | frozenset[str]) -> float:
    probabilities = option_probabilities(run.mode, options, scores)
    return float(sum(probabilities[label] for label in positives_of(positive) if label in probabilities))


def _yhat(run: JudgeRun, options: dict[str, str], label: str, scores: dict, positive: str | frozenset[str]) -> float:
    """Yhat of one judged sample (docs/domain.md, "Bring your own study"): the positive label's probability (the
    positive labels' summed), else (an imported label without probabilities) 1[label is positive]."""
    if run.mode == JudgeMode.IMPORTED and not scores:
        return float(label in positives_of(positive))
    return _p_positive(run, options, scores, positive)


def run_prediction_powered_pool(
    *, run: JudgeRun, pool: Pool, side: HumanSide, positive: str | frozenset[str]
) -> list[dict]:
    """The rows of one run over a pool without a job (docs/domain.md, "Bring your own study"): the units are the
    pool's contexts (model, dataset, setting, pronoun and context text); labelled ones have people's labels, the
    others only the judge's. Per model x dataset x stated pronoun, then pronoun "all" per model x dataset."""
    options = run.judge.option_map
    if not positives_of(positive) & set(options):
        return []
    judged = {row.item_id: _yhat(run, options, row.label, row.scores, positive)
              for row in run_pool_labels(run=run, pool=pool) if row.label}  # fmt: skip
    fields = ("id", "model_name", "dataset", "setting", "pronoun", "context")
    units: dict[tuple, list[float]] = defaultdict(list)
    labelled: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for item_id, model, dataset, setting, pronoun, context in (
        PoolItem.objects.filter(pool=pool, kind=STUDY).order_by("id").values_list(*fields)
    ):
        if item_id not in judged:
            continue
        key = (model, dataset, pronoun or "", setting, context)
        units[key].append(judged[item_id])
        human = side.positive(item_id, positive)
        if human is not None:
            labelled[key].append((human, judged[item_id]))
    out = []
    for model, dataset in sorted({(key[0], key[1]) for key in units}):
        stratum = {key for key in units if key[:2] == (model, dataset)}
        pronouns = sorted({key[2] for key in stratum if key[2]})
        for pronoun in [*pronouns, "all"]:
            keep = stratum if pronoun == "all" else {key for key in stratum if key[2] == pronoun}
            out.append(
                _stratum_rows(
                    run=run,
                    model=model,
                    dataset=dataset,
                    pronoun=pronoun,
                    units={key: units[key] for key in keep},
                    labelled={key: labelled[key] for key in keep if key in labelled},
                )  # fmt: skip
            )
    return out


def run_prediction_powered(
    *, run: JudgeRun, pool: Pool, side: HumanSide, positive: str | frozenset[str] = MISGENDERING
) -> list[dict]:
    """The rows of one run over a generation job: per pronoun of the job, then pronoun "all"."""
    job = run.source_job
    assert job is not None
    options = run.judge.option_map
    if not positives_of(positive) & set(options):
        return []
    model, dataset = job.model.name, dataset_label(job.dataset)
    # context (instance, setting) -> pronoun, and each judged generation's P(misgendering)
    probability: dict[int, float] = {}
    context_of: dict[int, tuple[int, str]] = {}
    pronoun_of: dict[tuple[int, str], str] = {}
    rows = (
        MachineLabel.objects.filter(run=run, generation__isnull=False)
        .order_by("generation_id")
        .values_list("generation_id", "scores", "generation__instance_id", "generation__setting",
                     "generation__instance__pronoun")
    )  # fmt: skip
    for generation_id, scores, instance_id, setting, pronoun in rows:
        probability[generation_id] = _p_positive(run, options, scores, positive)
        context_of[generation_id] = (instance_id, setting)
        pronoun_of[(instance_id, setting)] = pronoun
    units: dict[tuple[int, str], list[float]] = defaultdict(list)
    for generation_id, value in probability.items():
        units[context_of[generation_id]].append(value)
    labelled: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    items = PoolItem.objects.filter(pool=pool, kind=STUDY, generation__job=job).values_list("id", "generation_id")
    for item_id, generation_id in items:
        human = side.positive(item_id, positive)
        if human is None or generation_id not in probability:
            continue
        labelled[context_of[generation_id]].append((human, probability[generation_id]))
    out = []
    for pronoun in [p for p in job.generation_run.pronouns if p in set(pronoun_of.values())]:
        keep = {context for context, base in pronoun_of.items() if base == pronoun}
        out.append(
            _stratum_rows(
                run=run,
                model=model,
                dataset=dataset,
                pronoun=pronoun,
                units={c: v for c, v in units.items() if c in keep},
                labelled={c: v for c, v in labelled.items() if c in keep},
            )  # fmt: skip
        )
    if units:
        out.append(_stratum_rows(run=run, model=model, dataset=dataset, pronoun="all", units=units, labelled=labelled))
    return out


def prediction_powered(
    *, pool: Pool, frame: pd.DataFrame, runs: list[JudgeRun] | None = None
) -> list[PredictionPoweredRow]:
    """One row per run over one of the pool's generation jobs x model x dataset x pronoun, plus pronoun "all" per
    model x dataset (docs/domain.md, 'The judge's verdict': prediction-powered rates); on a pool without a job, the
    same per run over the pool, its units the pool's contexts ("Bring your own study"). The rate is the pool's
    positive label's, or on an ordinal or interval pool with a threshold the share of items whose human value is at
    or above it (`annotation.labelset.rate_positive`); a pool with neither has no rates. `runs`: `covering_runs`
    of the pool, read here unless the caller has them. An active pool has none: PPI++ takes its labelled units as a
    uniform draw, which an active draw is not (its estimate is `active_rates`)."""
    runs = covering_runs(pool=pool) if runs is None else runs
    positive = rate_positive(pool)
    if not runs or positive is None or pool.active_run_id is not None:
        return []
    without_job = not pool.jobs.exists()
    side = human_side(frame=frame, labels=list(pool.labels), scale=pool.scale)
    rows = []
    for run in runs:
        if run.source_job_id is not None:
            rows += run_prediction_powered(run=run, pool=pool, side=side, positive=positive)
        elif without_job:
            rows += run_prediction_powered_pool(run=run, pool=pool, side=side, positive=positive)
    return cast(list[PredictionPoweredRow], rows)


# --- the page ------------------------------------------------------------------------------------------------------


def verdict_sentence(row: dict) -> str:
    """The verdict in one sentence: "passes the Alternative Annotator Test at epsilon 0.15: omega 0.67 over 3
    annotators", "fails ...", or why the test could not run."""
    test = row["alt_test"]
    epsilon = f"{row['epsilon']:.2f}"
    if test["passed"] is None:
        return f"could not take the Alternative Annotator Test at epsilon {epsilon}: {test['note']}."
    verb = "passes" if test["passed"] else "fails"
    sentence = (
        f"{verb} the Alternative Annotator Test at epsilon {epsilon}: omega {test['omega']:.2f} over "
        f"{test['tested']} annotators"
    )
    if not test["passed"]:
        sentence += " (it needs 0.50)"
    if test["note"]:
        sentence += f" ({test['note']})"
    return sentence + "."


def selective_sentence(row: dict) -> str:
    selective = row["selective"]
    if selective.get("needs_confidences"):
        return (
            "Selective judging needs confidences: this judge's labels came without them (import prob_<label> columns "
            "or a confidence to calibrate a threshold)."
        )
    if selective["n"] == 0:
        return "No annotated item is judged yet, so no threshold can be calibrated."
    if selective["threshold"] is None:
        return (
            f"No confidence threshold keeps the judge's disagreement with people at most {selective['alpha']:g} with "
            f"probability {1 - selective['delta']:g} over {selective['n']} labelled items: it must escalate "
            "everything."
        )
    sentence = (
        f"Above confidence {selective['threshold']:.3f} the judge's disagreement with people is at most "
        f"{selective['alpha']:g} with probability {1 - selective['delta']:g}: it keeps "
        f"{selective['coverage']:.0%} of the {selective['n']} labelled items"
    )
    if selective["coverage_job"] is not None:
        sentence += f" and {selective['coverage_job']:.0%} of the job's generations"
    agreement = selective["agreement_above"]
    if agreement is not None:
        sentence += f" (agreement above it {agreement:.3f})"
    return sentence + "."


def verdict_page_rows(*, report: dict) -> list[dict]:
    """Per judge run of the report's `judge_verdict`: the sentences, the agreement rows (the human ceiling last) and
    whether the run is over a job (it can escalate)."""
    corrected = {
        (r["run"], r["model"], r["dataset"], r["pronoun"]): r for r in report.get("rates_corrected") or []
    }  # the bias-corrected rate beside each PPI++ row
    job_runs = set(
        JudgeRun.objects.filter(
            pk__in=[row["run"] for row in report.get("judge_verdict") or []], source_job__isnull=False
        ).values_list("pk", flat=True)
    )
    return [
        {
            "row": row,
            "sentence": verdict_sentence(row),
            "selective": selective_sentence(row),
            "agreement": [a for a in row["agreement"] if a["against"] != "human_ceiling"],
            "ceiling": next((a for a in row["agreement"] if a["against"] == "human_ceiling"), None),
            "over_job": row["run"] in job_runs,
            "ceiling_min_items": MIN_ITEMS,
            "rates": [
                {**r, "corrected": corrected.get((r["run"], r["model"], r["dataset"], r["pronoun"]))}
                for r in report.get("prediction_powered") or []
                if r["run"] == row["run"]
            ],
        }
        for row in report.get("judge_verdict") or []
    ]
