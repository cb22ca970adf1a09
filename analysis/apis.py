"""`GET /api/reports/{pool}/?format=json|csv[&table=NAME]` for researchers."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import APIView

from accounts.roles import IsResearcher
from analysis.responses import report_download
from analysis.services import report_build
from annotation.models import Pool


class CsvRenderer(BaseRenderer):
    """Lets `?format=csv` pass DRF's content negotiation; the view returns the bytes itself."""

    media_type = "text/csv"
    format = "csv"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data


class ReportApi(APIView):
    permission_classes = [IsAuthenticated & IsResearcher]
    renderer_classes = [JSONRenderer, CsvRenderer]

    def get(self, request, pool: str):
        pool_row = get_object_or_404(Pool, name=pool)
        fmt = "csv" if request.accepted_renderer.format == "csv" else "json"
        response = report_download(report=report_build(pool=pool_row), fmt=fmt, table=request.query_params.get("table"))
        if fmt == "json":
            del response["Content-Disposition"]
        return response
