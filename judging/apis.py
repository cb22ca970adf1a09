"""The judge API, for researchers: `GET /api/pools/{name}/judges/` (the pool's runs),
`GET /api/pools/{name}/judges/{run}/labels/?format=csv|jsonl` (one row per item), `GET /api/generation-jobs/{id}/judges/`
(the runs over a generation job) and `GET /api/judge-runs/{run}/labels/?format=csv|jsonl[&pool=NAME]` (one row per
judged generation, as `export_judge_labels` writes them)."""

from __future__ import annotations

from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsResearcher
from annotation.access import pool_visible_or_404, pools_visible_to
from common.openapi import FILE_FORMAT, FILE_RESPONSES, Detail
from common.renderers import CONTENT_TYPES, CsvRenderer, JsonLinesRenderer
from generation.models import Job
from judging.exports import generation_labels_export, labels_export
from judging.models import JudgeMode, JudgeRun
from judging.selectors import job_runs, pool_runs


class RunSerializer(serializers.ModelSerializer):
    judge = serializers.CharField(source="judge.name")
    version = serializers.IntegerField(source="judge.version")
    origin = serializers.CharField(source="judge.origin")
    model = serializers.CharField(source="judge.model.name")
    state = serializers.CharField()
    labels = serializers.IntegerField(source="labels.count")
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    source_job = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    # The run's parameters, read from its job (JudgeRun's properties).
    mode = serializers.ChoiceField(choices=JudgeMode.choices, read_only=True)
    k = serializers.IntegerField(read_only=True)
    temperature = serializers.FloatField(read_only=True)
    seed = serializers.IntegerField(read_only=True)
    total_items = serializers.IntegerField(read_only=True)

    class Meta:
        model = JudgeRun
        fields = [
            "id", "judge", "version", "origin", "model", "mode", "state", "k", "temperature", "seed",
            "total_items", "labels", "created_at", "pool", "source_job",
        ]  # fmt: skip


class PoolJudgeRunsApi(APIView):
    """The pool's judge runs, oldest first (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message

    @extend_schema(responses={200: RunSerializer(many=True), 404: Detail})
    def get(self, request, name: str):
        pool = pool_visible_or_404(user=request.user, name=name)
        runs = pool_runs(pool=pool).select_related("judge__model")
        return Response(RunSerializer(runs, many=True).data)


class JobJudgeRunsApi(APIView):
    """The runs over a generation job's generations, oldest first (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(responses={200: RunSerializer(many=True), 404: Detail})
    def get(self, request, job_id: int):
        job = get_object_or_404(Job, pk=job_id)
        # A run over a pool of another project is that project's (annotation.access): left out.
        runs = job_runs(job=job).select_related("judge__model", "pool")
        runs = runs.filter(Q(pool__isnull=True) | Q(pool__in=pools_visible_to(user=request.user)))
        return Response(RunSerializer(runs, many=True).data)


class _LabelFileApi(APIView):
    """A file of machine labels, CSV or JSON lines (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]
    renderer_classes = [CsvRenderer, JsonLinesRenderer]

    def handle_exception(self, exc):
        """Errors (401, 403, 404, an unknown format) answer in JSON, like every other endpoint."""
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class JudgeRunLabelsApi(_LabelFileApi):
    """One row per labelled item of a run: item, origin, label, confidence, prompt, options, score_<label>."""

    @extend_schema(
        description="One row per item: item, origin, label, confidence, prompt (the exact text scored), options "
        "(JSON: label -> option text) and score_<label> per option.",
        parameters=[FILE_FORMAT],
        responses=FILE_RESPONSES,
    )
    def get(self, request, name: str, run: int):
        pool = pool_visible_or_404(user=request.user, name=name)
        run_row = get_object_or_404(JudgeRun.objects.select_related("judge"), pk=run, pool=pool)
        fmt = request.accepted_renderer.format
        response = HttpResponse(labels_export(run=run_row, fmt=fmt), content_type=CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{pool.name}-judge-{run_row.pk}.{fmt}"'
        return response


class RunLabelsApi(_LabelFileApi):
    """One row per judged generation of a run (a pool run: per item): generation, model, dataset, setting, pronoun,
    context, sample_index, item, label, confidence, prob_<label>, score_<label>. `?pool=NAME` fills `item` from that
    pool only."""

    @extend_schema(
        description="One row per judged generation (a pool run: per item): generation, model, dataset, setting, "
        "pronoun, context, sample_index, item (the study item showing it in `pool`, or in any pool, joined by ';'), "
        "label, confidence, prob_<label> (softmax share or vote share) and score_<label> per option.",
        parameters=[FILE_FORMAT, OpenApiParameter("pool", str, description="fill `item` from this pool only")],
        responses=FILE_RESPONSES,
    )
    def get(self, request, run: int):
        run_row = get_object_or_404(JudgeRun.objects.select_related("judge", "pool"), pk=run)
        if run_row.pool is not None:
            pool_visible_or_404(user=request.user, name=run_row.pool.name)  # a run over another project's pool: 404
        pool = None
        if request.query_params.get("pool"):
            pool = pool_visible_or_404(user=request.user, name=request.query_params["pool"])
        fmt = request.accepted_renderer.format
        response = HttpResponse(
            generation_labels_export(run=run_row, fmt=fmt, pool=pool, pools=pools_visible_to(user=request.user)),
            content_type=CONTENT_TYPES[fmt],
        )
        response["Content-Disposition"] = f'attachment; filename="judge-run-{run_row.pk}.{fmt}"'
        return response
