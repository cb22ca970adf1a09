"""The report's figures: each renders as real SVG and PNG, and what it draws is the data worked out independently from
the hand-built study (tests/analysis/factories.py); the report page and the HTML export read like a paper."""

from __future__ import annotations

import dataclasses
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from django.urls import reverse
from django.utils.html import escape
from matplotlib.container import BarContainer
from PIL import Image
from scipy import stats

from analysis import plots
from analysis.services import report_build
from tests.analysis.factories import HE_INSTANCES, XE_INSTANCES, study_build
from tests.factories import AnnotationFactory

PANEL = "MISGENDERED, pre-[MASK]"
# the study has no TANGO job, and no judge run over a generation job (the verdict's figures, and those of spending
# people's labels: tests/judging)
VERDICT_FIGURES = ("judge_omega", "judge_risk_coverage", "judge_rates", "label_budget_widths", "active_inclusion")
STUDY_FIGURES = [name for name in plots.FIGURES if not name.startswith("tango_") and name not in VERDICT_FIGURES]


@pytest.fixture
def study(annotator, second_annotator):
    return study_build(ana=annotator, bo=second_annotator)


@pytest.fixture
def report(study_report):
    """Built once for the module (tests/analysis/conftest.py): these tests only read it."""
    return study_report


@pytest.fixture
def fresh_report(study):
    """The report of this test's own study (for a test that also changes the study)."""
    return report_build(pool=study)


@pytest.fixture(autouse=True)
def _fresh_cache():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def _draw(report: dict, name: str):
    plt = plots._pyplot()
    with plt.rc_context(plots.STYLE):
        figure = plots.FIGURES[name].draw(report)
    return figure, plt


def _panel(figure, title: str = PANEL):
    (ax,) = [ax for ax in figure.axes if ax.get_title() == title]
    return ax


def _bars(ax) -> dict[str, list[float]]:
    return {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers if isinstance(c, BarContainer)}


def _ticks(ax) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels()]


def _first_agreement(instances) -> list[float]:
    return [float(m_prob == samples[0]) for m_prob, samples in instances]


class TestRendering:
    @pytest.mark.parametrize("name", list(plots.FIGURES))
    def test_every_figure_is_valid_svg_and_png(self, report, name):
        svg = plots.plot_render(report=report, name=name, fmt="svg")
        root = ET.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        png = Image.open(io.BytesIO(plots.plot_render(report=report, name=name, fmt="png")))
        png.verify()
        assert png.format == "PNG" and png.size[0] >= 1000  # 7 in at 200 dpi: sharp at column width

    @pytest.mark.parametrize("name", list(plots.FIGURES))
    def test_every_figure_renders_for_a_pool_without_data(self, once, admin_user, name):
        from tests.factories import PoolFactory

        empty = once("empty", lambda: report_build(pool=PoolFactory(name="empty")))
        assert ET.fromstring(plots.plot_render(report=empty, name=name, fmt="svg")) is not None

    @pytest.mark.usefixtures("figures_drawn_afresh")
    def test_the_same_report_gives_the_same_bytes(self, report):
        assert plots.plot_render(report=report, name="accuracy", fmt="svg") == plots.plot_render(
            report=report, name="accuracy", fmt="svg"
        )

    @pytest.mark.parametrize("name", STUDY_FIGURES)
    def test_every_figure_has_one_legend_outside_its_panels(self, report, name):
        figure, plt = _draw(report, name)
        try:
            assert all(ax.get_legend() is None for ax in figure.axes)
            assert len(figure.legends) == 1
            figure.canvas.draw()
            legend = figure.legends[0].get_window_extent()
            for ax in figure.axes:
                if ax.axison:
                    assert not legend.overlaps(ax.get_window_extent())
        finally:
            plt.close(figure)

    def test_every_figure_has_a_title_and_a_caption(self):
        for figure in plots.plot_figures():
            assert figure["title"] and len(figure["caption"]) > 40


