"""The one export dispatch, LaTeX escaping and spreadsheet-safe CSV for every report format and entry point."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.report.exports.csv import CSV_TABLES, report_csv
from analysis.report.exports.html import report_html
from analysis.report.exports.latex import report_latex
from analysis.report.exports.render import ReportFormatError, report_render
from analysis.report.exports.tex import Latex, latex_escape, latex_join, latex_table
from analysis.services import report_build
from tests.factories import AnnotationFactory, PoolItemFactory

HOSTILE = r"=cmd|' /C calc'!A0 \ { } $ & # ^ _ ~ % done"


@pytest.fixture
def study(module_study):
    """The hand-built study, built once for the module (tests/analysis/conftest.py)."""
    return module_study


@pytest.fixture
def hostile(study, annotator):
    """An item whose model name, context and continuation carry every LaTeX special and a spreadsheet formula."""
    return _hostile_item(study, annotator)


@pytest.fixture
def study_report(once, study):
    """The report of the module's study, built once per module (tests that only read it)."""
    return once("study", lambda: report_build(pool=study))


@pytest.fixture
def hostile_report(once, study, annotator):
    """The report of the study with the hostile item, built once per module (tests that only read it)."""
    return once("hostile", lambda: report_build(pool=_hostile_item(study, annotator).pool))


def _hostile_item(study, annotator):
    item = PoolItemFactory(
        pool=study,
        model_name="=HYPERLINK(evil)_m#1",
        pronoun="xe",
        heuristic_correct=True,
        context="Robin $5 & 50% {cost}: ",
        continuation=" xe paid \\ the ~fee^2 #now_",
        first_pronoun="xe",
    )
    AnnotationFactory(item=item, annotator=annotator, label="misgendering", extraneous=True)
    return item


class TestLatexEscape:
    @pytest.mark.parametrize(
        "text, escaped",
        [
            ("\\", r"\textbackslash{}"),
            ("{", r"\{"),
            ("}", r"\}"),
            ("$", r"\$"),
            ("&", r"\&"),
            ("#", r"\#"),
            ("^", r"\textasciicircum{}"),
            ("_", r"\_"),
            ("~", r"\textasciitilde{}"),
            ("%", r"\%"),
            ("plain text 0.25", "plain text 0.25"),
        ],
    )
    def test_it_escapes_each_special_character(self, text, escaped):
        assert latex_escape(text) == escaped

    def test_it_escapes_in_one_pass_so_an_escape_is_never_escaped_again(self):
        assert latex_escape(r"\{50%}") == r"\textbackslash{}\{50\%\}"

    def test_markup_written_by_the_exporter_passes_through(self):
        assert latex_escape(Latex(r"$\pm$")) == r"$\pm$"
        assert latex_join("a_b ", Latex(r"\textbf{x}")) == r"a\_b \textbf{x}"


