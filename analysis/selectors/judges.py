"""LLM judges in the report (docs/domain.md, 'Machine raters'): each judge's newest finished run over the pool,
compared with the humans and the heuristic as the heuristic is compared with the humans, and its calibration.

A judge's binary verdict is the human binary of its label (0 iff misgendering). Only study items count; an item whose
sampled answers named no option (a blank label) is left out. Rows are split by human agreement on the pronoun label:
`unanimous` (two or more annotations, all equal), `split` (two or more, not all equal) and `all` (every judged item;
for human_vs_judge, every annotated one). Human inter-annotator figures never see a judge: they read annotations only.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from analysis.cells import CELL
from analysis.metrics import mean_sem
from analysis.metrics.agreement import finite
from analysis.report.machine_types import JudgeAgreementRow, JudgeCalibrationRow, JudgeReliabilityRow
from annotation.labelset import positive_label
from annotation.models import STUDY, Pool, PoolItem
from annotation.schema import MISGENDERING, human_binary
from common.frames import pd
from judging.models import JudgeMode, JudgeRun
from judging.scoring import option_probabilities
from judging.selectors import covering_runs, pool_judge_labels

AGREEMENT_SPLITS = ("all", "unanimous", "split")
ECE_BINS = 10
NOTE = "A judge is a model; its agreement with humans is itself a result."


def judge_frame(*, pool: Pool, human: pd.DataFrame, runs: list[JudgeRun] | None = None) -> pd.DataFrame:
    """One row per judge x labelled study item: the cell, the heuristic, the judge's label, confidence and option
    scores, and (where annotated) the human label, binary and agreement split. `runs`: the runs that cover the pool
    (`judging.selectors.covering_runs`), read here unless the caller has them."""
    columns = [*CELL, "id", "judge", "origin", "judge_label", "confidence", "option_probabilities", "heuristic"]
    rows = []
    runs = covering_runs(pool=pool) if runs is None else runs
    items: dict[int, tuple] = {}
    if runs:  # without a judge's run there is nothing to label, and no item to read
        cells = PoolItem.objects.filter(pool=pool, kind=STUDY).values_list("id", *_ITEM_CELL, "heuristic_correct")
        items = {row[0]: row[1:] for row in cells}
    # Each judge's labels from its runs that cover the pool: its runs over the pool and over the pool's jobs; items in
    # pool order (docs/domain.md, 'Multi-rater statistics': the bootstrap resamples items in it).
    for labels in pool_judge_labels(pool=pool, item_ids=list(items), runs=runs).values():
        for item_id in sorted(labels):
            row = labels[item_id]
            if not row.label:
                continue
            run, cell = row.run, items[item_id]
            rows.append(
                (*cell[:4], item_id, run.judge.name, run.judge.origin, row.label, row.confidence,
                 _probabilities(run, row.scores), None if cell[4] is None else int(cell[4]))
            )  # fmt: skip
    frame = pd.DataFrame.from_records(rows, columns=columns)
    positive = positive_label(pool) or MISGENDERING
    binary = frame["judge_label"].map(lambda label: human_binary(label, positive))
    frame["judge_binary"] = binary.astype(int) if not frame.empty else []
    keep = ["id", "human_label", "human_binary", "labels"]
    joined = frame.merge(human[keep] if not human.empty else pd.DataFrame(columns=keep), on="id", how="left")
    joined["human_agreement"] = joined["labels"].map(_agreement)
    return joined


_ITEM_CELL = ["model_name", "dataset", "setting", "pronoun"]


def _probabilities(run: JudgeRun, scores: dict) -> dict[str, float] | None:
    """Each option's probability; None for an imported label that came without probabilities."""
    if run.mode == JudgeMode.IMPORTED and not scores:
        return None
    return option_probabilities(run.mode, run.judge.option_map, scores)


def _agreement(labels) -> str | None:
    if not isinstance(labels, list) or len(labels) < 2:
        return None
    return "unanimous" if len(set(labels)) == 1 else "split"


