"""Report figures with matplotlib (Agg), rendered server-side to SVG or PNG bytes (docs/domain.md, 'Reports and
figures'): the registry of figures with their headings and captions, rendering, and the cache of drawings.

Every figure (`figures.py`, drawn with the pieces of `layout.py`) takes the parts of the report it declares (INPUTS).
Panels are dataset (rows) x setting (columns: pre and post side by side, as the paper's figures 4, 9, 15 and 17 set
them), one legend per figure below the panels, outside the data. Colours are the Okabe-Ito palette, which stays
distinguishable under the common colour-vision deficiencies; sizes and fonts are set for a two-column page (7 in wide,
8-9 pt text). Rendered bytes are cached under a hash of the parts of the report the figure draws (INPUTS), so a page
with every plot costs one rendering per figure until that figure's data change: a new annotation redraws the figures of
human labels, not those of the generations.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeGuard

from analysis.plots import distractors as plots_distractors
from analysis.plots import judges as plots_judges
from analysis.plots import tango as plots_tango
from analysis.plots import verdict as plots_verdict
from analysis.plots.figures import (
    accuracy,
    beta_landscape,
    extraneous_rate,
    human_vs_heuristic,
    instance_variation,
    label_distribution,
    prob_vs_gen,
)
from analysis.plots.layout import FORMATS, PALETTE, STYLE, _model_pronoun_bars, _pyplot
from analysis.report.tables import TABLES

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "CAPTIONS",
    "FORMATS",
    "PALETTE",
    "PLOTS",
    "STYLE",
    "TITLES",
    "_model_pronoun_bars",
    "_pyplot",
    "plot_figures",
    "plot_for_pool",
    "plot_render",
    "plot_render_cached",
    "report_figures_inline",
    "report_remember",
    "report_version",
]

PLOTS: dict[str, Callable[[dict], Figure]] = {
    "human_vs_heuristic": human_vs_heuristic,
    "label_distribution": label_distribution,
    "extraneous_rate": extraneous_rate,
    "prob_vs_gen": prob_vs_gen,
    "instance_variation": instance_variation,
    "accuracy": accuracy,
    "beta_landscape": beta_landscape,
    "tango_failure_rate": plots_tango.tango_failure_rate,
    "tango_variation": plots_tango.tango_variation,
    "judge_reliability": plots_judges.judge_reliability,
    "judge_omega": plots_verdict.judge_omega,
    "judge_risk_coverage": plots_verdict.judge_risk_coverage,
    "judge_rates": plots_verdict.judge_rates,
    "distractor_accuracy": plots_distractors.distractor_accuracy,
}

TITLES = {
    "human_vs_heuristic": "Human vs heuristic",
    "label_distribution": "Human labels",
    "extraneous_rate": "Extraneous gendered language",
    "prob_vs_gen": "Probability vs generation",
    "instance_variation": "Variation among samples",
    "accuracy": "Accuracy per format",
    "beta_landscape": "Disagreement landscape",
    **plots_tango.TITLES,
    **plots_judges.TITLES,
    **plots_verdict.TITLES,
    **plots_distractors.TITLES,
}

CAPTIONS = {
    "human_vs_heuristic": (
        "Raw agreement of the human verdict (misgendering or not) with the automatic first-pronoun heuristic, per "
        "model and pronoun, with standard-error bars; the dashed line is the agreement of two annotators on the "
        "overlap items (the paper's figures 6 and 17)."
    ),
    "label_distribution": (
        "Share of each human label among the annotated generations, per model and pronoun (the paper's figure 7)."
    ),
    "extraneous_rate": (
        "Share of generations the annotators flagged for extraneous gendered language, per model and pronoun, with "
        "standard-error bars (the paper's figure 8)."
    ),
    "prob_vs_gen": (
        "Raw agreement p_o between the probability-based verdict and the first sample's generation-based verdict, "
        "per model and pronoun, with standard-error bars; the dashed line at 1.0 is perfect agreement (the paper's "
        "figures 4b, 9b and 15)."
    ),
    "instance_variation": (
        "Share of instances at each σ_gen, the population standard deviation of the verdicts of an instance's "
        "samples: 0 when every sample agrees, larger when they split (the paper's figures 4a, 9a and 14)."
    ),
    "accuracy": (
        "Accuracy per model and pronoun: the mean probability-based verdict, the mean generation-based verdict over "
        "all samples and over the first sample, and the mean human verdict, with standard-error bars."
    ),
    "beta_landscape": (
        "Beta distributions fitted to the per-instance chance d_k that a generation disagrees with the "
        "probability-based verdict, β on the x axis and α on the y axis; dashed: α = β, α = 1 and β = 1 (the "
        "paper's figures 10 and 16)."
    ),
    **plots_tango.CAPTIONS,
    **plots_judges.CAPTIONS,
    **plots_verdict.CAPTIONS,
    **plots_distractors.CAPTIONS,
}


# The report table each figure draws, as the tables' declarations say (analysis/report/tables/).
SOURCES = {plot: table.key for table in TABLES for plot in table.plots}
# What else of the report a figure reads. A figure is handed its table and these only (`FigureInputs`), so its drawing
# is kept under a digest of them: a new annotation redraws the figures of the human side, not the automatic ones.
ALSO_READS = {
    "human_vs_heuristic": ("inter_annotator",),  # the two annotators' agreement, the dashed line
    "label_distribution": ("labels",),  # the pool's label set, in its order
    "judge_reliability": ("judge_calibration",),
}
INPUTS = {name: (SOURCES[name], *ALSO_READS.get(name, ())) for name in PLOTS}


class FigureInputs(dict):
    """The part of a report one figure draws (INPUTS). Reading any other key is an error, so a drawing kept under the
    digest of its inputs can never be out of date."""

    def __init__(self, name: str, values: dict) -> None:
        super().__init__(values)
        self.name = name

    def _declared(self, key: object) -> None:
        if key not in INPUTS[self.name]:
            raise KeyError(f"figure {self.name!r} reads {key!r} of the report: add it to ALSO_READS")

    def __getitem__(self, key):
        self._declared(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._declared(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._declared(key)
        return super().__contains__(key)


def _inputs(report: dict, name: str) -> dict:
    return {key: report[key] for key in INPUTS[name] if key in report}


def figure_digest(*, report: dict, name: str) -> str:
    """A short hash of what the named figure draws of the report: equal digests give the same drawing."""
    text = json.dumps([name, _inputs(report, name)], sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:VERSION_LENGTH]


def plot_figures(*, report: dict | None = None) -> list[dict]:
    """Name, heading and caption of every plot, in the order the report shows them; given a report, only the figures
    whose table has rows (a pool without TANGO jobs shows no TANGO figure)."""
    return [
        {"name": name, "title": TITLES[name], "caption": CAPTIONS[name]}
        for name in PLOTS
        if report is None or report.get(SOURCES[name])
    ]


def plain_text(value):
    """`value` (a report or any part of it) with every `$` in its strings escaped, so that matplotlib draws the data's
    text as written: a model named `a$b$c` would otherwise be read as mathtext, and one with an unbalanced or invalid
    expression fails the whole figure. Our own labels, which use mathtext on purpose, are written in the figures."""
    if isinstance(value, str):
        return value.replace("$", r"\$")
    if isinstance(value, dict):
        return {plain_text(key): plain_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_text(item) for item in value]
    if type(value) is tuple:
        return tuple(plain_text(item) for item in value)
    return value


def plot_render(*, report: dict, name: str, fmt: str) -> bytes:
    """The named plot as SVG or PNG bytes."""
    plt = _pyplot()
    with plt.rc_context(STYLE):
        figure = PLOTS[name](FigureInputs(name, plain_text(_inputs(report, name))))
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format=fmt, dpi=200 if fmt == "png" else None, metadata=_metadata(fmt))
        finally:
            plt.close(figure)
    return buffer.getvalue()


def _metadata(fmt: str) -> dict:
    # No creation date: the same report renders to the same bytes.
    return {"Date": None} if fmt == "svg" else {"Software": None}


def report_version(*, report: dict) -> str:
    """A short hash of the report's content: a new annotation, adjudication or generation makes a new version."""
    text = json.dumps(report, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:VERSION_LENGTH]


