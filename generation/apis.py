"""REST API for generation jobs. Researchers (and admins) read; only admins queue and cancel."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsAdmin, IsResearcher
from generation.contexts import ALL_SETTINGS
from generation.models import DEFAULT_MODEL_NAME, JOB_DEFAULTS, GenerationJob
from generation.pronouns import BASES
from generation.selectors import job_get, job_list, job_resumable, job_timing
from generation.services.jobs import (
    JobParameterError,
    JobStateError,
    job_cancel,
    job_create,
    job_parameters_validate,
    job_resume,
)


class JobOutputSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model.name")
    dataset = serializers.CharField(source="dataset.name")
    progress = serializers.SerializerMethodField()
    elapsed_seconds = serializers.SerializerMethodField()
    eta_seconds = serializers.SerializerMethodField()
    resumable = serializers.SerializerMethodField()

    class Meta:
        model = GenerationJob
        fields = [
            "id",
            "model",
            "dataset",
            "pronouns",
            "settings",
            "samples",
            "max_new_tokens",
            "top_k",
            "top_p",
            "num_beams",
            "seed",
            "per_pronoun",
            "status",
            "total_instances",
            "done_instances",
            "total_generations",
            "done_generations",
            "progress",
            "elapsed_seconds",
            "eta_seconds",
            "resumes",
            "resumable",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_progress(self, job: GenerationJob) -> float:
        return job.done_generations / job.total_generations if job.total_generations else 0.0

    def get_elapsed_seconds(self, job: GenerationJob) -> float | None:
        seconds = job_timing(job=job).elapsed_seconds
        return None if seconds is None else round(seconds, 1)

    def get_eta_seconds(self, job: GenerationJob) -> float | None:
        seconds = job_timing(job=job).eta_seconds
        return None if seconds is None else round(seconds, 1)

    def get_resumable(self, job: GenerationJob) -> bool:
        return job_resumable(job=job)


def _not_found(job_id: int) -> Response:
    return Response({"detail": f"no generation job {job_id}"}, status=status.HTTP_404_NOT_FOUND)


class JobListCreateApi(APIView):
    """GET: every job, newest first (researcher). POST: queue a job (admin)."""

    class InputSerializer(serializers.Serializer):
        model = serializers.CharField(default=DEFAULT_MODEL_NAME)
        dataset = serializers.CharField()
        pronouns = serializers.ListField(child=serializers.ChoiceField(choices=BASES), required=False)
        settings = serializers.ListField(child=serializers.ChoiceField(choices=ALL_SETTINGS), required=False)
        samples = serializers.IntegerField(default=JOB_DEFAULTS.samples)
        max_new_tokens = serializers.IntegerField(default=JOB_DEFAULTS.max_new_tokens)
        top_k = serializers.IntegerField(default=JOB_DEFAULTS.top_k)
        top_p = serializers.FloatField(default=JOB_DEFAULTS.top_p)
        num_beams = serializers.IntegerField(default=JOB_DEFAULTS.num_beams)
        seed = serializers.IntegerField(default=JOB_DEFAULTS.seed)
        per_pronoun = serializers.IntegerField(required=False, allow_null=True, default=None)

    def get_permissions(self):
        role = IsAdmin if self.request.method == "POST" else IsResearcher
        return [IsAuthenticated(), role()]

    def get(self, request):
        return Response(JobOutputSerializer(job_list()[:200], many=True).data)

    def post(self, request):
        parameters, errors = self._parse(request.data)
        try:  # the ranges and names of every field that parsed, so that all errors come back at once
            job_parameters_validate(**{"model": "", "dataset": "", **parameters})
        except JobParameterError as exc:
            errors.update({field: [message] for field, message in exc.errors.items() if field not in errors})
        if errors:
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            job = job_create(created_by=request.user, **parameters)
        except JobParameterError as exc:
            return Response({field: [message] for field, message in exc.errors.items()}, status=400)
        return Response(JobOutputSerializer(job).data, status=status.HTTP_201_CREATED)

    def _parse(self, data) -> tuple[dict, dict]:
        """Each field on its own: the values that parse, and the errors of those that do not."""
        if not hasattr(data, "get"):
            return {}, {"non_field_errors": ["send a JSON object of job parameters"]}
        parameters, errors = {}, {}
        for name, field in self.InputSerializer().fields.items():
            try:
                value = field.run_validation(field.get_value(data))
            except serializers.ValidationError as exc:
                errors[name] = exc.detail
            except serializers.SkipField:
                continue
            else:
                parameters[name] = value
        return parameters, errors


class JobDetailApi(APIView):
    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message

    def get(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        return Response(JobOutputSerializer(job).data)


class JobCancelApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]  # a list keeps the role's message

    def post(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        try:
            job = job_cancel(job=job)
        except JobStateError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(JobOutputSerializer(job_get(job_id=job.pk)).data)


class JobResumeApi(APIView):
    """Admins resume a job that did not finish (409 for a finished one)."""

    permission_classes = [IsAuthenticated, IsAdmin]  # a list keeps the role's message

    def post(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        try:
            job_resume(job_id=job.pk)
        except JobStateError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(JobOutputSerializer(job_get(job_id=job.pk)).data)