class TestPlottedData:
    def test_prob_vs_gen_bars_are_raw_agreement_with_scipy_sem_and_a_dashed_line_at_one(self, report):
        figure, plt = _draw(report, "prob_vs_gen")
        try:
            ax = _panel(figure)
            assert _ticks(ax) == ["he", "xe"]  # BASES order
            he, xe = _first_agreement(HE_INSTANCES), _first_agreement(XE_INSTANCES)
            assert _bars(ax)["m1"] == pytest.approx([np.mean(he), np.mean(xe)])
            caps = [line for line in ax.lines if line.get_linestyle() == "--"]
            assert any(list(line.get_ydata()) == [1.0, 1.0] for line in caps)
            errors = [c for c in ax.containers if not isinstance(c, BarContainer)][0]
            segments = errors.lines[2][0].get_segments()
            assert [seg[1][1] - seg[0][1] for seg in segments] == pytest.approx([2 * stats.sem(he), 2 * stats.sem(xe)])
        finally:
            plt.close(figure)

    def test_instance_variation_stacks_the_shares_of_each_population_std(self, report):
        figure, plt = _draw(report, "instance_variation")
        try:
            ax = _panel(figure)
            expected = {}
            for index, instances in enumerate((HE_INSTANCES, XE_INSTANCES)):
                stds = np.round([np.std(samples) for _, samples in instances], 2)
                for level in (0.0, 0.4, 0.49):
                    expected.setdefault(level, [0.0, 0.0])[index] = float(np.mean(stds == level))
            bars = _bars(ax)
            for level, shares in expected.items():
                assert bars[rf"$\sigma_{{gen}}$ = {level:.2f}"] == pytest.approx(shares)
        finally:
            plt.close(figure)

    def test_beta_landscape_puts_beta_on_x_and_alpha_on_y(self, report):
        figure, plt = _draw(report, "beta_landscape")
        try:
            ax = _panel(figure)
            assert (ax.get_xlabel(), ax.get_ylabel()) == ("β", "α")
            m_prob = np.array([m for m, _ in XE_INSTANCES], dtype=float)
            mean_gen = np.array([np.mean(s) for _, s in XE_INSTANCES])
            d = m_prob * (1 - mean_gen) + (1 - m_prob) * mean_gen
            mean, var = d.mean(), d.var(ddof=1)
            c = mean * (1 - mean) / var - 1
            alpha, beta = mean * c, (1 - mean) * c
            (point,) = [coll for coll in ax.collections if coll.get_gid() == "point-m1-xe"]
            assert list(point.get_offsets()[0]) == pytest.approx([beta, alpha])
            dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
            assert any(list(line.get_xdata()) == [1, 1] for line in dashed)  # beta = 1
            assert any(list(line.get_ydata()) == [1, 1] for line in dashed)  # alpha = 1
            assert any(line.get_xdata()[0] == line.get_ydata()[0] == 0 for line in dashed)  # the diagonal
        finally:
            plt.close(figure)

    def test_accuracy_bars_are_the_mean_verdicts_of_each_format(self, report):
        figure, plt = _draw(report, "accuracy")
        try:
            ax = _panel(figure)
            bars = _bars(ax)
            assert _ticks(ax) == ["he", "xe"]
            prob = [np.mean([m for m, _ in cell]) for cell in (HE_INSTANCES, XE_INSTANCES)]
            gen = [np.mean([s for _, samples in cell for s in samples]) for cell in (HE_INSTANCES, XE_INSTANCES)]
            first = [np.mean([samples[0] for _, samples in cell]) for cell in (HE_INSTANCES, XE_INSTANCES)]
            # human binary per cell (factories docstring): he [1, 1], xe [1, 0, 0, 1]
            assert bars["probability-based"] == pytest.approx(prob)
            assert bars["generation (all samples)"] == pytest.approx(gen)
            assert bars["generation (sample 1)"] == pytest.approx(first)
            assert bars["human"] == pytest.approx([1.0, 0.5])
        finally:
            plt.close(figure)

    def test_human_vs_heuristic_draws_the_human_human_line_dashed(self, report):
        figure, plt = _draw(report, "human_vs_heuristic")
        try:
            ax = _panel(figure)
            assert _bars(ax)["m1"] == pytest.approx([0.5, 0.75])
            dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
            assert [list(line.get_ydata()) for line in dashed] == [[0.75, 0.75]]  # binary raw agreement, 3 of 4
        finally:
            plt.close(figure)

    def test_colours_come_from_the_colour_blind_safe_palette(self, report):
        from matplotlib.colors import to_hex

        figure, plt = _draw(report, "accuracy")
        try:
            colours = {
                to_hex(c.patches[0].get_facecolor()).upper()
                for c in _panel(figure).containers
                if isinstance(c, BarContainer)
            }
            assert colours <= {c.upper() for c in plots.PALETTE}
        finally:
            plt.close(figure)


