"""The house style of Concord's figures and the pieces every figure is built from (docs/domain.md, 'Reports and
figures'): panels of dataset (rows) by setting (columns: pre and post side by side), one legend per figure below the
panels, the Okabe-Ito palette, a two-column page's width with 8-9 pt text, bars with SEM error bars, stacked shares,
and the two-level model/pronoun axis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING

import numpy as np

from generation.datasets.registry import DATASET_KINDS
from generation.pronouns import BASES

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
SETTINGS_ORDER = ["pre", "post", "open"]
SETTING_NAMES = {"pre": "pre-[MASK]", "post": "post-[MASK]", "open": "open generation"}
# The built-in kinds, in registry order, by their display names (a templates dataset is shown by its own name).
DATASET_NAMES = {spec.kind.value: spec.kind.label for spec in DATASET_KINDS.values() if spec.codebook is not None}
MARKERS = {"he": "o", "she": "s", "they": "^", "xe": "D"}
# Okabe & Ito (2008), reordered so that the first colours are the most distinct on white.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
LABEL_COLOURS = {"correct": "#009E73", "misgendering": "#D55E00", "no_pronoun": "#56B4E9", "plural_they": "#CC79A7"}
ACCURACY_SERIES = {"prob": "probability-based", "gen": "generation (all samples)", "gen_first": "generation (sample 1)"}
ACCURACY_SERIES |= {"human": "human"}
WIDTH = 7.0  # inches: the text width of a two-column paper
PANEL_HEIGHT = 2.3
STYLE = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: smaller files, searchable, crisp at any zoom
    "svg.hashsalt": "concord",  # the same report gives the same bytes
}


@cache
def _pyplot():
    """matplotlib, on the first plot rather than at import: it takes most of a second to load, and every web
    process imports this module with its URLs, most of them never to draw anything."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


def _order(values: set[str], first: Sequence[str]) -> list[str]:
    return [v for v in first if v in values] + sorted(values - set(first))


def _pronouns(rows: list[dict]) -> list[str]:
    return _order({row["pronoun"] for row in rows}, BASES)


def _models(rows: list[dict]) -> list[str]:
    return sorted({row["model"] for row in rows})


def _colours(names: list[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _title(dataset: str, setting: str) -> str:
    return f"{DATASET_NAMES.get(dataset, dataset)}, {SETTING_NAMES.get(setting, setting)}"


def _grid(
    rows: list[dict], *, panel_height: float = PANEL_HEIGHT, sharey: bool = True
) -> tuple[Figure, dict[tuple[str, str], Axes]]:
    """A figure with one panel per dataset (row) and setting (column); combinations without data are hidden."""
    datasets = _order({row["dataset"] for row in rows}, list(DATASET_NAMES))
    settings = _order({row["setting"] for row in rows}, SETTINGS_ORDER)
    n_rows, n_cols = max(len(datasets), 1), max(len(settings), 1)
    figure, axes = _pyplot().subplots(
        n_rows,
        n_cols,
        figsize=(WIDTH, panel_height * n_rows + 0.8),
        squeeze=False,
        layout="constrained",
        sharey=sharey,
    )
    present = {(row["dataset"], row["setting"]) for row in rows}
    panels = {}
    for i, dataset in enumerate(datasets):
        for j, setting in enumerate(settings):
            ax = axes[i][j]
            if (dataset, setting) in present:
                ax.set_title(_title(dataset, setting))
                panels[(dataset, setting)] = ax
            else:
                ax.set_axis_off()
    if not rows:
        _empty(axes[0][0])
    return figure, panels


def _empty(ax: Axes, text: str = "No data yet.") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _legend(figure: Figure, *, ncols: int | None = None, title: str | None = None) -> None:
    """One legend for the whole figure, below the panels: every labelled artist, each label once."""
    seen: dict[str, Artist] = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                seen.setdefault(label, handle)
    if seen:
        figure.legend(
            list(seen.values()),
            list(seen),
            loc="outside lower center",
            ncols=ncols or min(len(seen), 5),
            frameon=False,
            title=title,
        )


def _cell(rows: list[dict], dataset: str, setting: str) -> list[dict]:
    return [row for row in rows if row["dataset"] == dataset and row["setting"] == setting]


def _value(row: dict | None, key: str) -> float:
    value = None if row is None else row.get(key)
    return np.nan if value is None else float(value)


def _grouped_bars(
    ax: Axes,
    *,
    groups: list[str],
    series: list[str],
    colours: dict[str, str],
    lookup: Callable[[str, str], dict | None],
    value: str | Callable[[str], str],
    sem: str | Callable[[str], str] | None,
    labels: dict[str, str] | None = None,
    positions: Sequence[float] | None = None,
) -> None:
    """Bars for each series within each group, with SEM error bars; a missing figure draws no bar (never 0)."""
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups), dtype=float) if positions is None else np.asarray(positions, dtype=float)
    for i, name in enumerate(series):
        key = value(name) if callable(value) else value
        sem_key = sem(name) if callable(sem) else sem
        heights = [_value(lookup(group, name), key) for group in groups]
        errors = [_value(lookup(group, name), sem_key) if sem_key else np.nan for group in groups]
        ax.bar(
            x + (i - (len(series) - 1) / 2) * width,
            heights,
            width,
            yerr=np.nan_to_num(errors),
            capsize=1.5,
            error_kw={"elinewidth": 0.8},
            color=colours[name],
            edgecolor="black",
            linewidth=0.3,
            label=(labels or {}).get(name, name),
            gid=f"series-{name}",
        )
    if positions is None:
        ax.set_xticks(x, groups)