VERSION_LENGTH = 20
CACHE_SECONDS = 24 * 3600


def _plot_key(pool: str, digest: str, name: str, fmt: str) -> str:
    return f"concord:plot:{pool}:{digest}:{name}:{fmt}"


def _digest_key(pool: str, version: str, name: str) -> str:
    """Where a report version's figure digest is kept: a plot request names the version, the drawing its digest."""
    return f"concord:plot-digest:{pool}:{version}:{name}"


def _report_key(pool: str, version: str) -> str:
    return f"concord:report:{pool}:{version}"


def _valid_version(version: str | None) -> TypeGuard[str]:
    return version is not None and len(version) == VERSION_LENGTH and all(c in "0123456789abcdef" for c in version)


def plot_render_cached(*, report: dict, name: str, fmt: str, version: str | None = None) -> bytes:
    """`plot_render` through Django's cache, keyed by pool and the digest of what the figure draws: each figure is
    drawn once per version of its own data. Given the report's `version`, the digest is kept under it for the plot
    requests of the page (`plot_for_pool`)."""
    from django.core.cache import cache as django_cache

    digest = figure_digest(report=report, name=name)
    key = _plot_key(report["pool"], digest, name, fmt)
    image = django_cache.get(key)
    if image is None:
        image = plot_render(report=report, name=name, fmt=fmt)
        django_cache.set(key, image, timeout=CACHE_SECONDS)
    if version is not None:
        django_cache.set(_digest_key(report["pool"], version, name), digest, timeout=CACHE_SECONDS)
    return image


def report_remember(*, report: dict) -> str:
    """Keep the report under its version for the plot requests of the page that shows it; returns the version the
    page puts in its image addresses (`?v=`)."""
    from django.core.cache import cache as django_cache

    version = report_version(report=report)
    django_cache.set(_report_key(report["pool"], version), report, timeout=CACHE_SECONDS)
    return version


def plot_for_pool(*, pool: str, name: str, fmt: str, version: str | None, build: Callable[[], dict]) -> bytes:
    """A plot of a pool's report: with a known version, the cached drawing, else the drawing of the cached report;
    without one (or after the cache lost it), `build()` builds the report afresh."""
    from django.core.cache import cache as django_cache

    if _valid_version(version):
        digest = django_cache.get(_digest_key(pool, version, name))
        image = None if digest is None else django_cache.get(_plot_key(pool, digest, name, fmt))
        if image is not None:
            return image
        report = django_cache.get(_report_key(pool, version))
        if report is not None:
            return plot_render_cached(report=report, name=name, fmt=fmt, version=version)
    return plot_render_cached(report=build(), name=name, fmt=fmt)


def report_figures_inline(*, report: dict) -> list[dict]:
    """Every figure for the standalone HTML: heading, caption, the SVG markup and the PNG as a data address."""
    version = report_version(report=report)
    figures = []
    for figure in plot_figures(report=report):
        svg = plot_render_cached(report=report, name=figure["name"], fmt="svg", version=version).decode()
        png = plot_render_cached(report=report, name=figure["name"], fmt="png", version=version)
        figures.append({**figure, "svg": svg, "png": "data:image/png;base64," + base64.b64encode(png).decode()})
    return figures
