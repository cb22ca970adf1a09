"""The report's tables as the page and the standalone HTML show them (headers and rows of strings), and the
standalone HTML page itself: inline CSS, the plots as embedded SVG, every table."""

from __future__ import annotations

from django.template.loader import render_to_string

from analysis.plots import report_figures_inline
from analysis.report.exports.csv import report_table_rows
from analysis.report.parts import clean, label_titles
from analysis.report.table import Column
from analysis.report.tables import TABLES
from analysis.selectors.active import budget_sentences
from analysis.selectors.verdict import NOTE as VERDICT_NOTE
from analysis.selectors.verdict import verdict_page_rows


def report_html(*, report: dict) -> str:
    """A standalone page: inline CSS, the plots as embedded SVG, every table."""
    return render_to_string(
        "analysis/report_standalone.html",
        {
            "report": clean(report),
            "plots": report_figures_inline(report=report),
            "tables": report_tables_for_display(report=report),
            "verdicts": verdict_page_rows(report=report),
            "budget_sentences": budget_sentences(report=report),
            "verdict_note": VERDICT_NOTE,
        },
    )


def report_tables_for_display(*, report: dict) -> list[dict]:
    """The tables shown as plain tables, as headers + rows of strings, for the page and the standalone HTML."""
    tables = []
    titles = label_titles(report)  # columns named by a label's key read as the label as written
    for table in TABLES:
        if not table.shown:
            continue
        rows = report_table_rows(report=report, table=table.key)
        columns: list[str] = []
        for row in rows:
            columns += [key for key in row if key not in columns]
        # Each cell in its column's HTML form (a label with one spelling everywhere: "no pronoun").
        forms = [(c, table.column(c) or Column(c, c)) for c in columns]
        tables.append(
            {
                "name": table.key,
                "columns": columns,
                "rows": [[column.html_cell(row.get(c)) for c, column in forms] for row in rows],
                "fills": table.fills(report),
                "titles": {c: titles[c] for c in columns if c in titles},
            }
        )
    return tables
