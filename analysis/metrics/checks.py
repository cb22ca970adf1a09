"""The figures of a judge's checks (docs/domain.md, "Judges a reviewer trusts"), pure functions of plain records:
position consistency, family-swap invariance and contextual calibration (Zhao et al., ICML 2021)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict


class PositionFigures(TypedDict):
    n: int  # items with a label under every rotation
    consistency: float | None
    by_position: dict[str, float | None]  # "1".."m": share of labels chosen at that position minus 1/m


def position_consistency(labels: Mapping[Any, Mapping[int, tuple[str, Sequence[str]]]], *, m: int) -> PositionFigures:
    """`labels`: item -> rotation -> (the label, the options' order shown). An item counts when it has a label under
    each of the m rotations; consistency is the share of those whose label is the same under all. Per position p
    (1 = listed first), the share of the labels (of those items, every rotation) that were the option at p, minus
    1/m: 0 for a judge blind to order, positive where it favours p."""
    complete = {item: given for item, given in labels.items() if len(given) == m and all(g[0] for g in given.values())}
    chosen = [order.index(label) for given in complete.values() for label, order in given.values()]
    n = len(complete)
    same = sum(1 for given in complete.values() if len({label for label, _ in given.values()}) == 1)
    return {
        "n": n,
        "consistency": same / n if n else None,
        "by_position": {str(p + 1): (chosen.count(p) / len(chosen) - 1 / m) if chosen else None for p in range(m)},
    }


class FamilyAccuracy(TypedDict):
    n: int  # swapped items with a human label
    accuracy: float | None


class FamilySwapFigures(TypedDict):
    n: int  # (item, target family) pairs
    invariance: float | None
    by_family: dict[str, FamilyAccuracy]
    accuracy_original: float | None  # on the swapped items themselves, against the same human labels


def family_swap_invariance(
    *,
    original: Mapping[Any, str],
    swapped: Mapping[Any, Mapping[str, str]],
    human: Mapping[Any, str | None],
    families: Sequence[str],
) -> FamilySwapFigures:
    """`original`: item -> the judge's label of the item; `swapped`: item -> target family -> its label of the
    swapped item; `human`: item -> the human label of the original (None: none). Invariance: the share of (item,
    target) pairs, over items with an original label, whose label equals the original's. Per target family (in
    `families` order): the judge's accuracy on the swapped items against the original's human label; beside it
    (`accuracy_original`) its accuracy on the items themselves."""
    pairs = [
        (item, family, label) for item, given in swapped.items() if item in original for family, label in given.items()
    ]
    same = sum(1 for item, _, label in pairs if label == original[item])
    by_family: dict[str, FamilyAccuracy] = {}
    for family in families:
        scored = [label == human[item] for item, fam, label in pairs if fam == family and human.get(item) is not None]
        if any(fam == family for _, fam, _ in pairs):
            by_family[family] = {"n": len(scored), "accuracy": sum(scored) / len(scored) if scored else None}
    scored = [original[item] == human[item] for item in swapped if item in original and human.get(item) is not None]
    return {
        "n": len(pairs), "invariance": same / len(pairs) if pairs else None, "by_family": by_family,
        "accuracy_original": sum(scored) / len(scored) if scored else None,
    }  # fmt: skip


def softmax(scores: Mapping[str, float], options: Sequence[str]) -> dict[str, float]:
    top = max(float(scores[o]) for o in options)
    weights = {o: math.exp(float(scores[o]) - top) for o in options}
    total = sum(weights.values())
    return {o: w / total for o, w in weights.items()}


def content_free(probes: Sequence[Mapping[str, float]], options: Sequence[str]) -> dict[str, float]:
    """p_cf: the mean of the option probabilities over the content-free probes."""
    return {o: sum(p[o] for p in probes) / len(probes) for o in options}


def calibrated(p: Mapping[str, float], p_cf: Mapping[str, float], options: Sequence[str]) -> dict[str, float]:
    """p'(o) proportional to p(o) / p_cf(o) (Zhao et al. 2021: W = diag(p_cf)^-1, b = 0), renormalised."""
    ratios = {o: p[o] / p_cf[o] if p_cf[o] > 0 else (math.inf if p[o] > 0 else 0.0) for o in options}
    if any(math.isinf(value) for value in ratios.values()):
        ratios = {o: float(math.isinf(value)) for o, value in ratios.items()}
    total = sum(ratios.values())
    return {o: value / total for o, value in ratios.items()}


def top(p: Mapping[str, float], options: Sequence[str]) -> tuple[str, float]:
    """The most probable option (ties to the first in option order) and its probability."""
    best = max(range(len(options)), key=lambda index: (p[options[index]], -index))
    return options[best], float(p[options[best]])
