"""One label per item from its ratings (docs/domain.md, 'Multi-rater statistics'): majority vote, Dawid-Skene and
MACE, each crowd-kit's implementation (pinned in requirements.txt; the majority vote, Dawid-Skene's EM and MACE's
E-step computed on arrays with crowd-kit's results, `_majority`, `dawid_skene.py` and `mace.py`), with Dawid-Skene's
posterior of its label.

Only study items count, each with every annotation it has, one or more. The models learn each rater's reliability
from the items raters share, so a pool without an item rated twice has nothing to learn from: `pool_aggregates`
refuses it (`AggregationError`).

This is a read of the annotation app, so that both `export_annotations --aggregate` and the analysis report (a higher
app) call the same code.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
from django.core.cache import cache

from annotation.models import STUDY, Annotation, Pool, PoolItem
from common.errors import ServiceError
from common.frames import pd

AGGREGATES = ("majority", "dawid_skene", "mace")
CELL_COLUMNS = ["model", "dataset", "setting", "pronoun"]
AGGREGATE_COLUMNS = ["item", "n_ratings", "majority", "dawid_skene", "dawid_skene_posterior", "mace", *CELL_COLUMNS]

# crowd-kit's defaults, but one MACE restart: crowd-kit seeds every restart with the same integer random_state, so
# its ten default restarts start from one point and end at one answer, and one restart gives that answer (labels and
# posteriors equal, tests/analysis/test_aggregation.py) with a tenth of the work. The fit is crowd-kit's with its
# E-step on arrays (annotation/selectors/mace.py: the same numbers, faster; benchmarks/README.md, "Multi-rater
# statistics").
DAWID_SKENE_ITERATIONS = 100
MACE_RESTARTS = 1
MACE_SEED = 0


# Aggregates are kept in Django's cache under a fingerprint of the ratings themselves: a report rebuilt because a job
# progressed or an item was adjudicated, or asked for with another `--human`, reuses them (benchmarks/README.md,
# 'Multi-rater statistics': they are the costliest part of a computed report).
AGGREGATE_CACHE_SECONDS = 24 * 3600
AGGREGATE_MEMO_SIZE = 32  # a paper-scale pool's aggregates are about 0.2 MB (2,400 items x 6 columns)
_memo: OrderedDict[str, Any] = OrderedDict()


class AggregationError(ServiceError, ValueError):
    """The pool's ratings cannot be aggregated (no item rated twice)."""

    def body(self) -> dict[str, object]:
        message = str(self)
        return {"human": [f"{message[:1].upper()}{message[1:]}."]}  # the reports' `human` parameter asked for it


def ratings_aggregate(*, ratings: pd.DataFrame) -> pd.DataFrame:
    """Per task of `ratings` (columns task, worker, label; one row per rating): `n_ratings`, `majority`,
    `dawid_skene`, `dawid_skene_posterior` (its posterior probability of that label) and `mace`, indexed by task in
    order of first appearance. Raises AggregationError when no task has two ratings."""
    data = _checked(ratings)
    from annotation.selectors.mace import ArrayMACE

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' FutureWarnings from inside crowd-kit
        mace = ArrayMACE(n_restarts=MACE_RESTARTS, random_state=MACE_SEED).fit_predict(data)
    dawid_skene = _dawid_skene(data)
    tasks = pd.unique(data["task"])
    ds_labels = dawid_skene.labels_
    # Each task's posterior of its label, read off the posteriors by position (a `.loc` per task costs 0.4 s on 2,500).
    probas = dawid_skene.probas_.reindex(tasks)
    columns = probas.columns.get_indexer(ds_labels.reindex(tasks))
    if (columns < 0).any():
        raise AggregationError("Dawid-Skene gave a task a label outside its posteriors")
    posterior = probas.to_numpy(dtype=float)[np.arange(len(tasks)), columns].tolist()
    return pd.DataFrame(
        {
            "n_ratings": data.groupby("task").size().reindex(tasks).astype(int).to_numpy(),
            "majority": _majority(data),
            "dawid_skene": ds_labels.reindex(tasks).to_numpy(),
            "dawid_skene_posterior": posterior,
            "mace": mace.reindex(tasks).to_numpy(),
        },
        index=pd.Index(tasks, name="task"),
    )


def _majority(data: pd.DataFrame) -> np.ndarray:
    """crowd-kit's majority vote (`MajorityVote`, without the per-worker accuracies it also computes) per task in
    order of first appearance: the label given most often, a tie going to the label that comes first in the ratings
    (crowd-kit takes the first largest of each task's label shares, its labels in order of first appearance as
    pandas 3 unstacks its `value_counts`)."""
    tasks, task_names = pd.factorize(data["task"], sort=False)
    labels, label_names = pd.factorize(data["label"], sort=False)
    counts = np.bincount(tasks * len(label_names) + labels, minlength=len(task_names) * len(label_names))
    return np.asarray(label_names, dtype=object)[counts.reshape(len(task_names), len(label_names)).argmax(axis=1)]


def ratings_dawid_skene(*, ratings: pd.DataFrame) -> pd.Series:
    """Dawid-Skene's label per task alone (the quality dashboard's reference, polled while people work: it skips
    MACE's cost). Raises AggregationError as `ratings_aggregate` does."""
    return _dawid_skene(_checked(ratings)).labels_


