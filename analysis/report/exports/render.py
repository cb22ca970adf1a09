"""The one dispatch from a format (and an optional table) to a body, a content type and a file name: the `report`
command, the page's downloads and the API all call `report_render`."""

from __future__ import annotations

import json
from dataclasses import dataclass

from analysis.report.exports.csv import CSV_TABLES, report_csv, report_csv_zip, report_table_rows
from analysis.report.exports.html import report_html
from analysis.report.exports.latex import LATEX_TABLES, METHODS, report_latex
from analysis.report.parts import clean

FORMATS = ["json", "csv", "html", "latex"]
CONTENT_TYPES = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "zip": "application/zip",
    "html": "text/html; charset=utf-8",
    "latex": "application/x-tex; charset=utf-8",
}


class ReportFormatError(ValueError):
    """An unknown format, or a table the format cannot give on its own."""


def report_json(*, report: dict) -> str:
    return json.dumps(clean(report), indent=2, allow_nan=False)


@dataclass(frozen=True)
class Rendered:
    body: str | bytes
    content_type: str
    filename: str


def report_tables_for(fmt: str) -> list[str]:
    """The tables a format can give on its own (`--table`, `?table=`)."""
    return {"csv": CSV_TABLES, "json": CSV_TABLES, "latex": [*LATEX_TABLES, METHODS]}.get(fmt, [])


def report_render(*, report: dict, fmt: str, table: str | None = None) -> Rendered:
    """The report in one format: json, csv (a zip of every table, or one table), html, or latex (every main table, or
    one). Raises ReportFormatError naming the format or table it cannot give."""
    name = report["pool"]
    if fmt not in FORMATS:
        raise ReportFormatError(f"Unknown format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    if table is not None and table not in report_tables_for(fmt):
        choices = report_tables_for(fmt)
        raise ReportFormatError(
            f"The {fmt} format has no table {table!r}"
            + (f"; choose one of {', '.join(choices)}." if choices else "; it only comes whole.")
        )
    if fmt == "csv":
        if table:
            return Rendered(report_csv(report=report, table=table), CONTENT_TYPES["csv"], f"{name}-{table}.csv")
        return Rendered(report_csv_zip(report=report), CONTENT_TYPES["zip"], f"{name}-report.zip")
    if fmt == "json":
        if table:
            body = json.dumps(
                clean({"pool": name, "table": table, "rows": report_table_rows(report=report, table=table)}),
                indent=2,
                allow_nan=False,
            )
            return Rendered(body, CONTENT_TYPES["json"], f"{name}-{table}.json")
        return Rendered(report_json(report=report), CONTENT_TYPES["json"], f"{name}-report.json")
    if fmt == "html":
        return Rendered(report_html(report=report), CONTENT_TYPES["html"], f"{name}-report.html")
    suffix = f"-{table}" if table else "-report"
    return Rendered(report_latex(report=report, table=table), CONTENT_TYPES["latex"], f"{name}{suffix}.tex")