def _by_group_and_series(index: dict, group: str, series: str) -> dict | None:
    return index.get((group, series))


def _by_group(index: dict, group: str, _series: str) -> dict | None:
    return index.get(group)


def _model_pronoun_bars(
    report: dict, table: str, value: str, *, ylabel: str, reference: tuple[float | None, str] | None = None
) -> Figure:
    """Bars per model grouped by pronoun, with SEM error bars and an optional dashed reference line."""
    rows = report.get(table) or []
    figure, panels = _grid(rows)
    models = _models(rows)
    colours = _colours(models)
    top = 1.05
    for (dataset, setting), ax in panels.items():
        cell = _cell(rows, dataset, setting)
        index = {(row["pronoun"], row["model"]): row for row in cell}
        _grouped_bars(
            ax,
            groups=_pronouns(cell),
            series=[m for m in models if any(row["model"] == m for row in cell)],
            colours=colours,
            lookup=partial(_by_group_and_series, index),
            value=value,
            sem="sem" if table != "prob_vs_gen" else "agreement_sem",
        )
        if reference is not None and reference[0] is not None:
            ax.axhline(reference[0], linestyle="--", color="black", linewidth=0.9, label=reference[1])
        ax.set_ylim(0, top)
        ax.set_ylabel(ylabel)
    _legend(figure)
    return figure


def _model_pronoun_order(rows: list[dict]) -> list[dict]:
    pronouns = _pronouns(rows)
    return sorted(rows, key=lambda row: (row["model"], pronouns.index(row["pronoun"])))


def _model_pronoun_axis(ax: Axes, rows: list[dict], *, name_models: bool) -> list[float]:
    """Two-level x axis for rows in model, pronoun order: pronouns as tick labels, model names under each block of
    pronouns (when the figure has more than one model), a gap and a faint rule between blocks. Returns the x of
    each row."""
    from matplotlib.transforms import blended_transform_factory

    positions, position, previous = [], 0.0, None
    for row in rows:
        if previous is not None and row["model"] != previous:
            ax.axvline(position + 0.2, color="#cccccc", linewidth=0.6, zorder=0)
            position += 0.6
        positions.append(position)
        position += 1.0
        previous = row["model"]
    crowded = len(rows) > 12
    ax.set_xticks(positions, [row["pronoun"] for row in rows])
    if name_models:
        ax.tick_params(axis="x", labelsize=7)
    if crowded:
        ax.tick_params(axis="x", labelrotation=90)
    if name_models:
        transform = blended_transform_factory(ax.transData, ax.transAxes)
        for model in dict.fromkeys(row["model"] for row in rows):
            xs = [x for x, row in zip(positions, rows, strict=True) if row["model"] == model]
            ax.annotate(
                model,
                xy=(float(np.mean(xs)), 0),
                xycoords=transform,
                xytext=(0, -26 if crowded else -15),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=7,
                annotation_clip=False,
            )
    return positions


def _stacked(
    report: dict,
    table: str,
    *,
    layers: list[str],
    colours: dict[str, str],
    share: Callable[[dict, str], float],
    names: dict[str, str],
    ylabel: str,
    legend_title: str | None = None,
) -> Figure:
    """Stacked shares per model and pronoun, one bar each (figures 4a/9a/14 and 7)."""
    rows = report.get(table) or []
    figure, panels = _grid(rows)
    multi_model = len(_models(rows)) > 1
    for (dataset, setting), ax in panels.items():
        cell = _model_pronoun_order(_cell(rows, dataset, setting))
        positions = _model_pronoun_axis(ax, cell, name_models=multi_model)
        bottom = np.zeros(len(cell))
        for layer in layers:
            heights = np.array([share(row, layer) for row in cell])
            ax.bar(
                positions,
                heights,
                0.75,
                bottom=bottom,
                color=colours[layer],
                edgecolor="black",
                linewidth=0.3,
                label=names.get(layer, layer),
                gid=f"layer-{layer}",
            )
            bottom += heights
        ax.set_ylim(0, 1)
        ax.set_ylabel(ylabel)
    _legend(figure, title=legend_title)
    return figure
