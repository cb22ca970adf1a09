"""The judge's checks in figures (docs/domain.md, "Judges a reviewer trusts"), drawn from the report's
`judge_checks` like the judges' reliability plot (analysis/plots/judges.py): the reliability diagram before and after
contextual calibration, the share of choices by option position, and the accuracy by family under the swap. The
judge card (analysis/selectors/card.py) draws the same figures from its own judge's rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.plots.declaration import VERDICT_SECTION, FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _rows(report: dict, check: str) -> list[dict]:
    return [row for row in report.get("judge_checks") or [] if row["check"] == check]


def _name(row: dict) -> str:
    return f"{row['judge']} (check run {row['run']})"


def check_calibration(report: dict) -> Figure:
    """One panel per contextual check: accuracy against the human label per confidence bin, before (open) and after
    (filled) calibration, the diagonal dashed."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows: list[dict | None] = list(_rows(report, "contextual")) or [None]
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(rows), figsize=(WIDTH, 2.8), squeeze=False, sharey=True)
    for ax, row in zip(axes[0], rows, strict=True):
        ax.plot([0, 1], [0, 1], linestyle="--", color="#777777", linewidth=0.8, label="perfect calibration")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence")
        if row is None:
            _empty(ax)
            continue
        for key, colour, fill, text in (
            ("reliability_before", PALETTE[1], "none", "before"),
            ("reliability_after", PALETTE[0], PALETTE[0], "after"),
        ):
            bins = [b for b in row.get(key) or [] if b["n"]]
            ax.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], "o-", color=colour,
                    markerfacecolor=fill, markersize=4, linewidth=0.8, label=f"{text} calibration")  # fmt: skip
        before, after = row.get("ece_before"), row.get("ece_after")
        subtitle = f"ECE {before:.3f} → {after:.3f}" if before is not None and after is not None else ""
        ax.set_title(f"{_name(row)}\n{subtitle}")
    axes[0][0].set_ylabel("accuracy vs humans")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="lower center", ncols=3, frameon=False, bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    return figure


def check_positions(report: dict) -> Figure:
    """Per position check, the share of the judge's choices at each option position; dashed, 1/m (blind to order)."""
    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = [row for row in _rows(report, "position") if row.get("by_position")]
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(WIDTH, 2.6))
    m = len(rows[0]["by_position"]) if rows else len(report.get("labels") or ()) or 3
    ax.axhline(1 / m, linestyle="--", color="#777777", linewidth=0.8, label="1/m (blind to order)")
    if not rows:
        _empty(ax)
    width = 0.8 / max(len(rows), 1)
    for index, row in enumerate(rows):
        positions = sorted(row["by_position"], key=int)
        shares = [(row["by_position"][p] or 0.0) + 1 / len(positions) for p in positions]
        xs = [int(p) - 0.4 + width * (index + 0.5) for p in positions]
        consistency = row.get("consistency")
        label = _name(row) + (f", consistency {consistency:.2f}" if consistency is not None else "")
        ax.bar(xs, shares, width=width, color=PALETTE[index % len(PALETTE)], label=label)
    ax.set_xticks(range(1, m + 1))
    ax.set_xlabel("option position in the prompt (1 = listed first)")
    ax.set_ylabel("share of choices")
    ax.set_ylim(0, 1)
    _legend_below(figure, ax)
    return figure


def _legend_below(figure, ax, extra=()) -> None:
    handles, labels = ax.get_legend_handles_labels()
    handles, labels = [*handles, *extra], [*labels, *(h.get_label() for h in extra)]
    figure.legend(handles, labels, loc="lower center", ncols=2, frameon=False, bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, 0.16, 1, 1))


def check_families(report: dict) -> Figure:
    """Per family-swap check, the judge's accuracy against the human label with the declared family swapped for
    each other family."""
    from matplotlib.lines import Line2D

    from analysis.plots.layout import PALETTE, WIDTH, _empty, _pyplot

    rows = [row for row in _rows(report, "family_swap") if row.get("by_family")]
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(WIDTH, 2.6))
    original = Line2D([], [], linestyle="--", color="#777777", linewidth=0.8, label="accuracy on the original items")
    if not rows:
        _empty(ax)
        _legend_below(figure, ax, (original,))
        return figure
    families = sorted({family for row in rows for family in row["by_family"]})
    width = 0.8 / len(rows)
    for index, row in enumerate(rows):
        values = [(row["by_family"].get(f) or {}).get("accuracy") for f in families]
        xs = [i - 0.4 + width * (index + 0.5) for i in range(len(families))]
        invariance = row.get("invariance")
        label = _name(row) + (f", invariance {invariance:.2f}" if invariance is not None else "")
        colour = PALETTE[index % len(PALETTE)]
        ax.bar(xs, [v or 0.0 for v in values], width=width, color=colour, label=label)
        if row.get("accuracy_original") is not None:
            ax.axhline(row["accuracy_original"], linestyle="--", color=colour, linewidth=0.8)
    ax.set_xticks(range(len(families)), families)
    ax.set_xlabel("family the declared pronouns were swapped to")
    ax.set_ylabel("accuracy vs humans")
    ax.set_ylim(0, 1)
    _legend_below(figure, ax, (original,))
    return figure


FIGURES = (
    FigureDeclaration(
        name="judge_check_calibration",
        draw=check_calibration,
        table="judge_checks",
        title="LLM judges: reliability before and after contextual calibration",
        caption=(
            "One panel per contextual check: for each tenth of the judge's confidence, the share of its labels that "
            "equal the human label, before (open) and after (filled) dividing its option probabilities by those it "
            "gives content-free inputs; points on the dashed diagonal are perfectly calibrated."
        ),
        section=VERDICT_SECTION,
    ),
    FigureDeclaration(
        name="judge_check_positions",
        draw=check_positions,
        table="judge_checks",
        also_reads=("labels",),
        title="LLM judges: choices by option position",
        caption=(
            "The share of the judge's labels that were the option listed at each position, over every cyclic "
            "rotation of the options; a judge blind to their order stays at the dashed 1/m."
        ),
        section=VERDICT_SECTION,
    ),
    FigureDeclaration(
        name="judge_check_families",
        draw=check_families,
        table="judge_checks",
        title="LLM judges: accuracy by pronoun family under the swap",
        caption=(
            "The judge's accuracy against the human label once the item's declared pronoun family (and every form "
            "of it in the texts) is swapped for another family, its accuracy on the items themselves dashed; a judge "
            "fair to every family has equal bars."
        ),
        section=VERDICT_SECTION,
    ),
)
