"""Reads for annotator quality (docs/domain.md, 'Annotator quality'): the report's `annotator_quality` rows and the
researchers' quality dashboard at /pools/NAME/quality/.

- Gold items carry a known label; an annotator's gold answer is correct when its label equals the gold label (the
  extraneous flag is not scored, as in the qualification round). Gold items never enter a study metric.
- Time: `Annotation.seconds` (summed over visits) of every study and gold annotation; training items are the
  qualification round and are left out. A decision is fast when it took less than the pool's `fast_seconds`.
- Agreement: the share of (shared study item, other annotator) pairs where the two labels are equal.
- Confusion matrices per rater (docs/domain.md, 'Multi-rater statistics'): `{reference label: {rater's label:
  count}}` against the gold label (gold items), against the Dawid-Skene aggregate (study items; empty while no item
  is rated twice) and against the heuristic (study items; its verdict read as correct / misgendering).
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from analysis.metrics import raw_agreement
from analysis.metrics.agreement import agreement_vector, bootstrap_ci, cohen_kappa_square, finite
from analysis.metrics.multirater import fleiss_kappa, gwet_ac1, pairwise_agreement
from analysis.report.types import AnnotatorQualityRow
from annotation.models import GOLD, STUDY, Annotation, Assignment, Pool
from annotation.schema import CORRECT, MISGENDERING
from annotation.selectors.aggregate import AggregationError, ratings_dawid_skene_cached
from common.frames import pd

WINDOW = 50  # overlap items per point of the agreement-over-time line
FAST_SHARE_WARNING = 0.2  # an annotator with more than this share of fast decisions gets a warning
SECONDS_BINS = [0, 1, 2, 3, 5, 10, 20, 30, 60, 120]  # histogram edges; the last bin is open-ended

ANNOTATION_COLUMNS = ["item_id", "kind", "gold_label", "annotator", "label", "seconds", "created_at", "heuristic"]
HEURISTIC_LABELS = [CORRECT, MISGENDERING]  # the heuristic's verdict 1 / 0 as a label


def annotation_frame(*, pool: Pool) -> pd.DataFrame:
    """Every study and gold annotation of the pool, oldest first (training items are left out)."""
    return pd.DataFrame.from_records(
        Annotation.objects.filter(item__pool=pool, item__kind__in=[STUDY, GOLD])
        .order_by("created_at", "id")
        .values_list(
            "item_id",
            "item__kind",
            "item__gold_label",
            "annotator__username",
            "label",
            "seconds",
            "created_at",
            "item__heuristic_correct",
        ),
        columns=ANNOTATION_COLUMNS,
    )


def _annotators(*, pool: Pool, frame: pd.DataFrame) -> list[str]:
    assigned = set(Assignment.objects.filter(pool=pool).values_list("annotator__username", flat=True).distinct())
    return sorted(assigned | set(frame["annotator"]))


def _shared_pairs(study: pd.DataFrame) -> dict[str, list[bool]]:
    """For each annotator, one equal/unequal flag per (shared study item, other annotator)."""
    by_item: dict[int, list[tuple[str, str]]] = defaultdict(list)
    columns = (study[name].tolist() for name in ("item_id", "annotator", "label"))
    for item, annotator, label in zip(*columns, strict=True):
        by_item[item].append((annotator, label))
    pairs: dict[str, list[bool]] = defaultdict(list)
    for item in sorted(by_item):
        for (a, label_a), (b, label_b) in itertools.combinations(by_item[item], 2):
            pairs[a].append(label_a == label_b)
            pairs[b].append(label_a == label_b)
    return pairs


def annotator_quality(*, pool: Pool, frame: pd.DataFrame | None = None) -> list[AnnotatorQualityRow]:
    """One row per annotator with work in the pool: `items` (study items annotated), `gold_n`, `gold_correct`,
    `gold_accuracy`, `median_seconds`, `fast_share` (decisions under `Pool.fast_seconds`), `agreement` with the other
    raters on shared study items and `agreement_n`, the number of such comparisons. Undefined figures are None."""
    frame = annotation_frame(pool=pool) if frame is None else frame
    pairs = _shared_pairs(frame[frame["kind"] == STUDY])
    # Each annotator's rows, oldest first, as plain lists: pandas' filters cost a millisecond each per annotator.
    own: dict[str, list[tuple[str, object, str, float]]] = defaultdict(list)
    columns = (frame[name].tolist() for name in ("annotator", "kind", "gold_label", "label", "seconds"))
    for annotator, kind, gold_label, label, seconds in zip(*columns, strict=True):
        own[annotator].append((kind, gold_label, label, seconds))
    rows: list[AnnotatorQualityRow] = []
    for annotator in _annotators(pool=pool, frame=frame):
        work = own.get(annotator, [])
        gold = [label == gold_label for kind, gold_label, label, _ in work if kind == GOLD]
        seconds = np.array([row[3] for row in work], dtype=float)
        agree = pairs.get(annotator, [])
        rows.append(
            {
                "annotator": annotator,
                "items": sum(kind == STUDY for kind, *_ in work),
                "gold_n": len(gold),
                "gold_correct": sum(gold),
                "gold_accuracy": sum(gold) / len(gold) if gold else None,
                "median_seconds": finite(np.median(seconds)) if seconds.size else None,
                "fast_share": float((seconds < pool.fast_seconds).mean()) if seconds.size else None,
                "agreement": float(np.mean(agree)) if agree else None,
                "agreement_n": len(agree),
            }
        )
    return rows


def kappa_matrix(*, frame: pd.DataFrame, annotators: list[str], labels: list[str]) -> dict:
    """Cohen's kappa of the labels for every pair of annotators on the study items they share (null where they share
    none or kappa is undefined); `n` holds the shared item counts, each annotator's own item count on the diagonal."""
    study = frame[frame["kind"] == STUDY]
    items = [list(zip(g["annotator"], g["label"], strict=True)) for _, g in study.groupby("item_id") if len(g) > 1]
    categories = list(labels) + sorted(set(study["label"]) - set(labels))
    pairwise = {(r["annotator_1"], r["annotator_2"]): r for r in pairwise_agreement(items, categories=categories)}
    size = len(annotators)
    kappa: list[list[float | None]] = [[None] * size for _ in range(size)]
    shared = [[0] * size for _ in range(size)]
    for i, a in enumerate(annotators):
        shared[i][i] = int((study["annotator"] == a).sum())
        for j, b in enumerate(annotators):
            row = pairwise.get((a, b)) or pairwise.get((b, a))
            if i != j and row:
                kappa[i][j], shared[i][j] = row["cohen_kappa"], row["n_items"]
    return {"annotators": annotators, "kappa": kappa, "n": shared}


