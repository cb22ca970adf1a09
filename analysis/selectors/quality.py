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

from collections.abc import Iterable, Sequence

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import CharField
from django.db.models.functions import Cast

from analysis.metrics import raw_agreement
from analysis.metrics.agreement import ZERO_WIDTH, agreement_vector, bootstrap_ci, cohen_kappa_square, finite
from analysis.metrics.multirater import fleiss_kappa_of_table, gwet_ac1_of_table
from analysis.report.types import AnnotatorQualityRow
from annotation.models import GOLD, STUDY, Annotation, Assignment, Pool, PoolItem
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
    # The annotations' own fields only, their items' and annotators' read once each and taken by position: a crowd
    # study's 240,000 rows with the joined fields beside each took most of the page's time.
    items = PoolItem.objects.filter(pool=pool, kind__in=[STUDY, GOLD])
    rows = (
        Annotation.objects.filter(item__in=items)
        .order_by("created_at", "id")
        .values_list("item_id", "annotator_id", "label", "seconds", Cast("created_at", CharField()))
    )
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:  # the driver's tuples as they come: Django's row iterator doubled the time
        cursor.execute(sql, params)
        item_id, annotator_id, label, seconds, created_at = _columns(cursor.fetchall(), 5)
    item_keys, kinds, gold_labels, verdicts = _columns(
        items.values_list("pk", "kind", "gold_label", "heuristic_correct"), 4
    )
    people = dict(get_user_model().objects.filter(pk__in=set(annotator_id)).values_list("pk", "username"))
    at_item = pd.Index(item_keys).get_indexer(item_id)
    person_keys = list(people)
    at_person = pd.Index(person_keys).get_indexer(annotator_id)
    frame = pd.DataFrame(
        {
            "item_id": np.array(item_id, dtype=np.int64),
            "kind": pd.Series(kinds, dtype="str").take(at_item).to_numpy(),
            "gold_label": pd.Series(gold_labels, dtype="str").take(at_item).to_numpy(),
            "annotator": pd.Series([people[key] for key in person_keys], dtype="str").take(at_person).to_numpy(),
            "label": pd.Series(label, dtype="str").to_numpy(),
            "seconds": np.array(seconds, dtype=float),
            "created_at": pd.to_datetime(pd.Series(created_at, dtype="str"), utc=True, format="ISO8601"),
            "heuristic": np.array(verdicts, dtype=object)[at_item],
        },
        columns=ANNOTATION_COLUMNS,
    )
    return frame


def _columns(rows: Iterable[Sequence], width: int) -> list[list]:
    """The rows' values as `width` columns (empty ones where there are no rows)."""
    rows = list(rows)
    return [[row[k] for row in rows] for k in range(width)]  # zip(*rows) of 240,000 rows took 0.7 s


def _annotators(*, pool: Pool, frame: pd.DataFrame) -> list[str]:
    assigned = set(Assignment.objects.filter(pool=pool).values_list("annotator__username", flat=True).distinct())
    return sorted(assigned | set(frame["annotator"].unique()))


