"""The reliability plot of LLM judges (docs/domain.md, 'Machine raters'): one panel per judge, the accuracy against
the human label in each confidence bin over the bin's mean confidence, the diagonal (perfect calibration) dashed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.plots.declaration import FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def judge_reliability(report: dict) -> Figure:
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = report.get("judge_reliability") or []
    # The pooled row of each judge (the per model x dataset rows have a model).
    calibration = {row["judge"]: row for row in report.get("judge_calibration") or [] if row.get("model") is None}
    judges = sorted({row["judge"] for row in rows}) or [""]
    plt = _pyplot()
    # The full text width, as every figure: a PNG sharp at column width, whatever the number of judges.
    figure, axes = plt.subplots(1, len(judges), figsize=(WIDTH, 2.8), squeeze=False, sharey=True)
    for ax, judge in zip(axes[0], judges, strict=True):
        ax.plot([0, 1], [0, 1], linestyle="--", color="#777777", linewidth=0.8, label="perfect calibration")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence")
        ax.set_aspect("equal")
        bins = [row for row in rows if row["judge"] == judge and row["n"]]
        if not bins:
            _empty(ax)
            continue
        centres = [(row["low"] + row["high"]) / 2 for row in bins]
        ax.bar(centres, [row["accuracy"] for row in bins], width=0.09, color=PALETTE[0], alpha=0.35, label="accuracy")
        ax.plot([row["confidence"] for row in bins], [row["accuracy"] for row in bins], "o", color=PALETTE[0],
                markersize=3, label="bin mean")  # fmt: skip
        figures = calibration.get(judge, {})
        ece, n = figures.get("ece"), figures.get("n")
        subtitle = f"ECE {ece:.3f}, n = {n}" if isinstance(ece, float) else f"n = {n}"
        ax.set_title(f"{judge}\n{subtitle}")
    axes[0][0].set_ylabel("accuracy vs humans")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="lower center", ncols=3, frameon=False, bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    return figure


FIGURES = (
    FigureDeclaration(
        name="judge_reliability",
        draw=judge_reliability,
        table="judge_reliability",
        title="LLM judges: reliability",
        caption=(
            "One panel per LLM judge: for each tenth of the judge's confidence, the share of its labels that equal the "
            "human label, at the bin's mean confidence; points on the dashed diagonal are perfectly calibrated. A judge "
            "is a model; its agreement with humans is itself a result."
        ),
        also_reads=("judge_calibration",),
    ),
)
