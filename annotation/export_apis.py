"""`GET /api/pools/{name}/annotations/?format=csv|jsonl`: the raw export of a pool's annotations, for researchers."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from accounts.roles import IsResearcher
from annotation.access import pool_visible_or_404
from annotation.services.export import annotations_export_stream
from common.openapi import FILE_FORMAT, FILE_RESPONSES
from common.renderers import CONTENT_TYPES, CsvRenderer, JsonLinesRenderer


class PoolAnnotationsExportApi(APIView):
    """`GET /api/pools/{name}/annotations/?format=csv|jsonl`: every annotation of the pool, one row each, with its
    item, the adjudicated values and the heuristic verdict (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]
    renderer_classes = [CsvRenderer, JsonLinesRenderer]

    def handle_exception(self, exc):
        """Errors (401, 403, 404, an unknown format) answer in JSON, like every other endpoint, not as CSV text."""
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response

    @extend_schema(parameters=[FILE_FORMAT], responses=FILE_RESPONSES)
    def get(self, request, name: str):
        pool = pool_visible_or_404(user=request.user, name=name)
        fmt = request.accepted_renderer.format
        # Streamed: a crowd-sized pool's export (hundreds of thousands of rows) is sent as it is read.
        response = StreamingHttpResponse(annotations_export_stream(pool=pool, fmt=fmt), content_type=CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{pool.name}-annotations.{fmt}"'
        return response
