"""`GET /api/reports/{pool}/?format=json|csv|html|latex[&table=NAME][&seed=N]` for researchers."""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsResearcher
from analysis.responses import report_download
from analysis.selectors.examples import EXAMPLES_SEED
from analysis.selectors.quality import quality_dashboard
from analysis.services import report_build
from annotation.models import Pool


class _PassthroughRenderer(BaseRenderer):
    """Lets `?format=...` pass DRF's content negotiation; the view returns the rendered bytes itself. Errors (400,
    403, 404) still come as DRF's data, which is written as JSON."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, bytes | str):
            return data
        return json.dumps(data).encode()


class CsvRenderer(_PassthroughRenderer):
    media_type = "text/csv"
    format = "csv"


class LatexRenderer(_PassthroughRenderer):
    media_type = "application/x-tex"
    format = "latex"


class HtmlRenderer(_PassthroughRenderer):
    media_type = "text/html"
    format = "html"


def _seed(raw: str | None) -> int:
    if raw is None or raw == "":
        return EXAMPLES_SEED
    try:
        return int(raw)
    except ValueError:
        raise ValidationError({"seed": [f"{raw!r} is not an integer."]}) from None


class ReportApi(APIView):
    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message
    renderer_classes = [JSONRenderer, CsvRenderer, LatexRenderer, HtmlRenderer]

    def get(self, request, pool: str):
        pool_row = get_object_or_404(Pool, name=pool)
        fmt = request.accepted_renderer.format
        report = report_build(pool=pool_row, examples_seed=_seed(request.query_params.get("seed")))
        response = report_download(report=report, fmt=fmt, table=request.query_params.get("table"))
        if fmt == "json":
            del response["Content-Disposition"]
        return response


class PoolQualityApi(APIView):
    """`GET /api/pools/{name}/quality/`: the quality dashboard's data as JSON (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message

    def get(self, request, name: str):
        pool_row = get_object_or_404(Pool, name=name)
        return Response(quality_dashboard(pool=pool_row))
