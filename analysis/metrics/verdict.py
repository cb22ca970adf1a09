"""The judge's verdict (docs/domain.md, 'The judge's verdict'): may an LLM judge replace the annotators, and what does
each model's misgendering rate look like once the judge labels everything?

Four answers, each a pure function of plain vectors or mappings:
- the human label of an item (`human_label`) and the judge's chance-corrected agreement with it (`chance_corrected`:
  Cohen's kappa, Scott's pi, Gwet's AC1 and per-class kappa, each with its bootstrap interval);
- the Alternative Annotator Test (`alt_test`, `alt_test_omega_by_epsilon`);
- selective judging with a guarantee (`selective_threshold`, `coverage_at`);
- prediction-powered rates (`ppi_mean`, PPI++ for a mean).

Undefined figures are None, never NaN.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import TypedDict

import numpy as np

from analysis.metrics.agreement import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    ZERO_WIDTH,
    cohen_kappa_square,
    finite,
    kappa_square_of_table,
)
from analysis.metrics.multirater import _categories, gwet_ac1_of_table
from analysis.metrics.rates import rate_interval
from analysis.metrics.resampling import resampled_sums
from annotation.labelset import label_keys

# scipy.stats is imported where it is used (see agreement.py): web processes import this module with their URLs.


# -- The human label of an item ---------------------------------------------------------------------------------------


def human_label(*, adjudicated: str | None, labels: Sequence[str]) -> str | None:
    """The human label of an item for the judge's verdict: the adjudicated label when there is one (a blank label is
    no adjudication), else the label given most often; a tie for first place has no label (None), nor has an item
    with no labels. Unlike the report's human label (ties to the first annotator), a tie here is left out."""
    if adjudicated:
        return adjudicated
    if not labels:
        return None
    ranked = Counter(labels).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


# -- Chance-corrected agreement ---------------------------------------------------------------------------------------


class ChanceCorrected(TypedDict):
    n: int
    cohen_kappa: float | None
    scott_pi: float | None
    gwet_ac1: float | None
    per_class_kappa: dict[str, float | None]
    cohen_kappa_boot_ci: list[float] | None
    scott_pi_boot_ci: list[float] | None
    gwet_ac1_boot_ci: list[float] | None
    per_class_kappa_boot_ci: dict[str, list[float] | None]


def scott_pi(a: Sequence[Hashable], b: Sequence[Hashable], *, categories: Sequence[Hashable]) -> float | None:
    """Scott's pi of two raters over the same items: (p_o - p_e) / (1 - p_e), with p_e = sum_k pbar_k^2 and pbar_k
    the share of label k over both raters' labels pooled. Undefined with no items or when p_e is 1 (both raters gave
    one and the same label throughout)."""
    labels = _categories([list(a), list(b)], categories)
    if len(a) == 0:
        return None
    table = _tables(a, b, labels, np.arange(len(a))[None, :])[0]
    return finite(_scott_pi(table[None])[0])


def per_class_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], *, categories: Sequence[Hashable]
) -> dict[str, float | None]:
    """Cohen's kappa of each label against the rest (the binary vectors 'is this label' of both raters), keyed by the
    label's key (`annotation.labelset.label_keys`: "Not misgendering" -> `not_misgendering`; a column's name in the
    CSV); None where it is undefined (no items, or neither rater ever, or both always, gave the label)."""
    labels = _categories([list(a), list(b)], categories)
    keys = label_keys(labels)
    left, right = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    return {
        keys[str(label)]: cohen_kappa_square(
            (left == label).astype(int), (right == label).astype(int), categories=[0, 1]
        )["kappa_square"]
        for label in labels
    }


