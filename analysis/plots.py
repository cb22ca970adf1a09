"""Report figures with matplotlib (Agg), rendered server-side to SVG or PNG bytes.

Each plot takes the report dict; panels are dataset x setting, as the paper splits its figures (6/17: pre/post).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PRONOUNS = ["he", "she", "they", "xe"]
MARKERS = {"he": "o", "she": "s", "they": "^", "xe": "D"}
FORMATS = {"svg": "image/svg+xml", "png": "image/png"}


def _panels(rows: list[dict]) -> list[tuple[str, str]]:
    return sorted({(row["dataset"], row["setting"]) for row in rows}, key=lambda p: (p[0], p[1] != "pre"))


def _pronouns(rows: list[dict]) -> list[str]:
    seen = {row["pronoun"] for row in rows}
    return [p for p in PRONOUNS if p in seen] + sorted(seen - set(PRONOUNS))


@cache
def _pyplot():
    """matplotlib, on the first plot rather than at import: it takes most of a second to load, and every web
    process imports this module with its URLs, most of them never to draw anything."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


def _figure(n_panels: int, *, width: float = 6.0, height: float = 3.2) -> tuple[Figure, list]:
    n = max(n_panels, 1)
    figure, axes = _pyplot().subplots(n, 1, figsize=(width, height * n), squeeze=False)
    return figure, list(axes[:, 0])


def _empty(ax, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _grouped_bars(report: dict, table: str, value: str, *, ylabel: str, reference: float | None = None) -> Figure:
    """Bars per model grouped by pronoun, with SEM error bars (figures 6, 8, 17)."""
    rows = report[table]
    panels = _panels(rows)
    figure, axes = _figure(len(panels))
    if not panels:
        _empty(axes[0])
    for ax, (dataset, setting) in zip(axes, panels, strict=False):
        cell = [row for row in rows if row["dataset"] == dataset and row["setting"] == setting]
        models = sorted({row["model"] for row in cell})
        pronouns = _pronouns(cell)
        width = 0.8 / max(len(models), 1)
        x = np.arange(len(pronouns))
        for i, model in enumerate(models):
            values = {row["pronoun"]: row for row in cell if row["model"] == model}
            heights = [values.get(p, {}).get(value) or 0.0 for p in pronouns]
            errors = [values.get(p, {}).get("sem") or 0.0 for p in pronouns]
            ax.bar(x + (i - (len(models) - 1) / 2) * width, heights, width, yerr=errors, capsize=2, label=model)
        if reference is not None:
            ax.axhline(reference, linestyle="--", color="black", linewidth=1, label="human-human")
        ax.set_xticks(x, pronouns)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{dataset}, {setting}-[MASK]")
        ax.legend(fontsize="x-small", ncols=2)
    figure.tight_layout()
    return figure


def human_vs_heuristic(report: dict) -> Figure:
    reference = report["inter_annotator"]["pronoun_binary"]["raw_agreement"]
    return _grouped_bars(report, "human_vs_heuristic", "agreement", ylabel="agreement", reference=reference)


def extraneous_rate(report: dict) -> Figure:
    return _grouped_bars(report, "extraneous_rate", "rate", ylabel="extraneous rate")


def label_distribution(report: dict) -> Figure:
    """Stacked label shares per model and pronoun (figure 7)."""
    rows = report["label_distribution"]
    labels = [label for label in report["labels"]] + sorted(
        {k for row in rows for k in row} - set(report["labels"]) - {"model", "dataset", "setting", "pronoun", "n"}
    )
    panels = _panels(rows)
    figure, axes = _figure(len(panels), width=7.0)
    if not panels:
        _empty(axes[0])
    for ax, (dataset, setting) in zip(axes, panels, strict=False):
        cell = sorted(
            (row for row in rows if row["dataset"] == dataset and row["setting"] == setting),
            key=lambda row: (row["model"], PRONOUNS.index(row["pronoun"]) if row["pronoun"] in PRONOUNS else 9),
        )
        names = [f"{row['model']}\n{row['pronoun']}" for row in cell]
        bottom = np.zeros(len(cell))
        for label in labels:
            share = np.array([row.get(label, 0) / row["n"] if row["n"] else 0.0 for row in cell])
            ax.bar(range(len(cell)), share, bottom=bottom, label=label)
            bottom += share
        ax.set_xticks(range(len(cell)), names, fontsize="x-small")
        ax.set_ylim(0, 1)
        ax.set_ylabel("share of generations")
        ax.set_title(f"{dataset}, {setting}-[MASK]")
        ax.legend(fontsize="x-small")
    figure.tight_layout()
    return figure


def beta_landscape(report: dict) -> Figure:
    """alpha against beta per model (colour) and pronoun (marker), with alpha = 1, beta = 1, alpha = beta (figure 10)."""
    rows = [row for row in report["beta_disagreement"] if row["alpha"] is not None]
    panels = _panels(report["beta_disagreement"])
    figure, axes = _figure(len(panels), width=5.5, height=4.2)
    if not panels:
        _empty(axes[0])
    models = sorted({row["model"] for row in rows})
    plt = _pyplot()
    colours = {model: plt.get_cmap("tab10")(i % 10) for i, model in enumerate(models)}
    for ax, (dataset, setting) in zip(axes, panels, strict=False):
        cell = [row for row in rows if row["dataset"] == dataset and row["setting"] == setting]
        for row in cell:
            ax.scatter(
                row["alpha"], row["beta"], color=colours[row["model"]], marker=MARKERS.get(row["pronoun"], "x"), s=30
            )
        top = max([1.5] + [max(row["alpha"], row["beta"]) * 1.1 for row in cell])
        ax.axvline(1, linestyle="--", color="grey", linewidth=0.8)
        ax.axhline(1, linestyle="--", color="grey", linewidth=0.8)
        ax.plot([0, top], [0, top], linestyle="--", color="black", linewidth=0.8)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel("alpha")
        ax.set_ylabel("beta")
        ax.set_title(f"{dataset}, {setting}-[MASK]")
        handles = [plt.Line2D([], [], color=colours[m], marker="o", linestyle="", label=m) for m in models]
        handles += [plt.Line2D([], [], color="black", marker=MARKERS[p], linestyle="", label=p) for p in PRONOUNS]
        ax.legend(handles=handles, fontsize="x-small", ncols=2)
    figure.tight_layout()
    return figure


PLOTS: dict[str, Callable[[dict], Figure]] = {
    "human_vs_heuristic": human_vs_heuristic,
    "label_distribution": label_distribution,
    "extraneous_rate": extraneous_rate,
    "beta_landscape": beta_landscape,
}


def plot_render(*, report: dict, name: str, fmt: str) -> bytes:
    """The named plot as SVG or PNG bytes."""
    figure = PLOTS[name](report)
    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format=fmt, dpi=150 if fmt == "png" else None)
    finally:
        _pyplot().close(figure)
    return buffer.getvalue()
