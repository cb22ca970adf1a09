"""REST API for jobs (generation, and the kinds other apps register). Researchers (and admins) read; only admins
queue, cancel and resume. The parameters are those of generation/parameters.py, validated once."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsAdmin, IsResearcher
from common.openapi import Detail, FieldErrors, named
from generation.jobs.kinds import job_kind_get
from generation.jobs.services import (
    job_cancel,
    job_create,
    job_resume,
)
from generation.models import Job
from generation.parameters import JobParametersSerializer
from generation.selectors import (
    JobTiming,
    QueuePlace,
    job_get,
    job_list,
    job_queue_place,
    job_resumable,
    job_status_text,
    job_timing,
)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _kind_parameter(field_class: type[serializers.Field], **kwargs) -> serializers.Field:
    """A key the job's kind gives (`JobKind.parameters`: a generation job's decoding parameters, a judge run's seed
    and options); null when its kind has no such parameter."""

    class KindParameter(field_class):  # type: ignore[valid-type,misc]
        def get_attribute(self, instance: Job):
            return self.parent.kind_parameters(instance).get(self.field_name)

    return KindParameter(read_only=True, allow_null=True, **kwargs)


class JobOutputSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model.name")
    dataset = serializers.CharField(source="dataset.name", allow_null=True)
    pronouns = _kind_parameter(serializers.ListField, child=serializers.CharField())
    settings = _kind_parameter(serializers.ListField, child=serializers.CharField())
    samples = _kind_parameter(serializers.IntegerField)
    max_new_tokens = _kind_parameter(serializers.IntegerField)
    top_k = _kind_parameter(serializers.IntegerField)
    top_p = _kind_parameter(serializers.FloatField)
    num_beams = _kind_parameter(serializers.IntegerField)
    seed = _kind_parameter(serializers.IntegerField)
    per_pronoun = _kind_parameter(serializers.IntegerField)
    prob_score = _kind_parameter(serializers.CharField)
    options = _kind_parameter(serializers.DictField)
    description = serializers.SerializerMethodField()
    status_text = serializers.SerializerMethodField()
    queue_position = serializers.SerializerMethodField()
    queued_after = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    elapsed_seconds = serializers.SerializerMethodField()
    eta_seconds = serializers.SerializerMethodField()
    eta_low_seconds = serializers.SerializerMethodField()
    eta_high_seconds = serializers.SerializerMethodField()
    resumable = serializers.SerializerMethodField()

    # The generation kind's keys (instances, generations) predate the neutral names every kind has (`total_units` and
    # `done_units`: the kind's units of work, such as a generation job's instances or a judge run's items;
    # `total_items`, `done_items`: what they make): each old key reads its field, and both are kept.
    KEYS_OF_FIELDS = {
        "total_instances": "total_units",
        "done_instances": "done_units",
        "total_generations": "total_items",
        "done_generations": "done_items",
    }

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "model",
            "dataset",
            "description",
            "pronouns",
            "settings",
            "samples",
            "max_new_tokens",
            "top_k",
            "top_p",
            "num_beams",
            "seed",
            "per_pronoun",
            "batch_size",
            "prob_score",
            "options",
            "status",
            "status_text",
            "queue_position",
            "queued_after",
            "total_instances",
            "done_instances",
            "total_generations",
            "done_generations",
            "total_units",
            "done_units",
            "total_items",
            "done_items",
            "progress",
            "elapsed_seconds",
            "eta_seconds",
            "eta_low_seconds",
            "eta_high_seconds",
            "resumes",
            "resumable",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def build_field(self, field_name, info, model_class, nested_depth):
        if field_name not in self.KEYS_OF_FIELDS:
            return super().build_field(field_name, info, model_class, nested_depth)
        source = self.KEYS_OF_FIELDS[field_name]
        field_class, kwargs = super().build_field(source, info, model_class, nested_depth)
        return field_class, {**kwargs, "source": source}

    def kind_parameters(self, job: Job) -> dict:
        """The job's parameters as its kind gives them, read once per job."""
        cache: dict[int, dict] = self.__dict__.setdefault("_parameters", {})
        if job.pk not in cache:
            handler = job_kind_get(job.kind)
            cache[job.pk] = handler.parameters(job=job) if handler is not None else {"options": dict(job.options)}
        return cache[job.pk]

    def _timing(self, job: Job) -> JobTiming:
        """One reading of the chunks per job, for the four timing keys."""
        cache: dict[int, JobTiming] = self.__dict__.setdefault("_timings", {})
        if job.pk not in cache:
            cache[job.pk] = job_timing(job=job)
        return cache[job.pk]

    def _place(self, job: Job) -> QueuePlace | None:
        cache: dict[int, QueuePlace | None] = self.__dict__.setdefault("_places", {})
        if job.pk not in cache:
            cache[job.pk] = job_queue_place(job=job)
        return cache[job.pk]

    def get_description(self, job: Job) -> str:
        handler = job_kind_get(job.kind)
        return handler.describe(job=job) if handler is not None else f"{job.kind} (kind not installed here)"

    def get_status_text(self, job: Job) -> str:
        return job_status_text(job=job)

    def get_queue_position(self, job: Job) -> int | None:
        place = self._place(job)
        return None if place is None else place.position

    def get_queued_after(self, job: Job) -> int | None:
        place = self._place(job)
        return None if place is None else place.after

    def get_progress(self, job: Job) -> float:
        return job.done_items / job.total_items if job.total_items else 0.0

    def get_elapsed_seconds(self, job: Job) -> float | None:
        return _rounded(self._timing(job).elapsed_seconds)

    def get_eta_seconds(self, job: Job) -> float | None:
        return _rounded(self._timing(job).eta_seconds)

    def get_eta_low_seconds(self, job: Job) -> float | None:
        return _rounded(self._timing(job).eta_low_seconds)

    def get_eta_high_seconds(self, job: Job) -> float | None:
        return _rounded(self._timing(job).eta_high_seconds)

    def get_resumable(self, job: Job) -> bool:
        return job_resumable(job=job)


