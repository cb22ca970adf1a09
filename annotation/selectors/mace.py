"""crowd-kit's MACE with its E-step computed on arrays: the same model, the same numbers.

crowd-kit 1.4.2's `MACE._e_step` (crowdkit/aggregation/classification/mace.py) works on the ratings' DataFrame: per
label a product over each task's rows of every numeric column, then an index reset and three grouped sums of every
column, and its results go from step to step as frames. On a small pool that overhead is the whole cost, 52 steps per
fit. `ArrayMACE.fit` takes crowd-kit's `fit` step for step, with crowd-kit's own initialization, M-steps and
decoding; only the E-step is replaced, its results kept as arrays, and it computes each quantity in the order
crowd-kit's does:
- a task's marginal per label is the running product over its rows in their order, as pandas' grouped product;
- a task's marginal likelihood is the sum of its labels' marginals in the order pandas adds the columns of
  crowd-kit's frame: that frame is built a column at a time, which leaves the last label's column first;
- the grouped sums are pandas' own, as its `groupby(...).sum()` computes them (`grouped.py`), over the same rows in
  the same order;
- the expected strategy counts come in crowd-kit's layout: workers and labels in sorted order, as its `unstack` gives
  them (its M-step reads them by position).

So labels and posteriors are crowd-kit's to the last bit (tests/analysis/test_aggregation.py compares them on random
ratings). Importing this module imports crowd-kit: import it where a fit is made.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from annotation.selectors.grouped import grouped_sums
from common.crowd_kit import models
from common.frames import pd

if TYPE_CHECKING:
    from crowdkit.aggregation import MACE
    from crowdkit.aggregation.classification.mace import decode_distribution
else:
    MACE = models().MACE  # without crowdkit.aggregation's __init__ (common/crowd_kit.py)
    decode_distribution = sys.modules[MACE.__module__].decode_distribution

# Far above the smallest normal double (2.2e-308): a product of factors <= 1 that ends above it never lost a bit.
SCALED_BELOW = 1e-280


class _StrategyLayout(NamedTuple):
    """Each rating's group in crowd-kit's grouping of the ratings by (worker, label), workers and labels in sorted
    order; the sorted workers and the number of labels."""

    groups: np.ndarray
    workers: pd.Index
    n_labels: int


def _strategy_layout(ratings: pd.DataFrame) -> _StrategyLayout:
    # crowd-kit: annotation.groupby(["worker", "label"]).sum()["strategy_marginal"].unstack().fillna(0.0)
    worker_rank, worker_sorted = pd.factorize(ratings["worker"], sort=True)
    label_rank, label_sorted = pd.factorize(ratings["label"], sort=True)
    groups = (worker_rank * len(label_sorted) + label_rank).astype(np.intp)
    return _StrategyLayout(groups=groups, workers=worker_sorted, n_labels=len(label_sorted))


def _marginals_frame(columns: np.ndarray, task_names: pd.Index, label_names: pd.Index) -> pd.DataFrame:
    """The gold label marginals (labels x tasks) as crowd-kit's E-step builds their frame, a column at a time:
    `decode_distribution` sums its rows in that frame's layout, which leaves the last label's column first."""
    frame = pd.DataFrame(np.zeros((len(task_names), len(label_names))), index=task_names, columns=label_names)
    for index, label in enumerate(label_names):
        frame[label] = columns[index]
    return frame


class ArrayMACE(MACE):
    """crowd-kit's `MACE` (same parameters, same steps), its E-step on arrays."""

    def fit(self, data: pd.DataFrame) -> ArrayMACE:
        """crowd-kit's `MACE.fit` step for step (initialization, M-steps, restarts, decoding; without its progress
        bars), the E-step's results kept as arrays between the steps: only the last E-step's marginals are decoded,
        so only they are built into crowd-kit's frame."""
        workers, worker_names = pd.factorize(data["worker"])
        labels, label_names = pd.factorize(data["label"])
        tasks, task_names = pd.factorize(data["task"])
        n_workers, n_labels = len(worker_names), len(label_names)
        self.smoothing_ = 0.01 / n_labels
        layout = _strategy_layout(data)
        groups = workers.astype(np.intp)

        def step() -> tuple[float, np.ndarray, pd.DataFrame, pd.DataFrame]:
            likelihood, columns, strategy_counts, knowing_counts = self._arrays_e_step(
                tasks, workers, labels, groups, len(task_names), n_labels, n_workers, layout
            )
            # crowd-kit's M-steps read the counts' `.values`
            return likelihood, columns, pd.DataFrame(strategy_counts), pd.DataFrame(knowing_counts)

        best_log_marginal_likelihood = -np.inf
        for _ in range(self.n_restarts):
            self._initialize(n_workers, n_labels)
            log_marginal_likelihood, _, strategy_expected_counts, knowing_expected_counts = step()
            for _ in range(self.n_iter):
                if self.method == "vb":
                    self._variational_m_step(knowing_expected_counts, strategy_expected_counts)
                else:
                    self._m_step(knowing_expected_counts, strategy_expected_counts)
                log_marginal_likelihood, _, strategy_expected_counts, knowing_expected_counts = step()
            if log_marginal_likelihood > best_log_marginal_likelihood:
                best_log_marginal_likelihood = log_marginal_likelihood
                best_thetas = self.thetas_.copy()
                best_spamming = self.spamming_.copy()

        self.thetas_ = best_thetas
        self.spamming_ = best_spamming
        _, columns, _, _ = step()
        self.probas_ = decode_distribution(_marginals_frame(columns, task_names, label_names))
        self.labels_ = self.probas_.idxmax(axis="columns")
        self.labels_.index.name = "task"
        return self

    def _e_step(self, annotation, task_names, worker_names, label_names, tasks, workers, labels):
        """crowd-kit's E-step, its results in crowd-kit's frames (`fit` keeps them as arrays)."""
        layout = _strategy_layout(annotation)
        likelihood, columns, strategy_counts, knowing_counts = self._arrays_e_step(
            tasks,
            workers,
            labels,
            workers.astype(np.intp),
            len(task_names),
            len(label_names),
            len(worker_names),
            layout,
        )
        return (
            likelihood,
            _marginals_frame(columns, task_names, label_names),
            pd.DataFrame(strategy_counts, index=layout.workers),
            pd.DataFrame(
                knowing_counts, index=worker_names, columns=["knowing_expected_count_0", "knowing_expected_count_1"]
            ),
        )

    def _arrays_e_step(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        labels: np.ndarray,
        groups: np.ndarray,
        n_tasks: int,
        n_labels: int,
        n_workers: int,
        layout: _StrategyLayout,
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """The log marginal likelihood, the gold label marginals (labels x tasks), the expected strategy counts
        (sorted workers x sorted labels) and the knowing expected counts (workers x 2)."""
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
        gold = columns.T
        # The row sums of crowd-kit's frame of the marginals, in the order pandas adds its columns (`_marginals_frame`).
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
        by_worker = grouped_sums(np.vstack([strategy_marginal, knowing_counts]), groups, n_workers)
        counts = grouped_sums(strategy_marginal[None, :], layout.groups, len(layout.workers) * layout.n_labels)
        return log_marginal_likelihood, columns, counts.reshape(len(layout.workers), layout.n_labels), by_worker.T
