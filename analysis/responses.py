"""HTTP responses for report exports, shared by the pages and the API (both through `report_render`, analysis/report/exports/render.py)."""

from __future__ import annotations

from django.http import Http404, HttpResponse

from analysis.report.exports.render import ReportFormatError, report_render


def report_download(*, report: dict, fmt: str, table: str | None = None) -> HttpResponse:
    """The report as an attachment: json, html, latex, or csv (a zip of every table, or one table's CSV); 404 for a
    format or table that does not exist."""
    try:
        rendered = report_render(report=report, fmt=fmt, table=table or None)
    except ReportFormatError as error:
        raise Http404(str(error)) from error
    response = HttpResponse(rendered.body, content_type=rendered.content_type)
    response["Content-Disposition"] = f'attachment; filename="{rendered.filename}"'
    return response
