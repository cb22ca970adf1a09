"""The stereotype pair report's figures (docs/domain.md, 'Stereotype pair benchmarks'): each model's bias score per
benchmark, before and (with a dimensions pool) after balancing; and each benchmark's mix of dimensions (the seed's
Figure 2). Each takes the report dict of analysis/selectors/pairs.py and gives SVG bytes."""

from __future__ import annotations

import io
import textwrap

import numpy as np

from analysis.plots.layout import PALETTE, STYLE, WIDTH, _pyplot
from annotation.schema import DIMENSIONS, label_guideline


def _svg(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    _pyplot().close(figure)
    return buffer.getvalue()


def _bars(ax, groups: list[str], series: dict[str, list[float | None]]) -> None:
    width = 0.8 / max(1, len(series))
    positions = np.arange(len(groups))
    for k, (name, values) in enumerate(series.items()):
        heights = [np.nan if v is None else v for v in values]
        ax.bar(positions + (k - (len(series) - 1) / 2) * width, heights, width, label=name,
               color=PALETTE[k % len(PALETTE)])  # fmt: skip
    ax.set_xticks(positions, groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")


def pair_bias_figure(report: dict) -> bytes:
    """Bias per model and benchmark (50: no preference), the balanced scores beside when there are any."""
    pyplot = _pyplot()
    models = list(report["bias"])
    panels = [("original", report["bias"])] + (
        [("balanced", report["bias_balanced"])] if report["bias_balanced"] else []
    )
    with pyplot.rc_context(STYLE):
        figure, axes = pyplot.subplots(1, len(panels), figsize=(WIDTH, 2.6), squeeze=False, sharey=True)
        for ax, (title, scores) in zip(axes[0], panels, strict=True):
            series = {d: [scores.get(m, {}).get(d) for m in models] for d in report["datasets"]}
            _bars(ax, models, series)
            ax.axhline(50, color="#555555", linestyle="--", linewidth=0.8)
            ax.set_ylim(0, 100)
            ax.set_title(f"bias score ({title})")
        axes[0][0].set_ylabel("stereotypical preferred (%)")
        axes[0][-1].legend(frameon=False, loc="upper right")
        return _svg(figure)


def pair_dimensions_figure(report: dict) -> bytes:
    """Each benchmark's share of its labelled pairs per dimension (the seed's Figure 2)."""
    pyplot = _pyplot()
    names = [textwrap.fill(label_guideline(d)["name"], 16) for d in DIMENSIONS]  # four names side by side
    with pyplot.rc_context(STYLE):
        figure, ax = pyplot.subplots(figsize=(WIDTH, 2.6))
        shares = report["dimensions"]
        series = {d: [None if s is None else 100 * s for s in (shares[d][dim] for dim in DIMENSIONS)] for d in shares}
        _bars(ax, names, series)
        ax.set_ylabel("pairs (%)")
        ax.set_title("stereotype dimensions per benchmark")
        ax.legend(frameon=False)
        return _svg(figure)
