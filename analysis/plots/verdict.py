"""The judge's verdict in figures (docs/domain.md, 'The judge's verdict'): the Alt-Test's winning rate against epsilon,
the risk-coverage curve of selective judging, and a forest plot of the misgendering rates (people only,
prediction-powered, judge only), drawn like the judges' reliability plot (analysis/plots/judges.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.plots.declaration import VERDICT_SECTION, FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _run_name(row: dict) -> str:
    return f"{row['judge']} (run {row['run']})"


def judge_omega(report: dict) -> Figure:
    """One line per judge run: omega at each epsilon from 0 to 0.30; dashed, the pass mark 0.5; the report's epsilon
    marked."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = report.get("judge_verdict") or []
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(WIDTH, 2.8))
    drawn = False
    for index, row in enumerate(rows):
        points = [
            (float(key), value) for key, value in row["alt_test"]["omega_by_epsilon"].items() if value is not None
        ]
        if not points:
            continue
        drawn = True
        colour = PALETTE[index % len(PALETTE)]
        ax.plot([x for x, _ in points], [y for _, y in points], "o-", color=colour, markersize=3, label=_run_name(row))
    if not drawn:
        _empty(ax, "The test has not run: fewer than 2 annotators with 30 items.")
    else:
        ax.axhline(0.5, linestyle="--", color="#777777", linewidth=0.8, label="pass mark (omega 0.5)")
        ax.axvline(rows[0]["epsilon"], linestyle=":", color="#333333", linewidth=0.8, label="the report's epsilon")
        ax.set_xlim(-0.01, 0.31)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("omega (winning rate)")
        _legend_below(figure, ax)
    figure.tight_layout(rect=(0, 0.12, 1, 1) if drawn else (0, 0, 1, 1))
    return figure


def _legend_below(figure, ax) -> None:
    """One legend for the figure, below the panel (as every report figure has)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="lower center", ncols=min(len(handles), 4), frameon=False,
                      bbox_to_anchor=(0.5, -0.01))  # fmt: skip


def judge_risk_coverage(report: dict) -> Figure:
    """One curve per judge run: the disagreement with people among the items kept against the share kept, from the
    highest threshold down; dashed, alpha; a dot where the threshold is."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = [row for row in report.get("judge_verdict") or [] if row["selective"]["curve"]]
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(WIDTH, 2.8))
    if not rows:
        _empty(ax, "No annotated item is judged yet.")
        figure.tight_layout()
        return figure
    for index, row in enumerate(rows):
        colour = PALETTE[index % len(PALETTE)]
        selective = row["selective"]
        curve = selective["curve"]
        ax.step([point[0] for point in curve], [point[1] for point in curve], where="post", color=colour,
                label=_run_name(row))  # fmt: skip
        if selective["threshold"] is not None:
            kept = selective["coverage"]
            risk = 1 - selective["agreement_above"] if selective["agreement_above"] is not None else None
            if risk is not None:
                ax.plot([kept], [risk], "o", color=colour, markersize=4)
    ax.axhline(rows[0]["selective"]["alpha"], linestyle="--", color="#777777", linewidth=0.8, label="alpha")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1)
    ax.set_xlabel("coverage (share of items the judge keeps)")
    ax.set_ylabel("disagreement with people")
    _legend_below(figure, ax)
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return figure


ESTIMATES = (
    ("human", "people only"),
    ("ppi", "prediction-powered"),
    ("judge", "judge only (biased)"),
)


def judge_rates(report: dict) -> Figure:
    """A forest plot: one line per judge run x model x dataset x pronoun, the misgendering rate of people only and
    prediction-powered with their 95% intervals, and of the judge only (a point: it has no honest interval)."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = report.get("prediction_powered") or []
    plt = _pyplot()
    height = max(2.4, 0.32 * len(rows) + 1.0)
    figure, ax = plt.subplots(figsize=(WIDTH, height))
    if not rows:
        _empty(ax, "No judge run over the pool's generation job yet.")
        figure.tight_layout()
        return figure
    labels = []
    for position, row in enumerate(rows):
        y = len(rows) - 1 - position
        labels.append(f"{row['model']}, {row['dataset']}, {row['pronoun']} ({row['judge']})")
        for offset, (key, name) in zip((0.2, 0.0, -0.2), ESTIMATES, strict=True):
            colour = PALETTE[ESTIMATES.index((key, name))]
            value = row.get(f"{key}_rate")
            if value is None:
                continue
            interval = row.get(f"{key}_ci") if key != "judge" else None
            if interval:
                ax.plot(interval, [y + offset, y + offset], color=colour, linewidth=1.2)
            ax.plot([value], [y + offset], "o" if key != "judge" else "x", color=colour, markersize=4,
                    label=name if position == 0 else "_")  # fmt: skip
    ax.set_yticks(range(len(rows)), list(reversed(labels)))
    ax.set_xlabel("misgendering rate (unit: a context; 95% intervals)")
    ax.set_xlim(left=0)
    figure.legend(loc="lower center", ncols=3, frameon=False, bbox_to_anchor=(0.5, -0.01))
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    return figure


FIGURES = (
    FigureDeclaration(
        name="judge_omega",
        draw=judge_omega,
        table="judge_verdict",
        title="The judge's verdict: winning rate against epsilon",
        caption=(
            "The Alternative Annotator Test's winning rate omega (the share of annotators the judge is shown to be at "
            "least as good as, less epsilon) at each epsilon; the judge passes at 0.5 or more (dashed). A judge is a "
            "model: its verdict holds for this pool, these annotators and this epsilon."
        ),
        section=VERDICT_SECTION,
    ),
    FigureDeclaration(
        name="judge_risk_coverage",
        draw=judge_risk_coverage,
        table="judge_verdict",
        title="The judge's verdict: risk against coverage",
        caption=(
            "Selective judging: the judge's disagreement with the human label among the items it keeps (confidence at or "
            "above a threshold) against the share it keeps, from the highest threshold down; the dot is the threshold "
            "that keeps the disagreement at most alpha (dashed) with probability 1 - delta."
        ),
        section=VERDICT_SECTION,
    ),
    FigureDeclaration(
        name="judge_rates",
        draw=judge_rates,
        table="prediction_powered",
        title="Misgendering rates: people, prediction-powered, judge",
        caption=(
            "Misgendering rate per model, dataset and pronoun, a context being the unit: people only on the pool's "
            "contexts, prediction-powered (the pool's people and the judge on all of the job's contexts), each with its "
            "95% interval, and the judge alone (biased: it trusts the judge)."
        ),
        section=VERDICT_SECTION,
    ),
)
