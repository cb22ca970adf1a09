"""REST API for generation jobs. Researchers (and admins) read; only admins queue and cancel."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsAdmin, IsResearcher
from generation.contexts import SETTINGS
from generation.models import DEFAULT_MODEL_NAME, GenerationJob
from generation.pronouns import BASES
from generation.selectors import job_get, job_list
from generation.services.jobs import JobParameterError, JobStateError, job_cancel, job_create


class JobOutputSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model.name")
    dataset = serializers.CharField(source="dataset.name")
    progress = serializers.SerializerMethodField()

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
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_progress(self, job: GenerationJob) -> float:
        return job.done_generations / job.total_generations if job.total_generations else 0.0


def _not_found(job_id: int) -> Response:
    return Response({"detail": f"no generation job {job_id}"}, status=status.HTTP_404_NOT_FOUND)


class JobListCreateApi(APIView):
    """GET: every job, newest first (researcher). POST: queue a job (admin)."""

    class InputSerializer(serializers.Serializer):
        model = serializers.CharField(default=DEFAULT_MODEL_NAME)
        dataset = serializers.CharField()
        pronouns = serializers.ListField(child=serializers.ChoiceField(choices=BASES), required=False)
        settings = serializers.ListField(child=serializers.ChoiceField(choices=SETTINGS), required=False)
        samples = serializers.IntegerField(default=5)
        max_new_tokens = serializers.IntegerField(default=50)
        top_k = serializers.IntegerField(default=50)
        top_p = serializers.FloatField(default=0.95)
        num_beams = serializers.IntegerField(default=1)
        seed = serializers.IntegerField(default=0)
        per_pronoun = serializers.IntegerField(required=False, allow_null=True, default=None)

    def get_permissions(self):
        role = IsAdmin if self.request.method == "POST" else IsResearcher
        return [IsAuthenticated(), role()]

    def get(self, request):
        return Response(JobOutputSerializer(job_list()[:200], many=True).data)

    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            job = job_create(created_by=request.user, **serializer.validated_data)
        except JobParameterError as exc:
            return Response({field: [message] for field, message in exc.errors.items()}, status=400)
        return Response(JobOutputSerializer(job).data, status=status.HTTP_201_CREATED)


class JobDetailApi(APIView):
    permission_classes = [IsAuthenticated & IsResearcher]

    def get(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        return Response(JobOutputSerializer(job).data)


class JobCancelApi(APIView):
    permission_classes = [IsAuthenticated & IsAdmin]

    def post(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        try:
            job = job_cancel(job=job)
        except JobStateError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(JobOutputSerializer(job_get(job_id=job.pk)).data)
