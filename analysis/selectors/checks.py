"""The judge's checks in the report (`judge_checks`; docs/domain.md, "Judges a reviewer trusts"): per finished
check run over the pool (the newest per judge name and check), its figures over the pool's study items.

- position: n, consistency, by_position (the share of labels chosen at each position minus 1/m);
- family_swap: n (item x target family pairs), invariance, by_family {family: {n, accuracy}} against the original
  item's human label;
- contextual: p_cf (the mean over items of each option's content-free probability), ECE and Brier ('Machine raters':
  10 bins, the top option's probability against its correctness) before and after calibration, and the verdict
  (the Alternative Annotator Test) on the calibrated labels.

The human label is the verdict's (adjudicated, else the majority, a tie none).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping
from typing import cast

import numpy as np

from analysis.metrics.checks import (
    calibrated,
    content_free,
    family_swap_invariance,
    position_consistency,
    softmax,
    top,
)
from analysis.metrics.verdict import alt_test
from analysis.report.machine_types import JudgeCheckRow
from analysis.selectors.judges import calibration
from analysis.selectors.verdict import ALT_TEST_Q, DEFAULT_EPSILON, HumanSide, human_side
from annotation.models import STUDY, Pool
from common.frames import pd
from judging.models import CHECK_CONTEXTUAL, CHECK_FAMILY_SWAP, CHECK_POSITION, CheckLabel, CheckRun

ORIGINAL = "original"
PROBES = ("n/a", "empty", "mask")
CHECK_ORDER = {CHECK_POSITION: 0, CHECK_FAMILY_SWAP: 1, CHECK_CONTEXTUAL: 2}
EMPTY = {
    "n": 0, "consistency": None, "by_position": None, "invariance": None, "by_family": None, "accuracy_original": None, "p_cf": None,
    "ece_before": None, "ece_after": None, "brier_before": None, "brier_after": None, "verdict": None,
    "reliability_before": None, "reliability_after": None,
}  # fmt: skip


def pool_check_runs(*, pool: Pool) -> list[CheckRun]:
    """The newest finished check run of each judge name and check over the pool, by judge name then check."""
    newest: dict[tuple[str, str], CheckRun] = {}
    runs = CheckRun.objects.filter(pool=pool, job__status="done").select_related("judge", "job").order_by("id")
    for run in runs:
        newest[(run.judge.name, run.kind)] = run
    return sorted(newest.values(), key=lambda run: (run.judge.name, CHECK_ORDER.get(run.kind, 9), run.pk))


def _labels(run: CheckRun) -> dict[int, dict[str, CheckLabel]]:
    found: dict[int, dict[str, CheckLabel]] = defaultdict(dict)
    for label in CheckLabel.objects.filter(run=run, item__kind=STUDY).order_by("item_id", "variant"):
        found[label.item_id][label.variant] = label
    return found


def _position(run: CheckRun, labels: dict[int, dict[str, CheckLabel]]) -> dict:
    m = len(run.judge.options)
    given = {
        item: {int(key): (label.label, [pair[0] for pair in label.options]) for key, label in variants.items()}
        for item, variants in labels.items()
    }
    return dict(position_consistency(given, m=m))


def _family_swap(run: CheckRun, labels: dict[int, dict[str, CheckLabel]], side: HumanSide) -> dict:
    original = {item: v[ORIGINAL].label for item, v in labels.items() if ORIGINAL in v and v[ORIGINAL].label}
    swapped = {item: {key: lab.label for key, lab in v.items() if key != ORIGINAL} for item, v in labels.items()}
    families = sorted({family for given in swapped.values() for family in given})
    figures = family_swap_invariance(original=original, swapped=swapped, human=side.label, families=families)
    return dict(figures)


def contextual_figures(run: CheckRun, labels: dict[int, dict[str, CheckLabel]], side: HumanSide) -> dict:
    """The contextual row's figures, with the reliability diagram's bins before and after calibration."""
    options = [pair[0] for pair in run.judge.options]
    before: dict[int, dict[str, float]] = {}
    after: dict[int, dict[str, float]] = {}
    free: list[dict[str, float]] = []
    for item, variants in labels.items():
        if ORIGINAL not in variants or not all(probe in variants for probe in PROBES):
            continue
        p = softmax(variants[ORIGINAL].scores, options)
        p_cf = content_free([softmax(variants[probe].scores, options) for probe in PROBES], options)
        before[item], after[item] = p, calibrated(p, p_cf, options)
        free.append(p_cf)
    labelled = [item for item in sorted(before) if side.label.get(item) is not None]

    def figures(probabilities: dict[int, dict[str, float]]) -> dict:
        tops = [top(probabilities[item], options) for item in labelled]
        correct = np.array([label == side.label[item] for (label, _), item in zip(tops, labelled, strict=True)])
        return {
            **calibration(np.array([c for _, c in tops]), correct),
            "accuracy": float(correct.mean()) if labelled else None,
        }

    first, second = figures(before), figures(after)
    calibrated_labels = {item: top(after[item], options)[0] for item in after}
    judge: dict[Hashable, str] = dict(calibrated_labels.items())
    annotations: dict[Hashable, Mapping[str, str]] = {
        item: given for item, given in side.annotations.items() if item in calibrated_labels
    }
    test = alt_test(judge=judge, annotations=annotations, epsilon=DEFAULT_EPSILON, q=ALT_TEST_Q)
    return {
        "n": len(before),
        "p_cf": content_free(free, options) if free else None,
        "ece_before": first["ece"], "ece_after": second["ece"],
        "brier_before": first["brier"], "brier_after": second["brier"],
        "verdict": {
            "epsilon": DEFAULT_EPSILON, "omega": test["omega"], "rho": test["rho"], "passed": test["passed"],
            "tested": test["tested"], "note": test["note"], "n_labelled": len(labelled),
            "accuracy_before": first["accuracy"], "accuracy_after": second["accuracy"],
        },
        "reliability_before": first["bins"], "reliability_after": second["bins"],
    }  # fmt: skip


def check_row(*, run: CheckRun, side: HumanSide) -> dict:
    """One `judge_checks` row (every key of the row type; those of other checks null)."""
    labels = _labels(run)
    row = {"judge": run.judge.name, "run": run.pk, "check": run.kind, **EMPTY}
    if run.kind == CHECK_POSITION:
        row.update(_position(run, labels))
    elif run.kind == CHECK_FAMILY_SWAP:
        row.update(_family_swap(run, labels, side))
    elif run.kind == CHECK_CONTEXTUAL:
        row.update(contextual_figures(run, labels, side))
    return row


def judge_checks(*, pool: Pool, frame: pd.DataFrame) -> list[JudgeCheckRow]:
    """One row per newest finished check run of each judge and check over the pool."""
    runs = pool_check_runs(pool=pool)
    if not runs:
        return []
    side = human_side(frame=frame)
    return cast(list[JudgeCheckRow], [check_row(run=run, side=side) for run in runs])
