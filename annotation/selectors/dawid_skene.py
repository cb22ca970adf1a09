"""crowd-kit's Dawid-Skene computed on arrays: the same model, the same numbers.

crowd-kit 1.4.2's `DawidSkene.fit` (crowdkit/aggregation/classification/dawid_skene.py) joins the ratings' DataFrame
with the task posteriors (M-step) or with the log error matrices (E-step, evidence lower bound) on every EM step; on a
small pool those joins, index alignments and MultiIndex groupbys are the whole cost of a step.
`ArrayDawidSkene.fit` runs the same EM from the same start on arrays, computing each quantity in the order crowd-kit
does:
- the start is crowd-kit's majority vote: each task's label shares over its ratings, tasks and labels in order of
  first appearance (as pandas 3 unstacks crowd-kit's `value_counts`);
- each error matrix is a grouped sum of the posteriors over a (worker, label)'s ratings in their order, pandas' own
  grouped sum as crowd-kit's `groupby(["worker", "label"]).sum()` computes it (`grouped.py`), clipped at 1e-10 and
  divided by the worker's (grouped) sum over the labels it used;
- each task's log-likelihood is pandas' grouped sum of its ratings' log2 errors, in their order, plus the log prior;
- the priors are the posteriors' column means, summed as pandas sums each frame: the majority vote's a task after
  another, an E-step's along each label's contiguous column (pairwise);
- the evidence lower bound (only its change against `tol` stops the loop) is computed on arrays in another order;
- the posteriors kept at the end are clipped at 1e-10, as crowd-kit's bound clips them in place.

So labels and posteriors are crowd-kit's to the last bit (tests/analysis/test_aggregation.py compares them on random
ratings). Only the plain fit is replaced: with golden labels or initial error matrices it is crowd-kit's own.
Importing this module imports crowd-kit: import it where a fit is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from annotation.selectors.grouped import grouped_sums
from common.crowd_kit import models
from common.frames import pd

if TYPE_CHECKING:
    from crowdkit.aggregation import DawidSkene
else:
    DawidSkene = models().DawidSkene  # without crowdkit.aggregation's __init__ (common/crowd_kit.py)

_EPS = np.float_power(10, -10)


class ArrayDawidSkene(DawidSkene):
    """crowd-kit's `DawidSkene` (same parameters, same results), its EM on arrays."""

    def fit(self, data: pd.DataFrame, true_labels=None, initial_error=None) -> ArrayDawidSkene:
        data = data[["task", "worker", "label"]]
        if true_labels is not None or initial_error is not None or not data.size:
            super().fit(data, true_labels=true_labels, initial_error=initial_error)
            return self
        # Tasks, labels, (worker, label) pairs and workers in order of first appearance, as crowd-kit's frames and
        # groupbys hold them.
        tasks, task_names = pd.factorize(data["task"], sort=False)
        labels, label_names = pd.factorize(data["label"], sort=False)
        n_labels = len(label_names)
        # The (worker, label) pairs as one integer code each: a MultiIndex of a crowd study's 240,000 ratings built
        # its tuples one by one (most of the fit's time).
        workers, all_workers = pd.factorize(data["worker"], sort=False)
        pair, pair_codes = pd.factorize(workers.astype(np.int64) * n_labels + labels, sort=False)
        pair_worker, first_workers = pd.factorize(pair_codes // n_labels, sort=False)
        worker_names = all_workers[first_workers]
        pair_label = pair_codes % n_labels

        counts = np.zeros((len(task_names), n_labels))
        np.add.at(counts, (tasks, labels), 1)
        probas = counts / counts.sum(axis=1, keepdims=True)
        priors = probas.sum(axis=0) / len(probas)  # the majority vote's frame sums its tasks one after another
        errors = _m_step(probas[tasks], pair, pair_worker)

        loss = -np.inf
        self.loss_history_ = []
        for _ in range(self.n_iter):
            probas = _e_step(errors[pair], tasks, priors)
            priors = _column_means(probas)
            errors = _m_step(probas[tasks], pair, pair_worker)
            priors = np.clip(priors, _EPS, None)
            new_loss = _evidence_lower_bound(probas, tasks, errors[pair], priors) / len(data)
            probas = np.clip(probas, _EPS, None)
            self.loss_history_.append(new_loss)
            if new_loss - loss < self.tol:
                break
            loss = new_loss

        columns = pd.Index(label_names, name="label", dtype=data["label"].dtype)
        self.probas_ = pd.DataFrame(probas, index=pd.Index(task_names, name="task"), columns=columns)
        self.priors_ = pd.Series(priors, index=columns, name="prior")
        self.errors_ = pd.DataFrame(
            errors,
            index=pd.MultiIndex.from_arrays(
                [worker_names[pair_worker], label_names[pair_label]], names=["worker", "label"]
            ),
            columns=pd.Index(label_names, dtype=data["label"].dtype),
        )
        self.labels_ = self.probas_.idxmax(axis="columns")
        return self


def _column_means(probas: np.ndarray) -> np.ndarray:
    """`DataFrame.mean()` of an E-step's posteriors: each label's column summed along its contiguous values (pairwise,
    as pandas sums that frame's block), divided by the number of tasks."""
    return np.ascontiguousarray(probas.T).sum(axis=1) / len(probas)


def _m_step(rated: np.ndarray, pair: np.ndarray, pair_worker: np.ndarray) -> np.ndarray:
    """Each (worker, label) pair's error row: the posteriors of its ratings' tasks (`rated`, a row per rating) summed
    in rating order, clipped, each divided by its worker's sum over the labels it used."""
    errors = grouped_sums(np.ascontiguousarray(rated.T), pair, int(pair.max()) + 1).T
    errors = np.clip(errors, _EPS, None)
    by_worker = grouped_sums(np.ascontiguousarray(errors.T), pair_worker, int(pair_worker.max()) + 1).T
    return errors / by_worker[pair_worker]


def _e_step(rated_errors: np.ndarray, task: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Each task's posterior (tasks in order of first appearance): the log2 prior plus its ratings' log2 errors
    summed in rating order, shifted by the row's maximum, exponentiated and normalized."""
    summed = grouped_sums(np.ascontiguousarray(np.log2(rated_errors).T), task, int(task.max()) + 1).T
    likelihoods = np.log2(np.clip(priors, _EPS, None)) + summed
    scaled = np.exp2(likelihoods - likelihoods.max(axis=1, keepdims=True))
    return scaled / _row_sums(scaled)[:, None]


def _row_sums(values: np.ndarray) -> np.ndarray:
    """`DataFrame.sum(axis=1)`: the labels added in column order."""
    total = values[:, 0].copy()
    for column in range(1, values.shape[1]):
        total += values[:, column]
    return total


def _evidence_lower_bound(probas: np.ndarray, tasks: np.ndarray, rated_errors: np.ndarray, priors: np.ndarray) -> float:
    """The expected joint log-likelihood over the posteriors plus their entropy (crowd-kit's, summed in another
    order: it only decides when the loop stops, by a change of at least `tol`)."""
    joint = (probas[tasks] * (np.log(rated_errors) + np.log(priors))).sum()
    clipped = np.clip(probas, _EPS, None)
    return float(joint - (np.log(clipped) * clipped).sum())
