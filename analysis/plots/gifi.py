"""GIFI's figures (docs/domain.md, 'GIFI'): each dimension by model, and the per-family accuracy heatmap of GDR and
PE (models x families)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.plots.declaration import FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DIMENSIONS = ("GDR", "SN", "NTS", "CF", "SA", "OF", "PE")
MISSING = "#bbbbbb"


def gifi_dimensions(report: dict) -> Figure:
    from analysis.plots.layout import PALETTE, _empty, _pyplot

    rows = report.get("gifi_scores") or []
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(7.0, 2.8))
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    if not rows:
        _empty(ax)
        _no_data_legend(figure)
        return figure
    width = 0.8 / len(rows)
    for offset, (row, colour) in enumerate(zip(rows, PALETTE * len(rows), strict=False)):
        # A dimension not scored has no bar (a gap, never a zero).
        xs = [i + offset * width for i, d in enumerate(DIMENSIONS) if row[d] is not None]
        ys = [row[d] for d in DIMENSIONS if row[d] is not None]
        gifi = "" if row["GIFI"] is None else f" (GIFI {row['GIFI']:.1f})"
        ax.bar(xs, ys, width=width, color=colour, label=f"{row['model']}{gifi}")
        for i, dimension in enumerate(DIMENSIONS):
            if row[dimension] is None:  # said, so that a missing bar is not read as a score of 0
                ax.text(i + offset * width, 0.02, "not scored", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(DIMENSIONS))], DIMENSIONS)
    figure.legend(loc="lower center", ncols=min(len(rows), 4), frameon=False, bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return figure


def _no_data_legend(figure: Figure, label: str = "no GIFI generations") -> None:
    """The figure's one legend, below the panels, even when there is nothing to draw."""
    from matplotlib.patches import Patch

    figure.legend([Patch(color=MISSING)], [label], loc="lower center", frameon=False, bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, 0.12, 1, 1))


def gifi_family_heatmap(report: dict) -> Figure:
    from analysis.plots.layout import _empty, _pyplot

    rows = report.get("gifi_family_accuracy") or []
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(7.0, 2.8), squeeze=False)
    image = None
    for ax, dimension in zip(axes[0], ("GDR", "PE"), strict=True):
        cells = [r for r in rows if r["dimension"] == dimension]
        ax.set_title(dimension)
        if not cells:
            _empty(ax)
            continue
        models = sorted({r["model"] for r in cells})
        families = list(dict.fromkeys(r["pronoun"] for r in cells))
        grid = [[float("nan")] * len(families) for _ in models]
        for r in cells:
            grid[models.index(r["model"])][families.index(r["pronoun"])] = r["accuracy"]
        cmap = plt.get_cmap("viridis").with_extremes(bad=MISSING)
        image = ax.imshow(grid, vmin=0, vmax=1, cmap=cmap, aspect="auto")
        ax.set_xticks(range(len(families)), families, rotation=90)
        ax.set_yticks(range(len(models)), models)
    # The legend says what a grey cell is: a family the model has no generation of in that part.
    _no_data_legend(figure, "no generations of the family")
    if image is not None:
        figure.colorbar(image, ax=axes[0].tolist(), label="accuracy")
    return figure


FIGURES = (
    FigureDeclaration(
        name="gifi_dimensions",
        draw=gifi_dimensions,
        table="gifi_scores",
        title="GIFI's dimensions by model",
        caption=(
            "Each of GIFI's seven dimensions per model (1 is fair); a dimension whose scorer is not installed has no bar. "
            "CF counts the pairs of counterfactual generations with 1 - cosine < 0.3, as GIFI's released code does "
            "(its paper's text speaks of pairs below the threshold as different)."
        ),
    ),
    FigureDeclaration(
        name="gifi_family_heatmap",
        draw=gifi_family_heatmap,
        table="gifi_family_accuracy",
        title="GIFI's accuracy per pronoun family",
        caption="Per model and pronoun family: the share of GDR generations using the declared family, and of PE "
        "answers that are right.",
    ),
)