class TestCache:
    def test_a_figure_is_drawn_once_per_report_version(self, fresh_report, study, monkeypatch, annotator):
        report = fresh_report
        calls = []
        real = plots.plot_render
        monkeypatch.setattr(plots, "plot_render", lambda **kw: calls.append(kw["name"]) or real(**kw))
        first = plots.plot_render_cached(report=report, name="accuracy", fmt="svg")
        assert plots.plot_render_cached(report=report, name="accuracy", fmt="svg") == first
        assert calls == ["accuracy"]
        item = study.items.filter(annotations__isnull=True).first()
        AnnotationFactory(item=item, annotator=annotator, label="misgendering")
        changed = report_build(pool=study)
        assert plots.report_version(report=changed) != plots.report_version(report=report)
        plots.plot_render_cached(report=changed, name="accuracy", fmt="svg")
        assert calls == ["accuracy", "accuracy"]

    def test_a_new_annotation_redraws_the_figures_of_human_labels_only(
        self, fresh_report, study, monkeypatch, annotator
    ):
        calls = []
        real = plots.plot_render
        monkeypatch.setattr(plots, "plot_render", lambda **kw: calls.append(kw["name"]) or real(**kw))
        for name in STUDY_FIGURES:
            plots.plot_render_cached(report=fresh_report, name=name, fmt="svg")
        assert sorted(calls) == sorted(STUDY_FIGURES)
        calls.clear()
        item = study.items.filter(annotations__isnull=True).first()
        AnnotationFactory(item=item, annotator=annotator, label="misgendering")
        changed = report_build(pool=study)
        kept = {name: plots.plot_render_cached(report=changed, name=name, fmt="svg") for name in STUDY_FIGURES}
        assert {"human_vs_heuristic", "label_distribution", "accuracy"} <= set(calls)
        assert not {"prob_vs_gen", "instance_variation", "beta_landscape"} & set(calls)
        for name in STUDY_FIGURES:  # whether kept or redrawn, each is the drawing of the changed report
            assert kept[name] == real(report=changed, name=name, fmt="svg"), name

    def test_a_figure_that_reads_an_undeclared_part_of_the_report_fails(self, report, monkeypatch):
        reads_labels = dataclasses.replace(plots.FIGURES["prob_vs_gen"], draw=lambda part: part["labels"])
        monkeypatch.setitem(plots.FIGURES, "prob_vs_gen", reads_labels)
        with pytest.raises(KeyError, match="'prob_vs_gen' reads 'labels'"):
            plots.plot_render(report=report, name="prob_vs_gen", fmt="svg")
        part = plots.FigureInputs("prob_vs_gen", {"prob_vs_gen": []})
        assert part.get("prob_vs_gen") == [] and "prob_vs_gen" in part
        for read in (lambda: part.get("accuracy"), lambda: "accuracy" in part):
            with pytest.raises(KeyError, match="reads 'accuracy'"):
                read()

    def test_the_page_names_the_version_and_its_plots_need_no_new_report(self, study, client, researcher, monkeypatch):
        client.force_login(researcher)
        page = client.get(reverse("report-detail", args=["study"])).content.decode()
        version = plots.report_version(report=report_build(pool=study))
        url = reverse("report-plot", args=["study", "prob_vs_gen", "svg"]) + f"?v={version}"
        assert url in page

        def no_rebuild(**kwargs):
            raise AssertionError("the plot should come from the cached report")

        monkeypatch.setattr("analysis.views.report_build", no_rebuild)
        response = client.get(url)
        assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
        assert "max-age" in response["Cache-Control"]
        assert client.get(url).content == response.content


class TestPresentation:
    def test_the_page_shows_each_figure_with_a_heading_and_a_caption(self, study, client, researcher):
        client.force_login(researcher)
        page = client.get(reverse("report-detail", args=["study"])).content.decode()
        figures = plots.plot_figures(report=report_build(pool=study))
        assert [f["name"] for f in figures] == [
            n
            for n in plots.FIGURES
            if not n.startswith(("tango_", "distractor_", "judge_", "gifi_")) and n not in VERDICT_FIGURES
        ]
        assert reverse("report-plot", args=["study", "tango_failure_rate", "svg"]) not in page  # no TANGO job
        for figure in figures:
            assert f"<h3>{figure['title']}</h3>" in page
            assert escape(figure["caption"]) in page
            assert reverse("report-plot", args=["study", figure["name"], "png"]) in page

    def test_tables_have_human_headings_and_intervals_in_brackets(self, study, client, researcher):
        client.force_login(researcher)
        page = client.get(reverse("report-detail", args=["study"])).content.decode()
        assert "<h2>Inter-annotator agreement (every pair of annotations)</h2>" in page
        assert "<h2>Inter-annotator agreement (all raters)</h2>" in page
        assert "<td>misgendering or not</td>" in page and "<td>pronoun_binary</td>" not in page
        assert "<h2>Probability vs generation</h2>" in page
        assert "<h2>Annotator quality</h2>" in page
        assert ">κ 95% CI</th>" in page and "kappa_ci_low" not in page
        intervals = re.findall(r'<td class="num">(\[-?\d\.\d{3}, -?\d\.\d{3}\])</td>', page)
        assert intervals, "no [low, high] interval on the page"

    def test_the_html_export_inlines_every_figure_as_svg_with_a_png(self, study, client, researcher):
        client.force_login(researcher)
        html = client.get(reverse("report-export", args=["study", "html"])).content.decode()
        figures = plots.plot_figures(report=report_build(pool=study))
        assert html.count("<svg") == len(figures)
        assert html.count("data:image/png;base64,") == len(figures)
        for figure in figures:
            assert f'id="plot-{figure["name"]}"' in html and figure["title"] in html