def _agreement_rows(frame: pd.DataFrame, left: str, right: str) -> list[dict]:
    """Raw agreement of two 0/1 columns with its SEM, per judge x split x cell."""
    rows = []
    for split in AGREEMENT_SPLITS:
        part = frame if split == "all" else frame[frame["human_agreement"] == split]
        if part.empty:
            continue
        agree = (part[left].astype(int) == part[right].astype(int)).astype(float)
        for (judge, *cell), values in agree.groupby([part["judge"], *(part[key] for key in CELL)], sort=True):
            figures = mean_sem(values.to_numpy())
            rows.append(
                {
                    "judge": judge,
                    "origin": f"judge:{judge}",
                    **dict(zip(CELL, cell, strict=True)),
                    "human_agreement": split,
                    "agreement": figures["mean"],
                    "sem": figures["sem"],
                    "n": int(values.size),
                }
            )
    return rows


def human_vs_judge(*, frame: pd.DataFrame) -> list[JudgeAgreementRow]:
    """Raw agreement of the human binary with the judge's binary, per judge x cell x human agreement."""
    if frame.empty:
        return []
    annotated = frame[frame["human_binary"].notna()]
    return cast(list[JudgeAgreementRow], _agreement_rows(annotated, "human_binary", "judge_binary"))


def judge_vs_heuristic(*, frame: pd.DataFrame) -> list[JudgeAgreementRow]:
    """Raw agreement of the judge's binary with the heuristic, per judge x cell x human agreement (`all`: every
    judged study item, annotated or not; an item without a heuristic verdict leaves it)."""
    frame = frame[frame["heuristic"].notna()] if not frame.empty else frame
    if frame.empty:
        return []
    return cast(list[JudgeAgreementRow], _agreement_rows(frame, "judge_binary", "heuristic"))


def calibration(confidence: np.ndarray, correct: np.ndarray, *, bins: int = ECE_BINS) -> dict:
    """Expected calibration error over `bins` equal-width bins of confidence ([0, 0.1), ..., [0.9, 1.0]), the Brier
    score of the confidence against correctness, and each bin's n, mean confidence and accuracy."""
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=float)
    n = confidence.size
    if n == 0:
        return {"n": 0, "ece": None, "brier": None, "bins": []}
    index = np.minimum((confidence * bins).astype(int), bins - 1)
    ece = 0.0
    table = []
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        mean_confidence: float | None = None
        accuracy: float | None = None
        if count:
            mean_confidence, accuracy = float(confidence[members].mean()), float(correct[members].mean())
            ece += count / n * abs(accuracy - mean_confidence)
        table.append(
            {"low": b / bins, "high": (b + 1) / bins, "n": count, "confidence": mean_confidence, "accuracy": accuracy}
        )
    return {
        "n": int(n),
        "ece": finite(ece),
        "brier": finite(float(np.mean((confidence - correct) ** 2))),
        "bins": table,
    }


# A model x dataset gets a calibration row of its own from this many judged, annotated items (docs/domain.md,
# 'Machine raters'); ECE over 10 bins says little below it.
CALIBRATION_MIN_ITEMS = 30


def _calibration_row(part: pd.DataFrame) -> dict:
    correct = (part["judge_label"] == part["human_label"]).to_numpy(dtype=float)
    figures = calibration(part["confidence"].to_numpy(dtype=float), correct)
    multiclass = [
        sum((p - (1.0 if label == human else 0.0)) ** 2 for label, p in probabilities.items())
        for probabilities, human in zip(part["option_probabilities"], part["human_label"], strict=True)
        if probabilities is not None
    ]
    return {
        "n": figures["n"],
        "accuracy": finite(float(correct.mean())),
        "ece": figures["ece"],
        "brier": figures["brier"],
        # Only where every label has its probabilities (an imported judge may give a confidence alone).
        "brier_multiclass": finite(float(np.mean(multiclass))) if len(multiclass) == len(part) else None,
    }


