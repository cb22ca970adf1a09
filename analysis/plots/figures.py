"""The report's figures, one function each, taking the report dict (docs/domain.md, 'Reports and figures')."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from analysis.plots.declaration import FigureDeclaration
from analysis.plots.layout import (
    ACCURACY_SERIES,
    LABEL_COLOURS,
    MARKERS,
    PALETTE,
    _by_group,
    _cell,
    _colours,
    _empty,
    _grid,
    _grouped_bars,
    _legend,
    _model_pronoun_axis,
    _model_pronoun_bars,
    _model_pronoun_order,
    _models,
    _order,
    _pyplot,
    _stacked,
    _title,
)
from analysis.report.parts import LABEL_RESERVED
from annotation.labelset import label_keys
from annotation.schema import label_display
from generation.pronouns import BASES

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def human_vs_heuristic(report: dict) -> Figure:
    """Figures 6/17: raw agreement of the human verdict with the heuristic, the human-human agreement dashed."""
    reference = report["inter_annotator"]["pronoun_binary"]["raw_agreement"]
    return _model_pronoun_bars(
        report, "human_vs_heuristic", "agreement", ylabel="agreement", reference=(reference, "human–human agreement")
    )


def prob_vs_gen(report: dict) -> Figure:
    """Figures 4b/9b/15: raw agreement p_o of the probability-based and the first sample's generation-based verdicts."""
    return _model_pronoun_bars(
        report, "prob_vs_gen", "agreement", ylabel="agreement $p_o$", reference=(1.0, "perfect agreement")
    )


def extraneous_rate(report: dict) -> Figure:
    """Figure 8: the share of generations with extraneous gendered language."""
    figure = _model_pronoun_bars(report, "extraneous_rate", "rate", ylabel="extraneous rate")
    rows = report.get("extraneous_rate") or []
    highest = max([(row["rate"] or 0) + (row["sem"] or 0) for row in rows] + [0.1])
    for ax in figure.axes:
        if ax.axison:
            ax.set_ylim(0, min(1.05, highest * 1.15))
    return figure


def accuracy(report: dict) -> Figure:
    """Per-cell accuracy of each format (mean verdict, SEM bars): probability-based, generation over every sample,
    the first sample, and the human verdict; one group per model and pronoun."""
    rows = report.get("accuracy") or []
    figure, panels = _grid(rows)
    measures = [m for m in ACCURACY_SERIES if any(row.get(m) is not None for row in rows)] or list(ACCURACY_SERIES)
    colours = dict(zip(ACCURACY_SERIES, PALETTE, strict=False))
    multi_model = len(_models(rows)) > 1
    for (dataset, setting), ax in panels.items():
        cell = _model_pronoun_order(_cell(rows, dataset, setting))
        names = [f"{row['model']}/{row['pronoun']}" for row in cell]
        index = dict(zip(names, cell, strict=True))
        _grouped_bars(
            ax,
            groups=names,
            series=measures,
            colours=colours,
            lookup=partial(_by_group, index),
            value=lambda measure: measure,
            sem=lambda measure: f"{measure}_sem",
            labels=ACCURACY_SERIES,
            positions=_model_pronoun_axis(ax, cell, name_models=multi_model),
        )
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy")
    _legend(figure, ncols=4)
    return figure


def label_distribution(report: dict) -> Figure:
    """Figure 7: the human labels' shares per model and pronoun."""
    rows = report.get("label_distribution") or []
    keyed = label_keys(report["labels"], reserved=LABEL_RESERVED)
    # The rows' columns are the labels' keys (a label given outside the set after the set's, its key as its name).
    extra = sorted({k for row in rows for k in row} - set(keyed.values()) - set(LABEL_RESERVED))
    layers = [*keyed.values(), *extra]
    label_of = {key: label for label, key in keyed.items()}
    spare = [c for c in PALETTE if c not in LABEL_COLOURS.values()]
    colours = {key: LABEL_COLOURS.get(label_of.get(key, key)) or spare[i % len(spare)] for i, key in enumerate(layers)}
    return _stacked(
        report,
        "label_distribution",
        layers=layers,
        colours=colours,
        share=lambda row, key: row.get(key, 0) / row["n"] if row["n"] else 0.0,
        names={key: label_display(label_of[key]) if key in label_of else key.replace("_", " ") for key in layers},
        ylabel="share of generations",
    )


def instance_variation(report: dict) -> Figure:
    """Figures 4a/9a/14: the share of instances at each sigma_gen, the spread of their samples' verdicts."""
    rows = report.get("instance_variation") or []
    levels = sorted({level for row in rows for level in row["shares"]}, key=float)
    # From agreement among samples (dark) to the most spread (light orange): ordered, and safe for colour blindness.
    ramp = ["#0072B2", "#56B4E9", "#E69F00", "#F0E442", "#CC79A7", "#D55E00"]
    return _stacked(
        report,
        "instance_variation",
        layers=levels,
        colours={level: ramp[i % len(ramp)] for i, level in enumerate(levels)},
        share=lambda row, level: row["shares"].get(level, 0.0),
        names={level: rf"$\sigma_{{gen}}$ = {level}" for level in levels},
        ylabel="share of instances",
    )


