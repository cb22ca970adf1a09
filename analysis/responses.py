"""HTTP responses for report exports, shared by the pages and the API (both through `exports.report_render`)."""

from __future__ import annotations

from django.http import Http404, HttpResponse

from analysis import exports


def report_download(*, report: dict, fmt: str, table: str | None = None) -> HttpResponse:
    """The report as an attachment: json, html, latex, or csv (a zip of every table, or one table's CSV); 404 for a
    format or table that does not exist."""
    try:
        rendered = exports.report_render(report=report, fmt=fmt, table=table or None)
    except exports.ReportFormatError as error:
        raise Http404(str(error)) from error
    response = HttpResponse(rendered.body, content_type=rendered.content_type)
    response["Content-Disposition"] = f'attachment; filename="{rendered.filename}"'
    return response
