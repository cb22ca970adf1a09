"""HTTP responses for report exports, shared by the pages and the API."""

from __future__ import annotations

from django.http import Http404, HttpResponse

from analysis import exports

CONTENT_TYPES = {
    "json": "application/json",
    "html": "text/html; charset=utf-8",
    "latex": "application/x-tex; charset=utf-8",
}


def report_download(*, report: dict, fmt: str, table: str | None = None) -> HttpResponse:
    """The report as an attachment: json, html, latex, or csv (a zip of every table, or one table's CSV)."""
    name = report["pool"]
    if fmt == "csv":
        if table:
            if table not in exports.CSV_TABLES:
                raise Http404("No such table.")
            response = HttpResponse(
                exports.report_csv(report=report, table=table), content_type="text/csv; charset=utf-8"
            )
            response["Content-Disposition"] = f'attachment; filename="{name}-{table}.csv"'
            return response
        response = HttpResponse(exports.report_csv_zip(report=report), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{name}-report.zip"'
        return response
    if fmt == "json":
        body = exports.report_json(report=report)
    elif fmt == "html":
        body = exports.report_html(report=report)
    elif fmt == "latex":
        body = exports.report_latex(report=report)
    else:
        raise Http404("No such format.")
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    extension = {"latex": "tex"}.get(fmt, fmt)
    response["Content-Disposition"] = f'attachment; filename="{name}-report.{extension}"'
    return response