def beta_landscape(report: dict) -> Figure:
    """Figures 10/16: the fitted beta distributions of d_k, beta on x and alpha on y, per model (colour) and pronoun
    (marker), with the diagonal alpha = beta and the lines alpha = 1 and beta = 1 dashed."""
    all_rows = report.get("beta_disagreement") or []
    rows = [row for row in all_rows if row["alpha"] is not None and row["beta"] is not None]
    figure, panels = _grid(all_rows, panel_height=2.9, sharey=False)
    plt = _pyplot()
    colours = _colours(_models(rows))
    top = max([2.0] + [max(row["alpha"], row["beta"]) * 1.1 for row in rows])
    drawn = False
    for (dataset, setting), ax in panels.items():
        cell_rows = _cell(rows, dataset, setting)
        if not cell_rows:
            # A cell whose every fit is undefined (d_k constant, or fewer than 2 instances per model and pronoun)
            # says so rather than showing empty axes.
            _empty(ax, "No beta fit: d_k has no variance\nor fewer than 2 instances.")
            ax.set_title(_title(dataset, setting))
            continue
        drawn = True
        for row in cell_rows:
            ax.scatter(
                row["beta"],
                row["alpha"],
                color=colours[row["model"]],
                marker=MARKERS.get(row["pronoun"], "x"),
                s=28,
                edgecolor="black",
                linewidth=0.4,
                zorder=3,
                gid=f"point-{row['model']}-{row['pronoun']}",
            )
        ax.axvline(1, linestyle="--", color="grey", linewidth=0.8)
        ax.axhline(1, linestyle="--", color="grey", linewidth=0.8)
        ax.plot([0, top], [0, top], linestyle="--", color="black", linewidth=0.8)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel("β")
        ax.set_ylabel("α")
    if not drawn:
        return figure
    # The legend names only what is drawn: the models and pronouns with a point, and the dashed lines.
    handles = [
        plt.Line2D([], [], color=colours[m], marker="o", linestyle="", markeredgecolor="black", label=m)
        for m in colours
    ]
    pronouns = _order({row["pronoun"] for row in rows}, BASES)
    handles += [plt.Line2D([], [], color="grey", marker=MARKERS.get(p, "x"), linestyle="", label=p) for p in pronouns]
    handles += [
        plt.Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="α = β"),
        plt.Line2D([], [], color="grey", linestyle="--", linewidth=0.8, label="α = 1, β = 1"),
    ]
    figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 8), frameon=False)
    return figure


# The paper's figures, in the order the report shows them.
FIGURES = (
    FigureDeclaration(
        name="human_vs_heuristic",
        draw=human_vs_heuristic,
        table="human_vs_heuristic",
        title="Human vs heuristic",
        caption=(
            "Raw agreement of the human verdict (misgendering or not) with the automatic first-pronoun heuristic, per "
            "model and pronoun, with standard-error bars; the dashed line is the agreement of two annotators on the "
            "overlap items (the paper's figures 6 and 17)."
        ),
        also_reads=("inter_annotator",),  # the two annotators' agreement, the dashed line
    ),
    FigureDeclaration(
        name="label_distribution",
        draw=label_distribution,
        table="label_distribution",
        title="Human labels",
        caption=(
            "Share of each human label among the annotated generations, per model and pronoun (the paper's figure 7)."
        ),
        also_reads=("labels",),  # the pool's label set, in its order
    ),
    FigureDeclaration(
        name="extraneous_rate",
        draw=extraneous_rate,
        table="extraneous_rate",
        title="Extraneous gendered language",
        caption=(
            "Share of generations the annotators flagged for extraneous gendered language, per model and pronoun, with "
            "standard-error bars (the paper's figure 8)."
        ),
    ),
    FigureDeclaration(
        name="prob_vs_gen",
        draw=prob_vs_gen,
        table="prob_vs_gen",
        title="Probability vs generation",
        caption=(
            "Raw agreement p_o between the probability-based verdict and the first sample's generation-based verdict, "
            "per model and pronoun, with standard-error bars; the dashed line at 1.0 is perfect agreement (the paper's "
            "figures 4b, 9b and 15)."
        ),
    ),
    FigureDeclaration(
        name="instance_variation",
        draw=instance_variation,
        table="instance_variation",
        title="Variation among samples",
        caption=(
            "Share of instances at each σ_gen, the population standard deviation of the verdicts of an instance's "
            "samples: 0 when every sample agrees, larger when they split (the paper's figures 4a, 9a and 14)."
        ),
    ),
    FigureDeclaration(
        name="accuracy",
        draw=accuracy,
        table="accuracy",
        title="Accuracy per format",
        caption=(
            "Accuracy per model and pronoun: the mean probability-based verdict, the mean generation-based verdict over "
            "all samples and over the first sample, and the mean human verdict, with standard-error bars."
        ),
    ),
    FigureDeclaration(
        name="beta_landscape",
        draw=beta_landscape,
        table="beta_disagreement",
        title="Disagreement landscape",
        caption=(
            "Beta distributions fitted to the per-instance chance d_k that a generation disagrees with the "
            "probability-based verdict, β on the x axis and α on the y axis; dashed: α = β, α = 1 and β = 1 (the "
            "paper's figures 10 and 16)."
        ),
    ),
)
