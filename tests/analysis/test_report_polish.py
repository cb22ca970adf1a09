"""What the report shows when parts are missing, and how it spells things: no empty tables on the page or in the LaTeX (each says what would fill it), CSV headers on empty tables, word headings, one spelling
per label, times to the millisecond, and a beta landscape that draws what it names."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from analysis.plots.figures import beta_landscape
from analysis.report.exports.csv import CSV_TABLES, report_csv
from analysis.report.exports.latex import report_latex
from analysis.services import report_build
from annotation.models import Annotation
from tests.analysis.factories import study_build
from tests.factories import PoolFactory, PoolItemFactory

CELL = {"model": "m1", "dataset": "tango", "setting": "open"}


@pytest.fixture
def empty_report(db):
    return report_build(pool=PoolFactory(name="empty"))


@pytest.fixture
def study(annotator, second_annotator):
    return study_build(ana=annotator, bo=second_annotator)


def test_every_csv_of_an_empty_report_has_its_header(empty_report):
    for table in CSV_TABLES:
        rows = list(csv.reader(io.StringIO(report_csv(report=empty_report, table=table))))
        assert rows and rows[0], f"{table}: no header"
        if table not in {"inter_annotator", "confusion"}:  # one row per measure / label always, counting 0
            assert len(rows) == 1, f"{table}: {rows}"
    header = next(csv.reader(io.StringIO(report_csv(report=empty_report, table="prob_vs_gen"))))
    assert header[:5] == ["model", "dataset", "setting", "pronoun", "n"] and "mcc" in header


def test_the_latex_of_an_empty_report_has_no_empty_table_and_says_what_would_fill_each(empty_report):
    latex = report_latex(report=empty_report)
    assert r"\begin{tabular}" not in latex
    assert "% accuracy: no rows yet; filled by a generation job or annotated items in the pool." in latex
    assert "% inter annotator: no rows yet; filled by items annotated by two people." in latex


def test_the_latex_headings_are_words_and_the_accuracy_table_fits_the_page(study):
    latex = report_latex(report=report_build(pool=study))
    assert "Model & Dataset & Setting & Pronoun & Instances & Probability & Generation" in latex
    assert "model & dataset" not in latex and " & n & " not in latex and "gen (first)" not in latex
    resized = latex.index(r"\resizebox{\linewidth}{!}{%")
    assert resized < latex.index("Instances & Probability") < latex.index("Accuracy per cell")
    for table in re.findall(r"\\begin\{tabular\}.*?\\end\{tabular\}", latex, re.S):
        assert r"\midrule" in table and table.count(r"\\") >= 2, table  # a heading and at least one row


def test_the_report_page_omits_empty_tables_and_lists_what_would_fill_them(client, researcher, db):
    PoolItemFactory(pool=PoolFactory(name="imported-only"))
    client.force_login(researcher)
    page = client.get(reverse("report-detail", args=["imported-only"])).content.decode()
    assert "No rows." not in page
    assert "Not in this report yet" in page
    assert re.search(r"Probability vs generation</strong>: filled by a generation job in the pool", page)


def test_labels_are_spelled_one_way_on_the_report_page(client, researcher, study):
    client.force_login(researcher)
    page = client.get(reverse("report-detail", args=[study.name])).content.decode()
    visible = re.sub(r"<[^>]+>", " ", page)  # attributes and addresses may keep the stored value
    assert "no pronoun" in visible
    assert "no_pronoun" not in visible


def test_times_in_the_report_csv_are_rounded_to_the_millisecond(study):
    Annotation.objects.filter(item__pool=study).update(seconds=2.3456789)
    rows = list(csv.DictReader(io.StringIO(report_csv(report=report_build(pool=study), table="annotator_quality"))))
    assert rows and all(row["median_seconds"] == "2.346" for row in rows)


def _beta_row(pronoun: str, alpha, beta) -> dict:
    return {**CELL, "pronoun": pronoun, "n": 5, "mean": 0.3, "var": 0.01, "alpha": alpha, "beta": beta}


def _legend_texts(figure) -> list[str]:
    return [text.get_text() for legend in figure.legends for text in legend.get_texts()]


def test_a_landscape_without_any_fit_says_why_and_has_no_legend():
    figure = beta_landscape({"beta_disagreement": [_beta_row("he", None, None), _beta_row("xe", None, None)]})
    texts = [text.get_text() for ax in figure.axes for text in ax.texts]
    assert any("No beta fit" in text for text in texts)
    assert _legend_texts(figure) == []


def test_the_landscape_legend_lists_only_what_is_drawn():
    figure = beta_landscape({"beta_disagreement": [_beta_row("he", 2.0, 3.0), _beta_row("xe", None, None)]})
    assert _legend_texts(figure) == ["m1", "he", "α = β", "α = 1, β = 1"]
    drawn = [collection for ax in figure.axes for collection in ax.collections]
    assert len(drawn) == 1  # one point: he; xe has no fit and no legend entry