def chance_corrected(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    categories: Sequence[Hashable],
    seed: int = BOOTSTRAP_SEED,
    draws: int = BOOTSTRAP_DRAWS,
) -> ChanceCorrected:
    """Chance-corrected agreement of two raters over the same items (a[i] and b[i] label item i): Cohen's kappa on the
    square table over `categories` (scikit-learn's, with any label outside `categories` added), Scott's pi, Gwet's
    AC1 (irrCAC's) and the per-class kappas, each with its bootstrap 95% percentile interval (the per-class ones
    keyed by label, as the kappas are):
    `draws` resamples of the items, taken in the order given, from a generator seeded by `seed` (the same draws as
    agreement.bootstrap_ci). A resample where a figure is undefined is left out of its interval; an interval needs
    two items and at least one defined resample."""
    labels = _categories([list(a), list(b)], categories)
    n = len(a)
    if len(b) != n:
        raise ValueError("the two raters must label the same items")
    k = len(labels)
    code = {label: i for i, label in enumerate(labels)}
    codes_a = np.fromiter((code[x] for x in a), dtype=np.int64, count=n)
    codes_b = np.fromiter((code[y] for y in b), dtype=np.int64, count=n)
    table = np.bincount(codes_a * k + codes_b, minlength=k * k).reshape(k, k)  # as agreement._table counts it
    keys = label_keys(labels)
    rows = np.arange(n, dtype=np.int64) * k  # each item's two ratings (multirater._count_table)
    items = (np.bincount(rows + codes_a, minlength=n * k) + np.bincount(rows + codes_b, minlength=n * k)).reshape(n, k)
    figures: ChanceCorrected = {
        "n": n,
        "cohen_kappa": kappa_square_of_table(table)["kappa_square"] if n else None,
        "scott_pi": finite(_scott_pi(table[None].astype(float))[0]) if n else None,
        "gwet_ac1": gwet_ac1_of_table(items.astype(float), k, interval=False)["gwet_ac1"],
        "per_class_kappa": {
            keys[str(label)]: kappa_square_of_table(_one_against_rest(table, index))["kappa_square"] if n else None
            for index, label in enumerate(labels)
        },
        "cohen_kappa_boot_ci": None,
        "scott_pi_boot_ci": None,
        "gwet_ac1_boot_ci": None,
        "per_class_kappa_boot_ci": {key: None for key in label_keys(labels).values()},
    }
    if n < 2:
        return figures
    tables = _resampled_tables(codes_a * k + codes_b, k, draws=draws, seed=seed)
    counts, agreed, by_a, by_b = _margins(tables)  # read once for every figure
    observed = agreed / counts
    pooled = _pooled(by_a, by_b, counts)
    figures["cohen_kappa_boot_ci"] = _percentile_ci(_chance_corrected(observed, (by_a * by_b).sum(axis=1) / counts**2))
    figures["scott_pi_boot_ci"] = _percentile_ci(_chance_corrected(observed, (pooled**2).sum(axis=1)))
    figures["gwet_ac1_boot_ci"] = _percentile_ci(_gwet_of_pooled(observed, pooled))
    # Each label against the rest, all at once: a resample's 2 x 2 table of label i has both = its diagonal cell,
    # only_a = by_a - both, only_b = by_b - both and neither the rest (as `_one_against_rest` folds one table).
    diagonal = np.diagonal(tables, axis1=1, axis2=2)
    size = counts[:, None]
    one_vs_rest = _chance_corrected(
        (size - by_a - by_b + 2 * diagonal) / size, (by_a * by_b + (size - by_a) * (size - by_b)) / size**2
    )
    figures["per_class_kappa_boot_ci"] = {
        keys[str(label)]: _percentile_ci(one_vs_rest[:, index]) for index, label in enumerate(labels)
    }
    return figures


def _margins(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each k x k table's count, agreements (its diagonal's sum) and marginals of a (rows) and of b (columns); integer
    counts held in floats, so exact."""
    return tables.sum(axis=(1, 2)), np.trace(tables, axis1=1, axis2=2), tables.sum(axis=2), tables.sum(axis=1)


def _pooled(by_a: np.ndarray, by_b: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each label's share of both raters' labels pooled, per table."""
    return (by_a + by_b) / (2 * counts[:, None])