def _shared_pairs(study: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """For each annotator, (agreeing, compared) over the (shared study item, other annotator) pairs: on an item with
    n ratings, each rater is compared with the n - 1 others and agrees with those who gave the same label. Counted
    per item rather than pair by pair (a crowd study's 600 raters of an item are 179,700 pairs), in columns rather
    than row by row (its 240,000 rows took seconds)."""
    if study.empty:
        return {}
    # On the rows' codes (one count per item, one per item and label, one sum per rater): pandas' groupings cost a
    # millisecond each on a report's few rows.
    items = pd.factorize(study["item_id"].to_numpy())[0]
    labels, label_names = pd.factorize(study["label"].to_numpy())
    raters, rater_names = pd.factorize(study["annotator"].to_numpy())
    item_label = items * len(label_names) + labels
    given = np.bincount(items)[items]
    same = np.bincount(item_label)[item_label]
    shared = given >= 2
    sharing = np.bincount(raters[shared], minlength=len(rater_names))
    agreed = np.bincount(raters[shared], weights=same[shared] - 1, minlength=len(rater_names))
    compared = np.bincount(raters[shared], weights=given[shared] - 1, minlength=len(rater_names))
    return {str(name): (int(agreed[k]), int(compared[k])) for k, name in enumerate(rater_names) if sharing[k]}


def annotator_quality(*, pool: Pool, frame: pd.DataFrame | None = None) -> list[AnnotatorQualityRow]:
    """One row per annotator with work in the pool: `items` (study items annotated), `gold_n`, `gold_correct`,
    `gold_accuracy`, `median_seconds`, `fast_share` (decisions under `Pool.fast_seconds`), `agreement` with the other
    raters on shared study items and `agreement_n`, the number of such comparisons. Undefined figures are None."""
    frame = annotation_frame(pool=pool) if frame is None else frame
    pairs = _shared_pairs(frame[frame["kind"] == STUDY])
    # Counted over the annotators' codes in columns: a crowd study's 240,000 rows, row by row, took a second.
    codes, names = pd.factorize(frame["annotator"])
    kind = frame["kind"].to_numpy(dtype=object)
    gold = kind == GOLD
    right = gold & (frame["label"].to_numpy(dtype=object) == frame["gold_label"].to_numpy(dtype=object))

    def per_annotator(rows: np.ndarray) -> dict[str, int]:
        return dict(zip(names, np.bincount(codes[rows], minlength=len(names)).tolist(), strict=True))

    items, gold_n, gold_correct = per_annotator(kind == STUDY), per_annotator(gold), per_annotator(right)
    by_annotator = _rows_by_annotator(frame)
    all_seconds = frame["seconds"].to_numpy(dtype=float)
    rows: list[AnnotatorQualityRow] = []
    for annotator in _annotators(pool=pool, frame=frame):
        n_gold, n_right = gold_n.get(annotator, 0), gold_correct.get(annotator, 0)
        seconds = all_seconds[by_annotator.get(annotator, _NONE)]
        agreed, compared = pairs.get(annotator, (0, 0))
        rows.append(
            {
                "annotator": annotator,
                "items": items.get(annotator, 0),
                "gold_n": n_gold,
                "gold_correct": n_right,
                "gold_accuracy": n_right / n_gold if n_gold else None,
                "median_seconds": finite(np.median(seconds)) if seconds.size else None,
                "fast_share": float((seconds < pool.fast_seconds).mean()) if seconds.size else None,
                "agreement": agreed / compared if compared else None,
                "agreement_n": compared,
            }
        )
    return rows


def kappa_matrix(*, frame: pd.DataFrame, annotators: list[str], labels: list[str]) -> dict:
    """Cohen's kappa of the labels for every pair of annotators on the study items they share (null where they share
    none or kappa is undefined); `n` holds the shared item counts, each annotator's own item count on the diagonal.

    Every pair's square table at once (docs/domain.md, 'Multi-rater statistics': kappa on the table over the label
    set), as products of the raters' one-hot label matrices: a crowd pool's 600 raters are 179,700 tables, which one
    call of `cohen_kappa_square` each (its interval included, not shown here) would take an hour to fill."""
    study = frame[frame["kind"] == STUDY]
    categories = list(labels) + sorted(set(study["label"].unique()) - set(labels))
    size = len(annotators)
    kappa: list[list[float | None]] = [[None] * size for _ in range(size)]
    shared = [[0] * size for _ in range(size)]
    own = study["annotator"].value_counts()
    for i, a in enumerate(annotators):
        shared[i][i] = int(own.get(a, 0))
    position = {name: index for index, name in enumerate(annotators)}
    rated = study[study["annotator"].isin(position)]
    if rated.empty or size < 2:
        return {"annotators": annotators, "kappa": kappa, "n": shared}
    items, item_index = np.unique(rated["item_id"].to_numpy(), return_inverse=True)
    label_index = pd.Index(categories).get_indexer(rated["label"])
    rater_index = rated["annotator"].map(position).to_numpy()
    onehot = np.zeros((len(categories), size, len(items)))
    onehot[label_index, rater_index, item_index] = 1.0
    # tables[k, l, a, b]: items a labelled k and b labelled l
    tables = np.einsum("kai,lbi->klab", onehot, onehot, optimize=True)
    n = tables.sum(axis=(0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.trace(tables) / n
        chance = (tables.sum(axis=1) * tables.sum(axis=0)).sum(axis=0) / n**2
        values = (observed - chance) / (1 - chance)
    undefined = (n == 0) | (np.abs(1 - chance) < ZERO_WIDTH) | ~np.isfinite(values)
    values[np.abs(values) < ZERO_WIDTH] = 0.0  # p_o = p_e exactly; the rounding of p_e leaves +-1e-16
    np.fill_diagonal(undefined, True)
    # Read out as lists, row by row: 179,700 pairs one cell at a time took a second.
    kappa = [
        [None if off else value for value, off in zip(row, gaps, strict=True)]
        for row, gaps in zip(values.tolist(), undefined.tolist(), strict=True)
    ]
    shared = n.astype(np.int64).tolist()
    for i, a in enumerate(annotators):
        shared[i][i] = int(own.get(a, 0))
    return {"annotators": annotators, "kappa": kappa, "n": shared}


def agreement_over_time(*, frame: pd.DataFrame, labels: list[str], window: int = WINDOW) -> list[dict]:
    """Overlap study items in the order their second annotation was made, cut into windows of `window` items (the
    last may be shorter): per window, raw agreement (SEM, bootstrap interval) and Cohen's kappa on the square table of
    the first two labels, and its time span."""
    study = frame[frame["kind"] == STUDY]
    # The frame is oldest first, so each item's rows 0 and 1 are its first two annotations; items in id order.
    overlap = study[study.groupby("item_id")["item_id"].transform("size") > 1]
    rank = overlap.groupby("item_id").cumcount()
    first = overlap[rank == 0].sort_values("item_id", kind="stable")
    second = overlap[rank == 1].sort_values("item_id", kind="stable")
    firsts, seconds = first["label"].tolist(), second["label"].tolist()
    times = second["created_at"].tolist()
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
    by_annotator = _rows_by_annotator(frame)
    seconds = frame["seconds"].to_numpy(dtype=float)
    rows = []
    for annotator in annotators:
        values = seconds[by_annotator.get(annotator, _NONE)]
        counts = np.histogram(values, bins=edges)[0] if values.size else np.zeros(len(SECONDS_BINS), dtype=int)
        quantiles = np.percentile(values, PERCENTILES).tolist() if values.size else [None] * len(PERCENTILES)
        figures = {name: finite(value) for name, value in zip(PERCENTILE_NAMES, quantiles, strict=True)}
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


_NONE = np.array([], dtype=int)
PERCENTILE_NAMES = ("p10", "q1", "median", "q3", "p90")
PERCENTILES = (10, 25, 50, 75, 90)


def _rows_by_annotator(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each annotator's row positions in the frame, in its order: one grouping for all of them (a filter per
    annotator reads the whole frame each time: 600 raters of a crowd study, 600 passes)."""
    if frame.empty:
        return {}
    codes, names = pd.factorize(frame["annotator"])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return {name: order[bounds[k] : bounds[k + 1]] for k, name in enumerate(names)}


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


def _confusions(
    annotator: pd.Series,
    reference: pd.Series,
    rated: pd.Series,
    *,
    annotators: list[str],
    rows: list[str],
    columns: list[str],
) -> dict:
    """Per annotator, `{reference label: {rater's label: count}}` over the rows where the reference is known: one
    count over all raters (a crowd study has 600)."""
    known = reference.notna().to_numpy()
    # Counted as codes: a pandas string column yields its values one __getitem__ at a time (seconds on 240,000).
    who = pd.Index(annotators).get_indexer(annotator[known])
    truth = pd.Index(rows).get_indexer(reference[known])
    given = pd.Index(columns).get_indexer(rated[known])
    counted = (who >= 0) & (truth >= 0) & (given >= 0)
    cells = (who[counted] * len(rows) + truth[counted]) * len(columns) + given[counted]
    shape = (len(annotators), len(rows), len(columns))
    counts = np.bincount(cells, minlength=int(np.prod(shape))).reshape(shape).tolist()
    return {
        name: {row: dict(zip(columns, counts[a][r], strict=True)) for r, row in enumerate(rows)}
        for a, name in enumerate(annotators)
    }


def confusion_matrices(*, frame: pd.DataFrame, annotators: list[str], labels: list[str]) -> dict:
    """Per rater, `confusion_gold`, `confusion_aggregate` and `confusion_heuristic`, each `{annotator: {reference
    label: {rater's label: count}}}` (every label of the pool listed, zeros included); `aggregate` names the
    aggregate used."""
    study, gold = frame[frame["kind"] == STUDY], frame[frame["kind"] == GOLD]
    seen = set(frame["label"].unique()) | set(gold["gold_label"].unique())
    categories = list(labels) + sorted(seen - set(labels))
    try:
        ratings = study.rename(columns={"item_id": "task", "annotator": "worker"})
        aggregate = ratings_dawid_skene_cached(ratings=ratings).to_dict()
    except AggregationError:
        aggregate = {}
    # An item without a heuristic verdict has no reference there.
    verdicts = study["heuristic"].to_numpy(dtype=object)
    named = np.where(np.equal(verdicts, True), CORRECT, MISGENDERING).astype(object)
    named[pd.isna(verdicts)] = None
    heuristic = pd.Series(named, index=study.index, dtype=object)
    return {
        "aggregate": "dawid_skene",
        "confusion_gold": _confusions(
            gold["annotator"], gold["gold_label"], gold["label"], annotators=annotators, rows=categories,
            columns=categories,
        ),
        "confusion_aggregate": _confusions(
            study["annotator"], study["item_id"].map(aggregate), study["label"], annotators=annotators,
            rows=categories, columns=categories,
        ),
        "confusion_heuristic": _confusions(
            study["annotator"], heuristic, study["label"], annotators=annotators, rows=HEURISTIC_LABELS,
            columns=categories,
        ),
    }  # fmt: skip


def study_agreement(*, frame: pd.DataFrame, labels: list[str]) -> dict:
    """Fleiss' kappa and Gwet's AC1 (with its CI) of the pronoun labels over the study items rated twice or more."""
    study = frame[frame["kind"] == STUDY]
    given = study.groupby("item_id")["item_id"].transform("size")
    rated = study[given >= 2]
    # The items x categories count table at once, items in id order (a crowd study's 400 items of 600 ratings, as
    # lists per item, took most of a second): the table `fleiss_kappa` and `gwet_ac1` count from those lists.
    seen = set(rated["label"].unique())
    categories = list(labels) + sorted(seen - set(labels), key=str)
    items, item_index = np.unique(rated["item_id"].to_numpy(), return_inverse=True)
    label_index = pd.Index(categories).get_indexer(rated["label"])
    cells = item_index.astype(np.int64) * len(categories) + label_index
    table = np.bincount(cells, minlength=len(items) * len(categories)).reshape(len(items), len(categories))
    table = table.astype(float)
    return {**gwet_ac1_of_table(table, len(categories)), **fleiss_kappa_of_table(table)}


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
