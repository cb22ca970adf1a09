"""Report figures with matplotlib (Agg), rendered server-side to SVG or PNG bytes (docs/domain.md, 'Reports and
figures'): the registry of figures with their headings and captions, rendering, and the cache of drawings.

Every figure is one declaration (`declaration.FigureDeclaration`: what draws it, its table, what else it reads, its
heading and caption) in the module that draws it (`figures.py`, the paper's, drawn with the pieces of `layout.py`;
`tango.py`, `judges.py`, `verdict.py`, `distractors.py`), and takes only the parts of the report it declares.
Panels are dataset (rows) x setting (columns: pre and post side by side, as the paper's figures 4, 9, 15 and 17 set
them), one legend per figure below the panels, outside the data. Colours are the Okabe-Ito palette, which stays
distinguishable under the common colour-vision deficiencies; sizes and fonts are set for a two-column page (7 in wide,
8-9 pt text). Rendered bytes are cached under a hash of the parts of the report the figure draws, so a page
with every plot costs one rendering per figure until that figure's data change: a new annotation redraws the figures of
human labels, not those of the generations.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Callable
from typing import TypeGuard

from analysis.plots import active as plots_active
from analysis.plots import checks as plots_checks
from analysis.plots import distractors as plots_distractors
from analysis.plots import figures as plots_paper
from analysis.plots import gifi as plots_gifi
from analysis.plots import judges as plots_judges
from analysis.plots import tango as plots_tango
from analysis.plots import verdict as plots_verdict
from analysis.plots.declaration import VERDICT_SECTION, FigureDeclaration
from analysis.plots.layout import FORMATS, PALETTE, STYLE, _model_pronoun_bars, _pyplot

__all__ = [
    "FIGURES",
    "FORMATS",
    "PALETTE",
    "STYLE",
    "VERDICT_SECTION",
    "FigureDeclaration",
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

# Every figure of the report, by name, in the order the report shows them: each module declares its own.
FIGURES: dict[str, FigureDeclaration] = {
    figure.name: figure
    for figure in (
        *plots_paper.FIGURES,
        *plots_tango.FIGURES,
        *plots_judges.FIGURES,
        *plots_verdict.FIGURES,
        *plots_checks.FIGURES,
        *plots_active.FIGURES,
        *plots_distractors.FIGURES,
        *plots_gifi.FIGURES,
    )
}


class FigureInputs(dict):
    """The part of a report one figure draws (its declaration's inputs). Reading any other key is an error, so a
    drawing kept under the digest of its inputs can never be out of date."""

    def __init__(self, name: str, values: dict) -> None:
        super().__init__(values)
        self.name = name

    def _declared(self, key: object) -> None:
        if key not in FIGURES[self.name].inputs:
            raise KeyError(f"figure {self.name!r} reads {key!r} of the report: add it to its declaration's also_reads")

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
    return {key: report[key] for key in FIGURES[name].inputs if key in report}


def figure_digest(*, report: dict, name: str) -> str:
    """A short hash of what the named figure draws of the report: equal digests give the same drawing."""
    text = json.dumps([name, _inputs(report, name)], sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:VERSION_LENGTH]


def plot_figures(*, report: dict | None = None) -> list[dict]:
    """Name, heading, caption and page section of every figure, in the order the report shows them; given a report,
    only the figures whose table has rows (a pool without TANGO jobs shows no TANGO figure)."""
    return [
        {"name": figure.name, "title": figure.title, "caption": figure.caption, "section": figure.section}
        for figure in FIGURES.values()
        if report is None or report.get(figure.table)
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
        figure = FIGURES[name].draw(FigureInputs(name, plain_text(_inputs(report, name))))
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