def _gwet_of_pooled(observed: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """Gwet's AC1 from each table's observed agreement and pooled label shares: p_e = sum_k pi_k (1 - pi_k) / (q - 1)
    (multirater.gwet_ac1 with two ratings per item)."""
    q = pooled.shape[1]
    if q < 2:
        return np.full(pooled.shape[0], np.nan)
    return _chance_corrected(observed, (pooled * (1 - pooled)).sum(axis=1) / (q - 1))


def _tables(a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable], index: np.ndarray) -> np.ndarray:
    """One k x k contingency table (rows: a, columns: b) per row of `index` (the items of one resample)."""
    code = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    cells = np.array([code[x] * k + code[y] for x, y in zip(a, b, strict=True)], dtype=np.int64)
    draws = index.shape[0]
    flat = cells[index] + (np.arange(draws, dtype=np.int64) * k * k)[:, None]
    return np.bincount(flat.ravel(), minlength=draws * k * k).reshape(draws, k, k).astype(float)


def _one_against_rest(table: np.ndarray, index: int) -> np.ndarray:
    """The 2 x 2 integer table of 'is label `index`' (0: no, 1: yes; rows: a, columns: b) from the k x k one: the
    table `per_class_kappa` counts from the binary vectors."""
    both = table[index, index]
    only_a = table[index, :].sum() - both
    only_b = table[:, index].sum() - both
    neither = table.sum() - both - only_a - only_b
    return np.array([[neither, only_b], [only_a, both]], dtype=table.dtype)


def _resampled_tables(cells: np.ndarray, k: int, *, draws: int, seed: int) -> np.ndarray:
    """`_tables` over the resamples of `resample_index(n, draws, seed)` of the items' cells (code of a x k + code of
    b), as the sums over each resample of the items' one-hot cells (`resampled_sums`: one matrix product once a
    size's counts are kept; integer counts, so the same tables as counting each resample's cells)."""
    one_hot = np.zeros((cells.size, k * k))
    one_hot[np.arange(cells.size), cells] = 1.0
    return resampled_sums(one_hot, draws=draws, seed=seed).reshape(draws, k, k)