def _not_found(job_id: int) -> Response:
    return Response({"detail": f"no generation job {job_id}"}, status=status.HTTP_404_NOT_FOUND)


BrokerDown = OpenApiResponse(
    inline_serializer(
        name="BrokerDown",
        fields={
            "detail": serializers.CharField(),
            "job": serializers.IntegerField(),
            "resumable": serializers.BooleanField(),
        },
    ),
    description="the broker could not take the job: it is kept, failed and resumable",
)
NotInState = OpenApiResponse(Detail, description="the job is not in a state to")


class JobListCreateApi(APIView):
    """GET: every job, newest first (researcher). POST: queue a job (admin); 503 when the broker cannot take it."""

    InputSerializer = JobParametersSerializer  # the one definition (generation/parameters.py)

    def get_permissions(self):
        role = IsAdmin if self.request.method == "POST" else IsResearcher
        return [IsAuthenticated(), role()]

    @extend_schema(operation_id="generation_jobs_list", responses={200: JobOutputSerializer(many=True)})
    def get(self, request):
        return Response(JobOutputSerializer(job_list(reader=request.user)[:200], many=True).data)

    @extend_schema(
        description="Queue a job (admins).",
        request=named(JobParametersSerializer, "JobParameters"),
        responses={201: JobOutputSerializer, 400: FieldErrors, 503: BrokerDown},
    )
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        if not serializer.is_valid():
            return Response(serializer.errors, status=status.HTTP_400_BAD_REQUEST)
        job = job_create(created_by=request.user, params=serializer.to_parameters())
        return Response(JobOutputSerializer(job).data, status=status.HTTP_201_CREATED)


class JobDetailApi(APIView):
    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message

    @extend_schema(responses={200: JobOutputSerializer, 404: Detail})
    def get(self, request, job_id: int):
        job = job_get(job_id=job_id, reader=request.user)
        if job is None:
            return _not_found(job_id)
        return Response(JobOutputSerializer(job).data)


class JobCancelApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]  # a list keeps the role's message

    @extend_schema(
        description="Cancel a queued or running job (admins).",
        request=None,
        responses={200: JobOutputSerializer, 404: Detail, 409: NotInState},
    )
    def post(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        job = job_cancel(job=job, user=request.user)
        return Response(JobOutputSerializer(job_get(job_id=job.pk)).data)


class JobResumeApi(APIView):
    """Admins resume a job that did not finish (409 for a finished one)."""

    permission_classes = [IsAuthenticated, IsAdmin]  # a list keeps the role's message

    # What `job_resume` (generation/jobs/services.py) takes: a job that did not finish, never a cancelled or done one.
    @extend_schema(
        description="Resume a failed job, or one left queued or running by a runner that is gone (admins); a cancelled "
        "or done job is refused (409).",
        request=None,
        responses={200: JobOutputSerializer, 404: Detail, 409: NotInState, 503: BrokerDown},
    )
    def post(self, request, job_id: int):
        job = job_get(job_id=job_id)
        if job is None:
            return _not_found(job_id)
        job_resume(job_id=job.pk, user=request.user)
        return Response(JobOutputSerializer(job_get(job_id=job.pk)).data)


class ModelEndpointSerializer(serializers.Serializer):
    """An endpoint's settings as the API shows them: the key's variable name, never a key."""

    base_url = serializers.CharField()
    api = serializers.CharField()
    api_key_env = serializers.CharField()
    concurrency = serializers.IntegerField()
    rpm = serializers.IntegerField(allow_null=True)
    timeout = serializers.FloatField()
    max_retries = serializers.IntegerField()
    price_in = serializers.DecimalField(max_digits=12, decimal_places=6, allow_null=True)
    price_out = serializers.DecimalField(max_digits=12, decimal_places=6, allow_null=True)
    logprobs = serializers.CharField()
    completions = serializers.BooleanField()
    has_logprobs = serializers.BooleanField()
    prompt_logprobs = serializers.BooleanField()
    structured = serializers.BooleanField()


class ModelOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    source_kind = serializers.CharField()
    source = serializers.CharField()
    gguf_file = serializers.CharField()
    endpoint = serializers.SerializerMethodField()

    @extend_schema_field(ModelEndpointSerializer(allow_null=True))
    def get_endpoint(self, model) -> dict | None:
        endpoint = model.endpoint_settings if model.is_endpoint else None
        return ModelEndpointSerializer(endpoint).data if endpoint is not None else None


class ModelListCreateApi(APIView):
    """GET: the registered models (researcher). POST: register one (admin): local weights (`hub`, `path`, or
    `package` with `gguf`) or an endpoint (`base_url` with `model`), checked before it is written."""

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField()
        hub = serializers.CharField(required=False, allow_blank=True, default=None)
        path = serializers.CharField(required=False, allow_blank=True, default=None)
        package = serializers.CharField(required=False, allow_blank=True, default=None)
        gguf = serializers.CharField(required=False, allow_blank=True, default=None)
        base_url = serializers.CharField(required=False, allow_blank=True, default=None)
        model = serializers.CharField(required=False, allow_blank=True, default=None)
        api = serializers.CharField(required=False, default="openai")
        api_key_env = serializers.CharField(required=False, allow_blank=True, default="")
        concurrency = serializers.IntegerField(required=False, allow_null=True, default=None)
        rpm = serializers.IntegerField(required=False, allow_null=True, default=None)
        timeout = serializers.FloatField(required=False, allow_null=True, default=None)
        max_retries = serializers.IntegerField(required=False, allow_null=True, default=None)
        price_in = serializers.CharField(required=False, allow_null=True, default=None)
        price_out = serializers.CharField(required=False, allow_null=True, default=None)
        logprobs = serializers.CharField(required=False, default="auto")

    def get_permissions(self):
        role = IsAdmin if self.request.method == "POST" else IsResearcher
        return [IsAuthenticated(), role()]

    @extend_schema(operation_id="models_list", responses={200: ModelOutputSerializer(many=True)})
    def get(self, request):
        from generation.selectors import model_list

        return Response(ModelOutputSerializer(model_list(), many=True).data)

    @extend_schema(
        description="Register a model (admins).",
        request=named(InputSerializer, "ModelRegistration"),
        responses={201: ModelOutputSerializer, 400: FieldErrors},
    )
    def post(self, request):
        from generation.services.models import model_add

        serializer = self.InputSerializer(data=request.data)
        if not serializer.is_valid():
            return Response(serializer.errors, status=status.HTTP_400_BAD_REQUEST)
        values: dict[str, Any] = {
            key: (value if value != "" else None) for key, value in serializer.validated_data.items()
        }
        values["api_key_env"] = values.get("api_key_env") or ""
        model = model_add(created_by=request.user, **values)
        return Response(ModelOutputSerializer(model).data, status=status.HTTP_201_CREATED)