def agreement_over_time(*, frame: pd.DataFrame, labels: list[str], window: int = WINDOW) -> list[dict]:
    """Overlap study items in the order their second annotation was made, cut into windows of `window` items (the
    last may be shorter): per window, raw agreement (SEM, bootstrap interval) and Cohen's kappa on the square table of
    the first two labels, and its time span."""
    study = frame[frame["kind"] == STUDY]
    firsts, seconds, times = [], [], []
    for _, group in study.groupby("item_id"):
        if len(group) > 1:  # the frame is oldest first, so rows 0 and 1 are the first two annotations
            firsts.append(group["label"].iloc[0])
            seconds.append(group["label"].iloc[1])
            times.append(group["created_at"].iloc[1])
    order = sorted(range(len(times)), key=lambda i: times[i])
    categories = list(labels) + sorted((set(firsts) | set(seconds)) - set(labels))
    rows = []
    for number, start in enumerate(range(0, len(order), window), start=1):
        chunk = order[start : start + window]
        a, b = [firsts[i] for i in chunk], [seconds[i] for i in chunk]
        raw = raw_agreement(a, b)
        kappa = cohen_kappa_square(a, b, categories=categories)
        rows.append(
            {
                "window": number,
                "n_items": raw["n"],
                "start": times[chunk[0]].isoformat(),
                "end": times[chunk[-1]].isoformat(),
                "raw_agreement": raw["agreement"],
                "raw_agreement_sem": raw["sem"],
                "raw_agreement_boot_ci": bootstrap_ci(agreement_vector(a, b)),
                "cohen_kappa": kappa["kappa_square"],
            }
        )
    return rows


def seconds_distribution(*, frame: pd.DataFrame, annotators: list[str]) -> list[dict]:
    """Per annotator: quartiles, 10th/90th percentiles and a histogram of seconds per decision over SECONDS_BINS."""
    edges = np.array([*SECONDS_BINS, np.inf])
    rows = []
    for annotator in annotators:
        values = frame.loc[frame["annotator"] == annotator, "seconds"].to_numpy(dtype=float)
        counts = np.histogram(values, bins=edges)[0] if values.size else np.zeros(len(SECONDS_BINS), dtype=int)
        figures = {}
        for name, q in (("p10", 10), ("q1", 25), ("median", 50), ("q3", 75), ("p90", 90)):
            figures[name] = finite(np.percentile(values, q)) if values.size else None
        rows.append(
            {
                "annotator": annotator,
                "n": int(values.size),
                **figures,
                "max": finite(values.max()) if values.size else None,
                "histogram": [int(c) for c in counts],
            }
        )
    return rows


