"""RUFF's figure with human labels (docs/domain.md, 'RUFF with distractors'): accuracy against the number of
distractor sentences, one line each for the human verdict, the probability format and the heuristic (dashed: not
valid with distractors), with standard-error bars; one panel per model x setting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from analysis.plots.declaration import FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LINES: tuple[tuple[str, str, Literal["-", "--"]], ...] = (
    ("human_accuracy", "human", "-"),
    ("probability_accuracy", "probability", "-"),
    ("heuristic_accuracy", "heuristic (not valid with distractors)", "--"),
)


def distractor_accuracy(report: dict) -> Figure:
    from analysis.plots.layout import PALETTE, _empty, _pyplot

    rows = report.get("distractors") or []
    panels = sorted({(row["model"], row["setting"]) for row in rows}) or [("", "")]
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(7.0, 2.8), squeeze=False, sharey=True)
    for ax, (model, setting) in zip(axes[0], panels, strict=True):
        cell = sorted(
            (r for r in rows if (r["model"], r["setting"]) == (model, setting)), key=lambda r: r["distractors"]
        )
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("distractor sentences")
        ax.set_title(f"{model} · {setting}" if model else "")
        if not cell:
            _empty(ax)
            continue
        for colour, (key, label, style) in zip(PALETTE, LINES, strict=False):
            points = [r for r in cell if r[key] is not None]
            ax.errorbar(
                [r["distractors"] for r in points],
                [r[key] for r in points],
                yerr=[r[f"{key}_sem"] or 0 for r in points],
                label=label,
                color=colour,
                linestyle=style,
                marker="o",
                markersize=3,
                capsize=2,
            )
        ax.set_xticks(sorted({r["distractors"] for r in cell}))
    axes[0][0].set_ylabel("accuracy")
    from matplotlib.lines import Line2D

    # One legend for the figure, below the panels, whether or not a panel has data.
    handles = [
        Line2D([], [], color=colour, linestyle=style, marker="o", markersize=3)
        for colour, (_, _, style) in zip(PALETTE, LINES, strict=False)
    ]
    figure.legend(handles, [label for _, label, _ in LINES], loc="lower center", ncols=3, frameon=False,
                  bbox_to_anchor=(0.5, -0.02))  # fmt: skip
    figure.tight_layout(rect=(0, 0.1, 1, 1))
    return figure


FIGURES = (
    FigureDeclaration(
        name="distractor_accuracy",
        draw=distractor_accuracy,
        table="distractors",
        title="Accuracy against distractors",
        caption=(
            "Accuracy against the number of distractor sentences about a second person (RUFF's figure, with human "
            "labels): the human verdict, the probability format, and the first-pronoun heuristic, dashed because it is "
            "not valid with distractors (the first pronoun may be the other person's); standard-error bars."
        ),
    ),
)
