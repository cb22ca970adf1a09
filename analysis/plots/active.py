"""Spending people's labels where they count in figures (docs/domain.md, the section of that name): the interval's
width against the labels spent (people only, with the judge, an active draw: the budget planner's figures), and an
active pool's inclusion probabilities against the judge's probability."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.plots.declaration import VERDICT_SECTION, FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure

METHODS = (
    ("n_people", "people only", "o-"),
    ("n_ppi", "with the judge (PPI)", "s-"),
    ("n_active", "active draw", "^-"),
)


def label_budget_widths(report: dict) -> Figure:
    """One panel line per method and model x dataset x judge: the 95% interval's width (twice the half-width) against
    the contexts people label for it, from the budget planner (an unreachable width is left out)."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = report.get("label_budget") or []
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(WIDTH, 3.0))
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["judge"], row["run"], row["model"], row["dataset"]), []).append(row)
    drawn = False
    for index, (key, members) in enumerate(groups.items()):
        colour = PALETTE[index % len(PALETTE)]
        for field, name, style in METHODS:
            points = sorted((row[field], 2 * row["half_width"]) for row in members if isinstance(row[field], int))
            if not points:
                continue
            drawn = True
            ax.plot([x for x, _ in points], [y for _, y in points], style, color=colour, markersize=4,
                    label=f"{name}: {key[2]}, {key[3]} ({key[0]})")  # fmt: skip
    if not drawn:
        _empty(ax, "No labelled pilot of a judged job yet.")
        figure.tight_layout()
        return figure
    ax.set_xscale("log")
    ax.set_xlabel("contexts people label (log scale)")
    ax.set_ylabel("width of the 95% interval")
    ax.set_ylim(bottom=0)
    handles, labels = ax.get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncols=min(len(handles), 3), frameon=False,
                  bbox_to_anchor=(0.5, -0.01), fontsize=7)  # fmt: skip
    figure.tight_layout(rect=(0, 0.08 + 0.04 * (len(handles) // 3), 1, 1))
    return figure


def active_inclusion(report: dict) -> Figure:
    """Each drawn context of an active pool: its inclusion probability against the judge's probability Yhat."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = report.get("active_inclusion") or []
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(WIDTH, 2.8))
    if not rows:
        _empty(ax, "The pool is not an active draw.")
        figure.tight_layout()
        return figure
    pronouns = sorted({row["pronoun"] for row in rows})
    for index, pronoun in enumerate(pronouns):
        mine = [row for row in rows if row["pronoun"] == pronoun]
        ax.plot([row["yhat"] for row in mine], [row["inclusion_probability"] for row in mine], "o",
                color=PALETTE[index % len(PALETTE)], markersize=3, alpha=0.7, label=pronoun or "unstated")  # fmt: skip
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(0, 1.03)
    ax.set_xlabel("the judge's probability of misgendering (Yhat)")
    ax.set_ylabel("inclusion probability pi")
    figure.legend(loc="lower center", ncols=min(len(pronouns), 4), frameon=False, bbox_to_anchor=(0.5, -0.01))
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return figure


FIGURES = (
    FigureDeclaration(
        name="label_budget_widths",
        draw=label_budget_widths,
        table="label_budget",
        title="Label budget: interval width against labels spent",
        caption=(
            "The width of the 95% interval of a model's misgendering rate against the contexts people label, from the "
            "budget planner with this pool as the pilot: people alone, people with the judge (prediction-powered) and "
            "an active draw of the contexts the judge is unsure about. Planned, not measured: they assume the pilot "
            "stands for the job."
        ),
        section=VERDICT_SECTION,
    ),
    FigureDeclaration(
        name="active_inclusion",
        draw=active_inclusion,
        table="active_inclusion",
        title="Active pool: inclusion probability against the judge's probability",
        caption=(
            "Each context of the active draw: the probability the draw gave it, min(1, c sqrt(Yhat (1 - Yhat))) with "
            "the uncertainty floored at 0.05, against the judge's probability of misgendering. Contexts the judge is "
            "unsure about (Yhat near 0.5) are drawn most often; the estimate weighs each label by 1 / pi."
        ),
        section=VERDICT_SECTION,
    ),
)
