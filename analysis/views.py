"""Report pages for researchers: an index of pools, a pool's report, its downloads and its plots."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from accounts.roles import RESEARCHER, role_required
from analysis.exports import report_tables_for_display
from analysis.plots import FORMATS as PLOT_FORMATS
from analysis.plots import PLOTS, plot_render
from analysis.responses import report_download
from analysis.selectors.report import pool_list_for_reports
from analysis.services import report_build
from annotation.models import Pool


@role_required(RESEARCHER)
def report_index(request: HttpRequest) -> HttpResponse:
    return render(request, "analysis/report_index.html", {"pools": pool_list_for_reports()})


@role_required(RESEARCHER)
def report_detail(request: HttpRequest, pool: str) -> HttpResponse:
    pool_row = get_object_or_404(Pool, name=pool)
    report = report_build(pool=pool_row)
    context = {
        "pool": pool_row,
        "report": report,
        "tables": report_tables_for_display(report=report),
        "plots": list(PLOTS),
    }
    return render(request, "analysis/report_detail.html", context)


@role_required(RESEARCHER)
def report_export(request: HttpRequest, pool: str, fmt: str) -> HttpResponse:
    pool_row = get_object_or_404(Pool, name=pool)
    return report_download(report=report_build(pool=pool_row), fmt=fmt, table=request.GET.get("table"))


@role_required(RESEARCHER)
def report_plot(request: HttpRequest, pool: str, name: str, fmt: str) -> HttpResponse:
    if name not in PLOTS or fmt not in PLOT_FORMATS:
        raise Http404("No such plot.")
    pool_row = get_object_or_404(Pool, name=pool)
    image = plot_render(report=report_build(pool=pool_row), name=name, fmt=fmt)
    response = HttpResponse(image, content_type=PLOT_FORMATS[fmt])
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{pool_row.name}-{name}.{fmt}"'
    return response