# What the calibration tables read of the judges' frame: grouping a frame of these alone, rather than of every column,
# costs a tenth (each group is a copy of its rows).
CALIBRATION_COLUMNS = [
    "judge", "origin", "model", "dataset", "judge_label", "human_label", "confidence", "option_probabilities",
]  # fmt: skip


def _confident(frame: pd.DataFrame) -> pd.DataFrame:
    """The annotated rows with a confidence (an imported judge may have given none: it gets no calibration), in the
    columns the calibration reads."""
    kept = frame[frame["human_label"].notna() & frame["confidence"].notna()]
    return kept[[column for column in CALIBRATION_COLUMNS if column in kept.columns]]


def judge_calibration(*, frame: pd.DataFrame) -> list[JudgeCalibrationRow]:
    """Per judge, against the human label of each annotated study item (adjudicated, else the majority): accuracy,
    ECE over 10 bins, the Brier score of the label's confidence, the multi-class Brier score over the options
    (probabilities: softmax of the scores, or vote shares) and n. First the judge's pooled row (`model` and `dataset`
    None), then one per model x dataset with at least CALIBRATION_MIN_ITEMS items."""
    if frame.empty:
        return []
    annotated = _confident(frame)
    rows = []
    for judge, part in annotated.groupby("judge", sort=True):
        origin = part["origin"].iloc[0]
        rows.append({"judge": judge, "origin": origin, "model": None, "dataset": None, **_calibration_row(part)})
        for (model, dataset), group in part.groupby(["model", "dataset"], sort=True):
            if len(group) >= CALIBRATION_MIN_ITEMS:
                rows.append(
                    {"judge": judge, "origin": origin, "model": model, "dataset": dataset, **_calibration_row(group)}
                )
    return cast(list[JudgeCalibrationRow], rows)


def judge_reliability(*, frame: pd.DataFrame) -> list[JudgeReliabilityRow]:
    """The reliability table of each judge (its plot's data): per confidence bin, n, mean confidence and accuracy
    against the human label; empty bins are listed with n = 0."""
    if frame.empty:
        return []
    annotated = _confident(frame)
    rows = []
    for judge, part in annotated.groupby("judge", sort=True):
        correct = (part["judge_label"] == part["human_label"]).to_numpy(dtype=float)
        for row in calibration(part["confidence"].to_numpy(dtype=float), correct)["bins"]:
            rows.append({"judge": judge, **row})
    return cast(list[JudgeReliabilityRow], rows)


# A judge on a model this small labels by the surface of the prompt, not by reading it: the demo's default model
# (SmolLM2-135M) is there to show the machinery, and the judge section says so beside its verdicts.


TOY_PARAMETERS_BELOW = 1_000_000_000
TOY_MODELS = {"smollm2-135m": 135_000_000}


def judge_label_counts(*, pool: Pool) -> list[dict]:
    """What each judge of the pool (its runs over the pool and over the pool's jobs) said over the pool's study items: `origin`, `model`,
    `n`, `verdicts` ({label: count}, every label of the pool listed), `one_label` (the label it gave every item, else
    None) and `toy` (its model is a small one, TOY_MODELS, whose labels are not evidence). For the report page."""
    rows = []
    study = set(PoolItem.objects.filter(pool=pool, kind=STUDY).values_list("id", flat=True))
    for labels in pool_judge_labels(pool=pool, item_ids=sorted(study)).values():
        given_rows = [row for item_id, row in labels.items() if item_id in study and row.label]
        if not given_rows:
            continue
        run = given_rows[-1].run
        verdicts = dict.fromkeys(pool.labels, 0)
        for row in given_rows:
            verdicts[row.label] = verdicts.get(row.label, 0) + 1
        n = sum(verdicts.values())
        given = [label for label, count in verdicts.items() if count]
        model = run.judge.model.name
        rows.append(
            {
                "origin": run.judge.origin,
                "model": model,
                "n": n,
                "verdicts": verdicts,
                "one_label": given[0] if n > 1 and len(given) == 1 else None,
                "toy": TOY_MODELS.get(model, TOY_PARAMETERS_BELOW) < TOY_PARAMETERS_BELOW,
            }
        )
    return rows