class TestLatexExport:
    def test_every_cell_is_escaped(self, hostile_report):
        tex = report_latex(report=hostile_report)
        expected = (
            # one examples table per dataset x setting: the cell is in the caption, not a column
            r"=HYPERLINK(evil)\_m\#1 & xe & \textbf{Robin \$5 \& 50\% \{cost\}: } \underline{xe} paid "
            r"\textbackslash{} the \textasciitilde{}fee\textasciicircum{}2 \#now\_ & misgendering & correct \\"
        )
        assert expected in tex.splitlines()
        assert r"=HYPERLINK(evil)\_m\#1 & misgendered & pre & xe" in tex  # the accuracy and other cell tables

    def test_the_header_and_caption_are_escaped_too(self):
        tex = latex_table("50% of a_b & c", ["x_y", "#"], [["1"]])
        assert r"\caption{50\% of a\_b \& c}" in tex
        assert r"x\_y & \# \\" in tex

    def test_the_examples_table_underlines_the_first_pronoun(self, hostile_report):
        tex = report_latex(report=hostile_report, table="examples")
        assert r"\underline{xe} paid" in tex
        assert tex.count(r"\begin{tabular}") == 2
        assert "seed 131719" in tex

    def test_the_examples_table_prints_dashes_where_a_model_has_none(self, study):
        tex = report_latex(report=report_build(pool=study), table="examples")
        # the study's extraneous items: xe item 2 and he item 6; disagreements: xe item 2 and he item 5 -> no dashes
        assert "---" not in tex
        PoolItemFactory(pool=study, model_name="m9", pronoun="xe")
        item = PoolItemFactory(pool=study, model_name="m9", pronoun="xe", heuristic_correct=True)
        AnnotationFactory(item=item, annotator=study.items.first().annotations.first().annotator, label="correct")
        tex = report_latex(report=report_build(pool=study), table="examples")
        assert re.search(r"m9 & --- & --- & --- & --- \\\\", tex)

    def test_a_kappa_without_an_interval_reads_undefined(self, study_report):
        report = study_report
        report["prob_vs_gen"][0].update(kappa=0.0, kappa_ci=None)
        assert "0.000 [undefined]" in report_latex(report=report, table="prob_vs_gen")

    def test_a_prob_vs_gen_kappa_interval_wider_than_minus_one_to_one_is_marked_in_latex_and_on_the_page(
        self, study_report
    ):
        # statsmodels' interval on the one-sided table of n = 2 (m_prob 1, 0 against a constant first sample): kept
        # as the paper computes it, and marked.
        import numpy as np
        from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

        wide = sm_cohens_kappa(np.array([[1], [1]]))
        assert wide.kappa_low < -1 and wide.kappa_upp > 1
        report = study_report
        report["prob_vs_gen"][0].update(n=2, kappa=0.0, kappa_ci=[wide.kappa_low, wide.kappa_upp])
        report["prob_vs_gen"][1:] = [{**report["prob_vs_gen"][0], "pronoun": "he", "kappa_ci": [-0.5, 0.5]}]

        tex = report_latex(report=report, table="prob_vs_gen")
        html = report_html(report=report)

        low, high = f"{wide.kappa_low:.3f}", f"{wide.kappa_upp:.3f}"
        assert f"0.000 [{low}, {high}]$^\\dagger$" in tex
        assert "[-0.500, 0.500]$^\\dagger$" not in tex
        assert "wider than [-1, 1]" in tex
        assert f"[{low}, {high}] †" in html and "[-0.500, 0.500] †" not in html
        assert "† wider than [-1, 1]" in html


class TestSafeCsv:
    def test_report_csv_neutralises_formulas_but_keeps_negative_numbers(self, hostile_report):
        report = hostile_report
        rows = list(csv.DictReader(io.StringIO(report_csv(report=report, table="disagreements"))))
        assert "'=HYPERLINK(evil)_m#1" in {row["model"] for row in rows}
        report["prob_vs_gen"][0]["kappa"] = -0.25
        rows = list(csv.DictReader(io.StringIO(report_csv(report=report, table="prob_vs_gen"))))
        assert rows[0]["kappa"] == "-0.25"

    def test_every_table_of_the_zip_is_safe(self, hostile_report):
        body = report_render(report=hostile_report, fmt="csv").body
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            for name in archive.namelist():
                for row in csv.reader(io.StringIO(archive.read(name).decode())):
                    for cell in row:
                        assert not cell.startswith(("=", "+", "@")) or cell.startswith("'"), (name, cell)


