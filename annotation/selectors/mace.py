"""crowd-kit's MACE with its E-step computed on arrays: the same model, the same numbers.

crowd-kit 1.4.2's `MACE._e_step` (crowdkit/aggregation/classification/mace.py) works on the ratings' DataFrame: per
label a product over each task's rows of every numeric column, then an index reset and three grouped sums of every
column. On a small pool that overhead is the whole cost, about 20 ms per step and 52 steps per fit.
`ArrayMACE.fit` is crowd-kit's own `fit` (initialization, variational M-steps, restarts, decoding); only the
E-step is replaced, and it computes each quantity in the order crowd-kit's does:
- a task's marginal per label is the running product over its rows in their order, as pandas' grouped product;
- the grouped sums are pandas' own (compensated) grouped sums over the same rows in the same order;
- the expected strategy counts come in crowd-kit's layout: workers and labels in sorted order, as its `unstack` gives
  them (its M-step reads them by position).

So labels and posteriors are crowd-kit's to the last bit (tests/analysis/test_aggregation.py compares them on random
ratings). Importing this module imports crowd-kit: import it where a fit is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from common.crowd_kit import models
from common.frames import pd

if TYPE_CHECKING:
    from crowdkit.aggregation import MACE
else:
    MACE = models().MACE  # without crowdkit.aggregation's __init__ (common/crowd_kit.py)

# Far above the smallest normal double (2.2e-308): a product of factors <= 1 that ends above it never lost a bit.
SCALED_BELOW = 1e-280


class ArrayMACE(MACE):
    """crowd-kit's `MACE` (same parameters, same `fit`), its E-step on arrays."""

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
        # Built as crowd-kit builds it, a column at a time: the frame's row sums depend on its layout in the last bit.
        gold_label_marginals = pd.DataFrame(np.zeros((n_tasks, n_labels)), index=task_names, columns=label_names)
        for index, label in enumerate(label_names):
            gold_label_marginals[label] = marginals[index] / n_labels
        gold = gold_label_marginals.to_numpy()
        instance_marginals = gold_label_marginals.sum(axis=1).to_numpy()
        if scaled.any():
            log_marginal_likelihood = (np.log(instance_marginals + np.where(scaled, 0.0, 1e-8)) + shift).sum()
        else:
            log_marginal_likelihood = np.log(instance_marginals + 1e-8).sum()

        strategy_marginal = np.zeros(len(tasks))
        for label in range(n_labels):
            strategy_marginal += gold[tasks, label] / (knowing * strategy + spamming * (labels == label))
        strategy_marginal = strategy_marginal * knowing * strategy / instance_marginals[tasks]

        knowing_counts = (gold[tasks, labels] * spamming / (knowing * strategy + spamming)) / instance_marginals[tasks]
        by_worker = pd.DataFrame(
            {"knowing_expected_count_0": strategy_marginal, "knowing_expected_count_1": knowing_counts}
        )
        knowing_expected_counts = by_worker.groupby(workers).sum().set_axis(worker_names)
        strategy_expected_counts = self._strategy_counts(annotation, strategy_marginal)
        return log_marginal_likelihood, gold_label_marginals, strategy_expected_counts, knowing_expected_counts

    @staticmethod
    def _strategy_counts(annotation, strategy_marginal) -> pd.DataFrame:
        # crowd-kit: annotation.groupby(["worker", "label"]).sum()["strategy_marginal"].unstack().fillna(0.0)
        worker_rank, worker_sorted = pd.factorize(annotation["worker"], sort=True)
        label_rank, label_sorted = pd.factorize(annotation["label"], sort=True)
        sums = pd.Series(strategy_marginal).groupby(worker_rank * len(label_sorted) + label_rank).sum()
        counts = np.zeros(len(worker_sorted) * len(label_sorted))
        counts[sums.index.to_numpy()] = sums.to_numpy()
        return pd.DataFrame(counts.reshape(len(worker_sorted), len(label_sorted)), index=worker_sorted)