def quality_warnings(*, rows: list[AnnotatorQualityRow], pool: Pool) -> list[dict]:
    """Plain-language warnings: gold accuracy under the pool's pass mark, or too many fast decisions."""
    warnings = []
    for row in rows:
        if row["gold_accuracy"] is not None and row["gold_accuracy"] < pool.pass_mark:
            warnings.append(
                {
                    "annotator": row["annotator"],
                    "kind": "gold_accuracy",
                    "message": (
                        f"{row['annotator']} answered {row['gold_correct']} of {row['gold_n']} gold items correctly "
                        f"({row['gold_accuracy']:.0%}), under the pass mark of {pool.pass_mark:.0%}."
                    ),
                }
            )
        if row["fast_share"] is not None and row["fast_share"] > FAST_SHARE_WARNING:
            warnings.append(
                {
                    "annotator": row["annotator"],
                    "kind": "fast",
                    "message": (
                        f"{row['annotator']} took under {pool.fast_seconds:g} s on {row['fast_share']:.0%} of their "
                        f"decisions (more than {FAST_SHARE_WARNING:.0%})."
                    ),
                }
            )
    return warnings


def _confusion(reference: pd.Series, rated: pd.Series, *, rows: list[str], columns: list[str]) -> dict:
    table = {row: dict.fromkeys(columns, 0) for row in rows}
    for truth, label in zip(reference, rated, strict=True):
        table[truth][label] += 1
    return table


def confusion_matrices(*, frame: pd.DataFrame, annotators: list[str], labels: list[str]) -> dict:
    """Per rater, `confusion_gold`, `confusion_aggregate` and `confusion_heuristic`, each `{annotator: {reference
    label: {rater's label: count}}}` (every label of the pool listed, zeros included); `aggregate` names the
    aggregate used."""
    study, gold = frame[frame["kind"] == STUDY], frame[frame["kind"] == GOLD]
    seen = set(frame["label"]) | set(gold["gold_label"])
    categories = list(labels) + sorted(seen - set(labels))
    try:
        ratings = study.rename(columns={"item_id": "task", "annotator": "worker"})
        aggregate = ratings_dawid_skene_cached(ratings=ratings).to_dict()
    except AggregationError:
        aggregate = {}
    heuristic = study["heuristic"].map(lambda correct: CORRECT if correct else MISGENDERING)
    result: dict = {"aggregate": "dawid_skene", "confusion_gold": {}, "confusion_aggregate": {}}
    result["confusion_heuristic"] = {}
    for annotator in annotators:
        own_gold = gold[gold["annotator"] == annotator]
        own = study[study["annotator"] == annotator]
        result["confusion_gold"][annotator] = _confusion(
            own_gold["gold_label"], own_gold["label"], rows=categories, columns=categories
        )
        aggregated = own[own["item_id"].isin(aggregate.keys())]
        result["confusion_aggregate"][annotator] = _confusion(
            aggregated["item_id"].map(aggregate), aggregated["label"], rows=categories, columns=categories
        )
        judged = own[own["heuristic"].notna()]  # an item without a heuristic verdict has no reference here
        result["confusion_heuristic"][annotator] = _confusion(
            heuristic[judged.index], judged["label"], rows=HEURISTIC_LABELS, columns=categories
        )
    return result


def study_agreement(*, frame: pd.DataFrame, labels: list[str]) -> dict:
    """Fleiss' kappa and Gwet's AC1 (with its CI) of the pronoun labels over the study items rated twice or more."""
    study = frame[frame["kind"] == STUDY]
    ratings = [group["label"].tolist() for _, group in study.groupby("item_id")]
    return {**gwet_ac1(ratings, categories=labels), **fleiss_kappa(ratings, categories=labels)}


def quality_dashboard(*, pool: Pool) -> dict:
    """Everything the quality dashboard shows, as JSON-ready data (the page polls it)."""
    frame = annotation_frame(pool=pool)
    rows = annotator_quality(pool=pool, frame=frame)
    annotators = [row["annotator"] for row in rows]
    labels = list(pool.labels)
    return {
        "pool": pool.name,
        "pass_mark": pool.pass_mark,
        "fast_seconds": pool.fast_seconds,
        "fast_share_warning": FAST_SHARE_WARNING,
        "window": WINDOW,
        "seconds_bins": SECONDS_BINS,
        "n_annotations": int(len(frame)),
        "annotator_quality": rows,
        "kappa_matrix": kappa_matrix(frame=frame, annotators=annotators, labels=labels),
        "agreement_over_time": agreement_over_time(frame=frame, labels=labels),
        "seconds": seconds_distribution(frame=frame, annotators=annotators),
        "warnings": quality_warnings(rows=rows, pool=pool),
        **study_agreement(frame=frame, labels=labels),
        **confusion_matrices(frame=frame, annotators=annotators, labels=labels),
    }