class TestDispatch:
    @pytest.mark.parametrize(
        "fmt, content_type, filename",
        [
            ("json", "application/json", "study-report.json"),
            ("csv", "application/zip", "study-report.zip"),
            ("html", "text/html; charset=utf-8", "study-report.html"),
            ("latex", "application/x-tex; charset=utf-8", "study-report.tex"),
        ],
    )
    def test_it_renders_every_format(self, study_report, fmt, content_type, filename):
        rendered = report_render(report=study_report, fmt=fmt)
        assert (rendered.content_type, rendered.filename) == (content_type, filename)
        assert rendered.body

    def test_it_gives_one_table_in_csv_json_and_latex(self, study_report):
        report = study_report
        assert report_render(report=report, fmt="csv", table="accuracy").body.startswith(
            "model,dataset,setting,pronoun"
        )
        assert json.loads(report_render(report=report, fmt="json", table="accuracy").body)["rows"][0]["model"] == "m1"
        assert r"\begin{tabular}" in report_render(report=report, fmt="latex", table="conflict_rate").body

    @pytest.mark.parametrize("fmt, table", [("pdf", None), ("latex", "label_distribution"), ("html", "accuracy")])
    def test_it_refuses_what_it_cannot_give_naming_it(self, study_report, fmt, table):
        with pytest.raises(ReportFormatError, match=table or fmt):
            report_render(report=study_report, fmt=fmt, table=table)

    def test_the_new_tables_are_csv_tables(self):
        assert {"accuracy", "conflict_rate", "examples"} <= set(CSV_TABLES)


class TestCommandEntryPoint:
    def test_it_writes_the_examples_table_with_a_seed(self, study, tmp_path):
        out = tmp_path / "examples.tex"
        call_command("report", pool="study", format="latex", table="examples", seed=5, out=str(out))
        tex = out.read_text()
        assert tex.count(r"\begin{tabular}") == 2 and "seed 5" in tex

    def test_it_refuses_a_table_the_format_lacks(self, study):
        with pytest.raises(CommandError, match="label_distribution"):
            call_command("report", pool="study", format="latex", table="label_distribution")

    def test_it_writes_the_accuracy_and_conflict_tables_into_the_zip(self, study, tmp_path):
        out = tmp_path / "report.zip"
        call_command("report", pool="study", format="csv", out=str(out))
        with zipfile.ZipFile(out) as archive:
            rows = list(csv.DictReader(io.StringIO(archive.read("study/conflict_rate.csv").decode())))
        assert rows[0]["scope"] == "all" and float(rows[0]["rate"]) == pytest.approx(3 / 8)


class TestWebEntryPoints:
    def test_the_page_export_gives_latex_examples_with_a_seed(self, study, client, researcher):
        client.force_login(researcher)
        response = client.get(reverse("report-export", args=["study", "latex"]) + "?table=examples&seed=3")
        assert response.status_code == 200
        assert "seed 3" in response.content.decode()
        assert response["Content-Disposition"] == 'attachment; filename="study-examples.tex"'

    def test_the_page_export_answers_404_for_an_unknown_format(self, study, client, researcher):
        client.force_login(researcher)
        assert client.get(reverse("report-export", args=["study", "pdf"])).status_code == 404

    @pytest.mark.parametrize("fmt, content_type", [("latex", "application/x-tex"), ("html", "text/html")])
    def test_the_api_gives_latex_and_html(self, study, researcher, api, fmt, content_type):
        api.force_authenticate(researcher)
        response = api.get(f"/api/reports/study/?format={fmt}")
        assert response.status_code == 200 and response["Content-Type"].startswith(content_type)

    def test_the_api_gives_one_latex_table(self, study, researcher, api):
        api.force_authenticate(researcher)
        response = api.get("/api/reports/study/?format=latex&table=examples&seed=9")
        assert response.status_code == 200 and "seed 9" in response.content.decode()

    def test_the_api_refuses_a_bad_seed(self, study, researcher, api):
        api.force_authenticate(researcher)
        response = api.get("/api/reports/study/?seed=abc")
        assert response.status_code == 400 and "seed" in response.json()

    def test_the_api_json_carries_the_new_keys(self, study, researcher, api):
        api.force_authenticate(researcher)
        data = api.get("/api/reports/study/").json()
        assert {"accuracy", "conflict_rate", "examples", "examples_seed"} <= set(data)

    @pytest.mark.parametrize("fmt", ["latex", "html"])
    def test_the_api_refuses_annotators_in_every_format(self, study, annotator, api, fmt):
        api.force_authenticate(annotator)
        assert api.get(f"/api/reports/study/?format={fmt}").status_code == 403
