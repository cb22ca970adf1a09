"""crowd-kit's MACE with its E-step computed on arrays: the same model, the same numbers.

crowd-kit 1.4.2's `MACE._e_step` (crowdkit/aggregation/classification/mace.py) works on the ratings' DataFrame: per
label a product over each task's rows of every numeric column, then an index reset and three grouped sums of every
column. On a small pool that overhead is the whole cost, 52 steps per fit.
`ArrayMACE.fit` is crowd-kit's own `fit` (initialization, variational M-steps, restarts, decoding); only the
E-step is replaced, and it computes each quantity in the order crowd-kit's does:
- a task's marginal per label is the running product over its rows in their order, as pandas' grouped product;
- a task's marginal likelihood is the sum of its labels' marginals in the order pandas adds the columns of
  crowd-kit's frame: that frame is built a column at a time, which leaves the last label's column first;
- the grouped sums are pandas' own compensated grouped sum (the kernel its `groupby(...).sum()` calls) over the same
  rows in the same order;
- the expected strategy counts come in crowd-kit's layout: workers and labels in sorted order, as its `unstack` gives
  them (its M-step reads them by position).

So labels and posteriors are crowd-kit's to the last bit (tests/analysis/test_aggregation.py compares them on random
ratings). Importing this module imports crowd-kit: import it where a fit is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pandas._libs.groupby import group_sum

from common.crowd_kit import models
from common.frames import pd

if TYPE_CHECKING:
    from crowdkit.aggregation import MACE
else:
    MACE = models().MACE  # without crowdkit.aggregation's __init__ (common/crowd_kit.py)

# Far above the smallest normal double (2.2e-308): a product of factors <= 1 that ends above it never lost a bit.
SCALED_BELOW = 1e-280


def _grouped_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group (0 .. n_groups - 1) the sum of each row of `values` (columns x ratings, as a frame's block holds
    them) over its ratings in order, 0 for a group without ratings: pandas' `groupby(...).sum()` to the last bit,
    without the grouping's factorizing and frames around it. pandas sums groups whose ratings come sorted by group
    with numpy's `add.reduceat`, others with its compensated (Kahan) kernel; so does this."""
    out = np.zeros((values.shape[0], n_groups))
    if not len(groups):
        return out
    if (groups[1:] >= groups[:-1]).all():
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        out[:, groups[starts]] = np.add.reduceat(values, starts, axis=1)
        return out
    sums = np.empty((n_groups, values.shape[0]))
    group_sum(
        out=sums,
        counts=np.zeros(n_groups, dtype=np.int64),
        values=values.T,
        labels=groups,
        mask=None,
        result_mask=None,
        min_count=0,
        is_datetimelike=False,
        initial=0,
    )
    return sums.T


class ArrayMACE(MACE):
    """crowd-kit's `MACE` (same parameters, same `fit`), its E-step on arrays."""

    _layout: tuple | None = None  # the ratings the layout below was found for, and that layout

    def _strategy_layout(self, annotation: pd.DataFrame) -> tuple[np.ndarray, int, pd.Index, int]:
        """Each rating's group of crowd-kit's grouping by (worker, label), both in sorted order, with the number of
        groups, the sorted workers and the number of labels: found once per fit (every E-step reads the same
        ratings)."""
        if self._layout is None or self._layout[0] is not annotation:
            worker_rank, worker_sorted = pd.factorize(annotation["worker"], sort=True)
            label_rank, label_sorted = pd.factorize(annotation["label"], sort=True)
            groups = (worker_rank * len(label_sorted) + label_rank).astype(np.intp)
            self._layout = (
                annotation,
                (groups, len(worker_sorted) * len(label_sorted), worker_sorted, len(label_sorted)),
            )
        return self._layout[1]

    def _e_step(self, annotation, task_names, worker_names, label_names, tasks, workers, labels):
        n_tasks, n_labels = len(task_names), len(label_names)
        knowing = self.spamming_[workers, 0]
        spamming = self.spamming_[workers, 1]
        strategy = self.thetas_[workers, labels]

        factors = [knowing * strategy + spamming * (index == labels) for index in range(n_labels)]
        marginals = np.ones((n_labels, n_tasks))
        for index in range(n_labels):
            np.multiply.at(marginals[index], tasks, factors[index])
        # A task's marginal is a product of one factor (<= 1) per rating: with hundreds of ratings (a crowd study's
        # 600 per item) it falls below the smallest double, every label's is 0 and 0/0 makes crowd-kit's posteriors
        # NaN. Such a task's marginals are taken from the sums of the factors' logarithms instead, scaled by their
        # largest (every use below is a ratio within the task); `shift` puts the scale back into the likelihood.
        # Tasks whose largest product stays above SCALED_BELOW never left the normal doubles: crowd-kit's numbers.
        shift = np.zeros(n_tasks)
        scaled = marginals.max(axis=0) < SCALED_BELOW
        if scaled.any():
            logs = np.zeros((n_labels, n_tasks))
            for index in range(n_labels):
                np.add.at(logs[index], tasks, np.log(factors[index]))
            shift = np.where(scaled, logs.max(axis=0), 0.0)
            marginals[:, scaled] = np.exp(logs[:, scaled] - shift[scaled])
        columns = marginals / n_labels
        # Built as crowd-kit builds it, a column at a time: `decode_distribution` sums its rows in that layout.
        gold_label_marginals = pd.DataFrame(np.zeros((n_tasks, n_labels)), index=task_names, columns=label_names)
        for index, label in enumerate(label_names):
            gold_label_marginals[label] = columns[index]
        gold = columns.T
        # The frame's row sums, in its columns' order: the last label's, then the others in order.
        instance_marginals = columns[-1].copy()
        for index in range(n_labels - 1):
            instance_marginals += columns[index]
        if scaled.any():
            log_marginal_likelihood = (np.log(instance_marginals + np.where(scaled, 0.0, 1e-8)) + shift).sum()
        else:
            log_marginal_likelihood = np.log(instance_marginals + 1e-8).sum()

        strategy_marginal = np.zeros(len(tasks))
        for label in range(n_labels):
            strategy_marginal += gold[tasks, label] / (knowing * strategy + spamming * (labels == label))
        strategy_marginal = strategy_marginal * knowing * strategy / instance_marginals[tasks]

        knowing_counts = (gold[tasks, labels] * spamming / (knowing * strategy + spamming)) / instance_marginals[tasks]
        by_worker = _grouped_sums(
            np.vstack([strategy_marginal, knowing_counts]), workers.astype(np.intp), len(worker_names)
        )
        knowing_expected_counts = pd.DataFrame(
            by_worker.T, index=worker_names, columns=["knowing_expected_count_0", "knowing_expected_count_1"]
        )
        groups, n_groups, worker_sorted, n_sorted_labels = self._strategy_layout(annotation)
        counts = _grouped_sums(strategy_marginal[None, :], groups, n_groups)
        strategy_expected_counts = pd.DataFrame(
            counts.reshape(len(worker_sorted), n_sorted_labels), index=worker_sorted
        )
        return log_marginal_likelihood, gold_label_marginals, strategy_expected_counts, knowing_expected_counts
