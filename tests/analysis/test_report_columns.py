"""A report column is declared once (a `Column` on its table's declaration, analysis/report/table.py): a column added
to a declaration, with a selector that fills it, is in the JSON report, the CSV file (its header too while the table
is empty), the page's HTML under its title and the table's LaTeX table in its LaTeX form."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json

import pytest

from analysis.report.exports.csv import report_csv
from analysis.report.exports.html import report_html
from analysis.report.exports.latex import report_latex
from analysis.report.exports.render import report_render
from analysis.report.table import Column, Table, Tex
from analysis.report.tables import TABLES_BY_KEY
from analysis.services import report_build_uncached
from tests.analysis.factories import study_build

pytestmark = pytest.mark.filterwarnings("ignore")

TITLE = "share repeated twice"  # on no other column of the report
HEADING = "Twice repeated"


@contextlib.contextmanager
def _declared(table: Table, **fields):
    """The declaration `table` with `fields` changed, for every reader of the declarations, while the block runs."""
    before = {name: getattr(table, name) for name in fields}
    try:
        for name, value in fields.items():
            object.__setattr__(table, name, value)
        table.__dict__.pop("_own", None)
        yield
    finally:
        for name, value in before.items():
            object.__setattr__(table, name, value)
        table.__dict__.pop("_own", None)


def _twice(rows: list[dict]) -> list[dict]:
    """What a new metric's selector would add: a figure per row (here half the row's repetition rate)."""
    return [{**row, "twice": row["mean"] / 2} for row in rows]


def _exports(report: dict) -> tuple[dict, list[list[str]], str, str]:
    body = json.loads(report_render(report=report, fmt="json").body)
    table = list(csv.reader(io.StringIO(report_csv(report=report, table="repetition"))))
    return body, table, report_html(report=report), report_latex(report=report, table="repetition")


def test_a_column_added_to_a_declaration_is_in_the_json_csv_html_and_latex(annotator, second_annotator):
    pool = study_build(ana=annotator, bo=second_annotator)
    table = TABLES_BY_KEY["repetition"]
    build = table.build
    assert build is not None
    column = Column("twice", TITLE, latex=Tex(HEADING, lambda row: f"{row['twice']:.4f}"))
    with _declared(table, columns=(*table.columns, column), build=lambda r: _twice(build(r))):
        report = report_build_uncached(pool=pool)
        body, rows, html, latex = _exports(report)
        empty = report_csv(report={**report, "repetition": []}, table="repetition")
    means = [row["mean"] for row in report["repetition"]]
    assert means, "the study has a generation job, so repetition rows"
    # JSON: each row holds the figure its selector made
    assert [row["twice"] for row in body["repetition"]] == pytest.approx([m / 2 for m in means])
    # CSV: the column after the declared ones, each row's figure in it; and in the empty file's header
    assert rows[0][-1] == "twice" and [float(row[-1]) for row in rows[1:]] == pytest.approx([m / 2 for m in means])
    assert empty.splitlines()[0] == "model,dataset,setting,pronoun,mean,std,n,twice"
    # HTML: under its title, to 3 decimals
    assert f'<th scope="col">{TITLE}</th>' in html
    assert all(f'<td class="num">{m / 2:.3f}</td>' in html for m in means)
    # LaTeX: its heading last in the header row, each row's cell in its LaTeX form
    header = next(line for line in latex.splitlines() if line.startswith("Model &"))
    assert header == rf"Model & Dataset & Setting & Pronoun & Generations & Repetition rate & {HEADING} \\"
    assert all(f"& {m / 2:.4f} \\\\" in latex for m in means)

    # Without the declared column the same rows have no title, no LaTeX column and no place in the empty header.
    report = report_build_uncached(pool=pool)
    body, rows, html, latex = _exports(report)
    assert "twice" not in body["repetition"][0] and "twice" not in rows[0]
    assert TITLE not in html and HEADING not in latex


def test_a_declared_columns_forms_follow_its_kind_unless_it_says_otherwise():
    assert Column("x", "x").html_cell(0.12345) == "0.123" and Column("x", "x").html_cell(float("nan")) == "—"
    assert Column("x", "x", kind="label").html_cell("no_pronoun") == "no pronoun"
    assert Column("x", "x", html=lambda v: f"<{v}>").html_cell(1) == "<1>"
    assert Column("x", "x", kind="number").latex_cell({"x": 0.5}) == "0.500"
    assert Column("x", "x", kind="count").latex_cell({"x": 12}) == "12"
    assert Column("x", "x", kind="interval").csv_keys == ("x_low", "x_high")
    seconds = TABLES_BY_KEY["annotator_quality"].column("median_seconds")
    assert seconds is not None and seconds.csv_value(2.3456789) == 2.346
    assert dataclasses.replace(seconds, csv=None).csv_value(2.3456789) == 2.3456789
