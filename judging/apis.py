"""The judge API, for researchers: `GET /api/pools/{name}/judges/` (the pool's runs) and
`GET /api/pools/{name}/judges/{run}/labels/?format=csv|jsonl` (one row per item)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsResearcher
from annotation.models import Pool
from common.renderers import CONTENT_TYPES, CsvRenderer, JsonLinesRenderer
from judging.exports import labels_export
from judging.models import JudgeRun
from judging.selectors import pool_runs


class RunSerializer(serializers.ModelSerializer):
    judge = serializers.CharField(source="judge.name")
    version = serializers.IntegerField(source="judge.version")
    origin = serializers.CharField(source="judge.origin")
    model = serializers.CharField(source="judge.model.name")
    state = serializers.CharField()
    labels = serializers.IntegerField(source="labels.count")

    class Meta:
        model = JudgeRun
        fields = [
            "id", "judge", "version", "origin", "model", "mode", "state", "k", "temperature", "seed",
            "total_items", "labels", "created_at",
        ]  # fmt: skip


class PoolJudgeRunsApi(APIView):
    """The pool's judge runs, oldest first (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message

    def get(self, request, name: str):
        pool = get_object_or_404(Pool, name=name)
        runs = pool_runs(pool=pool).select_related("judge__model")
        return Response(RunSerializer(runs, many=True).data)


class JudgeRunLabelsApi(APIView):
    """One row per labelled item of a run: item, origin, label, confidence, prompt, options, score_<label>."""

    permission_classes = [IsAuthenticated, IsResearcher]
    renderer_classes = [CsvRenderer, JsonLinesRenderer]

    def handle_exception(self, exc):
        """Errors (401, 403, 404, an unknown format) answer in JSON, like every other endpoint."""
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response

    def get(self, request, name: str, run: int):
        pool = get_object_or_404(Pool, name=name)
        run_row = get_object_or_404(JudgeRun.objects.select_related("judge"), pk=run, pool=pool)
        fmt = request.accepted_renderer.format
        response = HttpResponse(labels_export(run=run_row, fmt=fmt), content_type=CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{pool.name}-judge-{run_row.pk}.{fmt}"'
        return response