def _chance_corrected(p_o: np.ndarray, p_e: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (p_o - p_e) / (1 - p_e)
    return np.where(p_e >= 1 - 1e-12, np.nan, value)


def _scott_pi(tables: np.ndarray) -> np.ndarray:
    counts, agreed, by_a, by_b = _margins(tables)
    return _chance_corrected(agreed / counts, (_pooled(by_a, by_b, counts) ** 2).sum(axis=1))


def _percentile_ci(values: np.ndarray) -> list[float] | None:
    """The 95% percentile interval of the defined resamples; None for none, and for an interval of zero width (every
    resample the same figure, e.g. kappa 0 against a constant rater, or perfect agreement), which says nothing and
    is shown as undefined (docs/domain.md, 'Metrics'), not as [-0.000, 0.000] from rounding noise."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    if high - low <= ZERO_WIDTH:
        return None
    return [float(low), float(high)]


# -- The Alternative Annotator Test -----------------------------------------------------------------------------------

ALT_TEST_EPSILONS = (0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30)


class AltTestAnnotator(TypedDict):
    annotator: str
    n: int
    p_value: float | None
    rejected: bool
    rho: float


class AltTest(TypedDict):
    omega: float | None
    rho: float | None
    passed: bool | None
    tested: int
    skipped: list[str]
    annotators: list[AltTestAnnotator]
    note: str | None


def alt_test(
    *,
    judge: Mapping[Hashable, str],
    annotations: Mapping[Hashable, Mapping[str, str]],
    epsilon: float = 0.15,
    q: float = 0.05,
    min_items: int = 30,
    values: Mapping[str, float] | None = None,
) -> AltTest:
    """The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025) of a judge against the annotators.

    `judge` maps an item to the judge's label, `annotations` an item to {annotator: label}. The items are those with
    at least two human annotations and a judge label. Each annotator j with at least `min_items` such items is
    tested (every other annotator in `annotations` is `skipped`, however few such items they have, none included):
    on each of j's items i, with S(x) the alignment of x with the other annotators' labels, the judge wins when
    S(judge) >= S(j's label) and j wins when S(j's label) >= S(judge) (a tie is a win for both); d = j's wins - the
    judge's wins, and p_j is scipy's one-sided t-test of mean d < epsilon (a NaN p-value, as when every d is equal,
    is reported as None and never rejected). Benjamini-Yekutieli at level q over the tested annotators decides which
    nulls fall; omega = rejected / tested, and the judge passes when omega >= 0.5. rho, the mean over tested
    annotators of the judge's winning share, ranks judges and does not depend on epsilon. With fewer than two tested
    annotators the test is not run (omega, rho and passed None, `note` says why); with two it runs and `note`
    recommends three or more.

    S(x) is the share of the other labels equal to x (nominal), or, given `values` (label -> number: an ordinal
    label's rank, an interval label's value; docs/domain.md, "Scales"), minus the root mean squared difference
    between x and the other labels (the reference code's `neg_rmse`)."""
    wins = _alt_test_indicators(judge=judge, annotations=annotations, values=values)
    return _alt_test_of(wins, annotations=annotations, epsilon=epsilon, q=q, min_items=min_items)


def _alt_test_of(
    wins: dict[str, list[tuple[int, int]]],
    *,
    annotations: Mapping[Hashable, Mapping[str, str]],
    epsilon: float,
    q: float,
    min_items: int,
) -> AltTest:
    from scipy import stats

    tested = {annotator: given for annotator, given in sorted(wins.items()) if len(given) >= min_items}
    # Every other annotator of `annotations` is skipped, one with none of the test's items too (as the reference's
    # loop over all annotators skips them).
    skipped = sorted({annotator for given in annotations.values() for annotator in given} - set(tested))
    rows: list[AltTestAnnotator] = []
    p_values: list[float] = []
    for annotator, given in tested.items():
        judge_wins = np.array([w_f for w_f, _ in given], dtype=float)
        human_wins = np.array([w_h for _, w_h in given], dtype=float)
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy warns, then answers NaN, when every d is equal
            p = float(stats.ttest_1samp(human_wins - judge_wins, epsilon, alternative="less").pvalue)
        p_values.append(p)
        rows.append(
            {
                "annotator": annotator,
                "n": len(given),
                "p_value": finite(p),
                "rejected": False,
                "rho": float(judge_wins.mean()),
            }
        )
    result: AltTest = {
        "omega": None,
        "rho": None,
        "passed": None,
        "tested": len(rows),
        "skipped": skipped,
        "annotators": rows,
        "note": None,
    }
    if len(rows) < 2:
        result["note"] = (
            f"not run: needs at least 2 annotators with {min_items} or more items each "
            f"(items with 2 or more annotations and a judge label); {len(rows)} had"
        )
        return result
    for position in _benjamini_yekutieli(p_values, q=q):
        rows[position]["rejected"] = True
    omega = sum(row["rejected"] for row in rows) / len(rows)
    result["omega"] = omega
    result["rho"] = float(np.mean([row["rho"] for row in rows]))
    result["passed"] = omega >= 0.5
    if len(rows) == 2:
        result["note"] = "run with 2 annotators; 3 or more are recommended"
    return result


class AltTestByEpsilon(TypedDict):
    omega_by_epsilon: dict[str, float | None]
    annotators_by_epsilon: dict[str, list[dict]]
    test: AltTest  # at the `epsilon` asked for


def alt_test_by_epsilon(
    *,
    judge: Mapping[Hashable, str],
    annotations: Mapping[Hashable, Mapping[str, str]],
    q: float = 0.05,
    min_items: int = 30,
    values: Mapping[str, float] | None = None,
    epsilon: float = 0.15,
) -> AltTestByEpsilon:
    """`alt_test` at epsilon = 0, 0.05, ..., 0.30, keyed "0.00" to "0.30": the winning rate omega (None where the test
    is not run) and each tested annotator's `annotator`, `p_value` and `rejected`; and `test`, the whole test at
    `epsilon` (the wins are counted once for all of them)."""
    wins = _alt_test_indicators(judge=judge, annotations=annotations, values=values)
    omega: dict[str, float | None] = {}
    annotators: dict[str, list[dict]] = {}
    for each in ALT_TEST_EPSILONS:
        test = _alt_test_of(wins, annotations=annotations, epsilon=each, q=q, min_items=min_items)
        omega[f"{each:.2f}"] = test["omega"]
        annotators[f"{each:.2f}"] = [
            {"annotator": row["annotator"], "p_value": row["p_value"], "rejected": row["rejected"]}
            for row in test["annotators"]
        ]
    test = _alt_test_of(wins, annotations=annotations, epsilon=epsilon, q=q, min_items=min_items)
    return {"omega_by_epsilon": omega, "annotators_by_epsilon": annotators, "test": test}


def alt_test_omega_by_epsilon(
    *,
    judge: Mapping[Hashable, str],
    annotations: Mapping[Hashable, Mapping[str, str]],
    q: float = 0.05,
    min_items: int = 30,
    values: Mapping[str, float] | None = None,
) -> dict[str, float | None]:
    """The winning rate omega of `alt_test` at epsilon = 0, 0.05, ..., 0.30, keyed "0.00" to "0.30" (None where the
    test is not run)."""
    return alt_test_by_epsilon(judge=judge, annotations=annotations, q=q, min_items=min_items, values=values)[
        "omega_by_epsilon"
    ]


def _alt_test_indicators(
    *,
    judge: Mapping[Hashable, str],
    annotations: Mapping[Hashable, Mapping[str, str]],
    values: Mapping[str, float] | None = None,
) -> dict[str, list[tuple[int, int]]]:
    """Per annotator, (W^f, W^h) on each of their items that has two or more annotations and a judge label; every
    annotator of such an item appears, with however many items they have. Items are taken in sorted order (ids as
    numbers: in pool order, not by their digits, so that a study stored under other ids gives the same sums), so
    that nothing depends on the order the annotations were read in."""
    wins: dict[str, list[tuple[int, int]]] = {}
    for item in sorted(
        annotations, key=lambda item: (not isinstance(item, int), item if isinstance(item, int) else str(item))
    ):
        by_annotator = annotations[item]
        if len(by_annotator) < 2 or not judge.get(item):  # a blank judge label is no label
            continue
        judged = judge[item]
        counts = Counter(by_annotator.values())
        for annotator in sorted(by_annotator):
            label = by_annotator[annotator]
            if values is None:
                # The shares of the other labels equal to each, compared as counts (one denominator): the other
                # annotators' labels are the item's less this annotator's one.
                align_judge: float = counts[judged] - (judged == label)
                align_human: float = counts[label] - 1
            else:
                others = [other for name, other in by_annotator.items() if name != annotator]
                align_judge = -math.sqrt(math.fsum((values[judged] - values[r]) ** 2 for r in others) / len(others))
                align_human = -math.sqrt(math.fsum((values[label] - values[r]) ** 2 for r in others) / len(others))
            wins.setdefault(annotator, []).append((int(align_judge >= align_human), int(align_human >= align_judge)))
    return wins


def _benjamini_yekutieli(p_values: Sequence[float], *, q: float) -> list[int]:
    """Positions of the rejected nulls: sort the p-values, find the largest rank i with p_(i) <= (i / m) q / H_m
    (H_m = 1 + 1/2 + ... + 1/m), reject ranks 1 to i. NaN p-values count in m and are never rejected."""
    m = len(p_values)
    if m == 0:
        return []
    harmonic = sum(1 / k for k in range(1, m + 1))
    order = sorted(range(m), key=lambda i: (math.isnan(p_values[i]), p_values[i]))
    largest = 0
    for rank, position in enumerate(order, start=1):
        if p_values[position] <= rank / m * q / harmonic:
            largest = rank
    return order[:largest]


# -- Selective judging with a guarantee -------------------------------------------------------------------------------


class SelectiveThreshold(TypedDict):
    alpha: float
    delta: float
    threshold: float | None
    coverage: float
    agreement_above: float | None
    n: int
    curve: list[list[float]]


def selective_threshold(
    *,
    confidences: Sequence[float] | np.ndarray,
    agree: Sequence[bool] | np.ndarray,
    alpha: float = 0.1,
    delta: float = 0.1,
) -> SelectiveThreshold:
    """The confidence threshold above which the judge may label alone (Jung, Brahman & Choi, ICLR 2025): over the
    items with a human label, each with the judge's confidence c_i and whether it agreed (z_i), the thresholds
    lambda are tried over the distinct confidences from the highest down (fixed-sequence testing). With
    n(lambda) = #{c_i >= lambda} and e(lambda) = #{c_i >= lambda, z_i = 0}, p(lambda) = P[Binomial(n, alpha) <= e]
    (scipy's binom.cdf); the search goes on while p(lambda) <= delta, and the threshold is the last lambda that passed
    (None: none did, the judge escalates everything). For exchangeable items, the chance that the judge's
    disagreement rate with people among the items it keeps exceeds alpha is then at most delta.

    `coverage` is the share of the items with c >= threshold (0.0 with no threshold), `agreement_above` the
    agreement over them (None when there are none), and `curve` is [coverage, disagreement] at every distinct
    confidence from the highest down (the risk-coverage curve)."""
    from scipy import stats

    c = np.asarray(confidences, dtype=float)
    z = np.asarray(agree, dtype=bool)
    if c.shape != z.shape:
        raise ValueError("one agreement per confidence")
    total = int(c.size)
    # Every threshold at once, from the highest down: n and e are cumulative counts over the items sorted by
    # confidence, read at each distinct confidence's last item; the fixed sequence stops at the first p > delta.
    lams = np.unique(c)[::-1]
    order = np.argsort(-c, kind="stable")
    n_at = np.searchsorted(-c[order], -lams, side="right")
    errors_at = np.concatenate([[0], np.cumsum(~z[order])])[n_at]
    curve: list[list[float]] = [[int(n) / total, int(e) / int(n)] for n, e in zip(n_at, errors_at, strict=True)]
    passed = stats.binom.cdf(errors_at, n_at, alpha) <= delta if lams.size else np.zeros(0, dtype=bool)
    stop = int(np.argmin(passed)) if not passed.all() else int(passed.size)
    threshold: float | None = float(lams[stop - 1]) if stop > 0 else None
    above = c >= threshold if threshold is not None else np.zeros(total, dtype=bool)
    return {
        "alpha": float(alpha),
        "delta": float(delta),
        "threshold": threshold,
        "coverage": float(above.mean()) if total else 0.0,
        "agreement_above": float(z[above].mean()) if above.any() else None,
        "n": total,
        "curve": curve,
    }


def coverage_at(threshold: float | None, confidences: Sequence[float] | np.ndarray) -> float | None:
    """The share of `confidences` at or above `threshold`: the part of a job's judged generations the judge keeps.
    No threshold keeps nothing (0.0); no confidences give None."""
    c = np.asarray(confidences, dtype=float)
    if c.size == 0:
        return None
    if threshold is None:
        return 0.0
    return float((c >= threshold).mean())


# -- Prediction-powered rates -----------------------------------------------------------------------------------------


class PpiMean(TypedDict):
    n: int
    N: int
    ppi_rate: float | None
    ppi_ci: list[float] | None  # clipped to [0, 1]
    ci_clipped: bool  # the PPI interval left [0, 1] and was clipped to it
    human_rate: float | None
    human_ci: list[float] | None
    judge_rate: float | None
    n_eff: float | None


def ppi_mean(
    *,
    y: Sequence[float] | np.ndarray,
    yhat: Sequence[float] | np.ndarray,
    yhat_unlabelled: Sequence[float] | np.ndarray,
    alpha: float = 0.05,
) -> PpiMean:
    """`ppi_mean_se`'s figures (see there), the PPI interval clipped to [0, 1] and marked (`ci_clipped`)."""
    return ppi_mean_se(y=y, yhat=yhat, yhat_unlabelled=yhat_unlabelled, alpha=alpha)[0]


def ppi_mean_se(
    *,
    y: Sequence[float] | np.ndarray,
    yhat: Sequence[float] | np.ndarray,
    yhat_unlabelled: Sequence[float] | np.ndarray,
    alpha: float = 0.05,
) -> tuple[PpiMean, float | None]:
    """The prediction-powered (PPI++) estimate of a mean and its 1 - alpha interval (Angelopoulos, Duchi & Zrnic 2023),
    as ppi_py 0.2.3's `ppi_mean_pointestimate(y, yhat, yhat_unlabelled, lam=None)` and `ppi_mean_ci(..., alpha,
    lam=None)` compute them: y and yhat are the human and the judge's values of the n labelled units, yhat_unlabelled
    the judge's values of the N unlabelled ones (N counts the unlabelled units only, as in ppi_py: the stratum has
    n + N units).

    With theta_1 = mean(yhat_u) + mean(y - yhat), lambda = cov(y, yhat) / ((1 + n/N) var(yhat over all n + N units))
    clipped to [0, 1] (the covariance over n, the variance with ddof 1, both about theta_1 as ppi_py centres them);
    the estimate is lambda mean(yhat_u) + mean(y - lambda yhat), with the normal interval of standard error
    sqrt(var(lambda yhat_u) / N + var(y - lambda yhat) / n) (ddof 0). When the judge's values are all equal, lambda
    has no effect on either and the answer is the people-only one (ppi_py gives NaN there).

    Beside it: the people-only mean and normal interval (ppi_py's `classical_mean_ci(y, alpha)`), the judge-only mean
    over all n + N units (biased: it trusts the judge), and n_eff = n (people-only width / PPI width)^2, the number of
    labelled units the people-only interval would need to be as narrow. The PPI figures need two labelled units and
    one unlabelled unit; an interval of zero width leaves n_eff undefined. The PPI interval is clipped to [0, 1]
    (`ci_clipped` says it was: a rate's interval lies there); the standard error beside the figures (None where
    they have no PPI estimate) is the unclipped interval's, for a caller that combines strata."""
    from scipy import stats

    labelled = np.asarray(y, dtype=float)
    predicted = np.asarray(yhat, dtype=float)
    unlabelled = np.asarray(yhat_unlabelled, dtype=float)
    if labelled.shape != predicted.shape:
        raise ValueError("one judge value per labelled unit")
    n, N = int(labelled.size), int(unlabelled.size)
    every_prediction = np.concatenate([predicted, unlabelled])
    result: PpiMean = {
        "n": n,
        "N": N,
        "ppi_rate": None,
        "ppi_ci": None,
        "ci_clipped": False,
        "human_rate": float(labelled.mean()) if n else None,
        "human_ci": None,
        "judge_rate": float(every_prediction.mean()) if every_prediction.size else None,
        "n_eff": None,
    }
    if n < 2:
        return result, None
    z = float(stats.norm.ppf(1 - alpha / 2))
    human_se = float(labelled.std()) / math.sqrt(n)
    human_rate = float(labelled.mean())
    result["human_ci"] = [human_rate - z * human_se, human_rate + z * human_se]
    if N < 1:
        return result, None
    variance = float(np.var(every_prediction, ddof=1))
    if variance > 0:
        covariance = float(((labelled - labelled.mean()) * (predicted - predicted.mean())).mean())
        lam = min(max(covariance / ((1 + n / N) * variance), 0.0), 1.0)
    else:
        lam = 0.0
    estimate = lam * unlabelled.mean() + (labelled - lam * predicted).mean()
    se = math.sqrt(float((lam * unlabelled).std()) ** 2 / N + float((labelled - lam * predicted).std()) ** 2 / n)
    result["ppi_rate"] = float(estimate)
    result["ppi_ci"], result["ci_clipped"] = rate_interval(float(estimate - z * se), float(estimate + z * se))
    if se > 0 and human_se > 0:
        result["n_eff"] = n * (human_se / se) ** 2
    return result, se