def _checked(ratings: pd.DataFrame) -> pd.DataFrame:
    if ratings.empty or int(ratings.groupby("task").size().max()) < 2:
        raise AggregationError("no item has two or more ratings, so there is nothing to aggregate")
    return ratings[["task", "worker", "label"]].reset_index(drop=True)


def _dawid_skene(data: pd.DataFrame):
    from annotation.selectors.dawid_skene import ArrayDawidSkene

    return ArrayDawidSkene(n_iter=DAWID_SKENE_ITERATIONS).fit(data)


def pool_ratings(*, pool: Pool) -> pd.DataFrame:
    """Every annotation of the pool's study items as (task = item id, worker = annotator's name, label), oldest
    first within an item, those made at one time (one import's) by annotator: crowd-kit's fits read the ratings in
    order (its majority's ties, MACE's and Dawid-Skene's sums), and no figure may depend on the order of a file's
    rows (docs/domain.md, "Headline figures")."""
    return pd.DataFrame.from_records(
        Annotation.objects.filter(item__pool=pool, item__kind=STUDY)
        .order_by("item_id", "created_at", "id")
        .values_list("item_id", "annotator__username", "label"),
        columns=["task", "worker", "label"],
    )


def ratings_aggregate_cached(*, ratings: pd.DataFrame) -> pd.DataFrame:
    """`ratings_aggregate`, kept under a fingerprint of the (task, worker, label) rows: in this process (the last
    `AGGREGATE_MEMO_SIZE` fingerprints) and in Django's cache.

    The aggregates depend on which ratings share a task and on the tasks' order, not on the ids themselves, so the
    ids are replaced by their ranks for the fingerprint and the computation, and put back after: the same ratings
    under other ids (a pool rebuilt, a test's fresh rows) are computed once.
    """
    tasks, ranked, fingerprint = _ranked(ratings)
    key = f"concord:aggregates:ranked:{DAWID_SKENE_ITERATIONS}:{MACE_RESTARTS}:{MACE_SEED}:{fingerprint}"
    aggregated = _kept(key, lambda: ratings_aggregate(ratings=ranked)).copy()
    aggregated.index = pd.Index(tasks[aggregated.index.to_numpy()], name="task")
    return aggregated


def ratings_dawid_skene_cached(*, ratings: pd.DataFrame) -> pd.Series:
    """`ratings_dawid_skene`, kept as `ratings_aggregate_cached` keeps the aggregates: the quality dashboard, polled
    while people work, fits Dawid-Skene again only when the ratings changed."""
    tasks, ranked, fingerprint = _ranked(ratings)
    key = f"concord:dawid_skene:ranked:{DAWID_SKENE_ITERATIONS}:{fingerprint}"
    labels = _kept(key, lambda: ratings_dawid_skene(ratings=ranked)).copy()
    labels.index = pd.Index(tasks[labels.index.to_numpy()], name=labels.index.name)
    return labels


def _ranked(ratings: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame, str]:
    """The ratings' tasks (sorted), the ratings with each task replaced by its rank among them, and a fingerprint of
    those ranked ratings. Raises AggregationError as `ratings_aggregate` does."""
    data = _checked(ratings)
    tasks = np.sort(pd.unique(data["task"]))
    ranked = data.assign(task=np.searchsorted(tasks, data["task"].to_numpy()))
    fingerprint = hashlib.sha256(pd.util.hash_pandas_object(ranked, index=False).to_numpy().tobytes()).hexdigest()
    return tasks, ranked, fingerprint[:32]


def _kept(key: str, compute: Callable[[], Any]) -> Any:
    """What `compute()` returns, kept under `key` in this process's memo and in Django's cache."""
    value = _memo.get(key)
    if value is None:
        value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, timeout=AGGREGATE_CACHE_SECONDS)
    _memo[key] = value
    _memo.move_to_end(key)
    while len(_memo) > AGGREGATE_MEMO_SIZE:
        _memo.popitem(last=False)
    return value


def aggregates_memo_clear() -> None:
    """Forget the aggregates this process keeps (Django's cache keeps its own)."""
    _memo.clear()


def pool_aggregates(*, pool: Pool) -> list[dict]:
    """One row per annotated study item of the pool, in item order: `AGGREGATE_COLUMNS` (`item` is the item's public
    id). Raises AggregationError for a pool with no item rated twice."""
    try:
        aggregated = ratings_aggregate_cached(ratings=pool_ratings(pool=pool))
    except AggregationError as error:
        raise AggregationError(f"pool {pool.name!r}: {error}") from None
    items = PoolItem.objects.filter(pk__in=list(aggregated.index)).order_by("pk")
    rows = []
    by_item = aggregated.to_dict("index")  # a `.loc` per item costs more than the rest of this function
    for item in items.values("pk", "public_id", "model_name", "dataset", "setting", "pronoun"):
        figures = by_item[item["pk"]]
        rows.append(
            {
                "item": item["public_id"],
                "n_ratings": int(figures["n_ratings"]),
                "majority": figures["majority"],
                "dawid_skene": figures["dawid_skene"],
                "dawid_skene_posterior": float(figures["dawid_skene_posterior"]),
                "mace": figures["mace"],
                "model": item["model_name"],
                "dataset": item["dataset"],
                "setting": item["setting"],
                "pronoun": item["pronoun"],
            }
        )
    return rows
