"""The REST API for pools, imports and assignments (docs/api.md, "Pools, imports and assignments"): the same services
and the same roles as the pages.

- `GET /api/pools/` (researcher): the pools of the caller's projects (an admin: every pool) with their counts.
  `POST /api/pools/`: with `labels`, an empty pool for the researcher's own files (the "New pool from files" page);
  without, a pool drawn from finished generation jobs (admin; the "New pool" page). `project` names its project.
- `GET /api/pools/{name}/` (researcher): one pool, with its progress per annotator and per cell.
- `GET /api/pools/{name}/imports/` (researcher): the pool's imports, newest first.
  `POST /api/pools/{name}/imports/` (researcher, multipart: `files`, `kind`): generations (`kind` generations, or
  the item kind study/gold/training) are queued, 202 with the import's state; people's labels (`labels`) and an
  external judge's (`judge_labels`) are imported at once, 201 with what was written. `preview=true` checks the
  files and answers with their first rows (200), writing nothing.
- `GET /api/pools/{name}/imports/{id}/` (researcher): one import's state.
- `POST /api/pools/{name}/assignments/` (admin): share the pool out (the "Assign" page).
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.projects import project_choose
from accounts.roles import ADMIN, IsAdmin, IsResearcher, has_role
from annotation.access import MayAssignPool, pool_visible_or_404, pools_visible_to
from annotation.labelset import SCALES, positive_label
from annotation.models import IMPORT_STATUSES, NOMINAL, STUDY, Pool, PoolImport
from annotation.selectors import research
from annotation.services import assignments_create, pool_sample
from annotation.services.assignment import DEFAULT_RATERS
from annotation.services.imports.catalog import JUDGE_LABELS, LABELS, import_format, import_formats
from annotation.services.imports.jobs import import_job_progress
from annotation.services.pool import (
    DRAW_INSTANCES,
    DRAW_PER_SAMPLE_INDEX,
    POOL_SEED,
    pool_create,
)
from common.renderers import CsvRenderer


def _named(serializer: type, name: str) -> type:
    """The schema's own component name for a view's inner `InputSerializer` (they all share that class name)."""
    return type(f"{name}Serializer", (serializer,), {"__module__": serializer.__module__})


class PoolSummarySerializer(serializers.Serializer):
    name = serializers.CharField()
    project = serializers.CharField(source="project.name", help_text="its members alone see the pool")
    labels = serializers.ListField(child=serializers.CharField())
    items = serializers.IntegerField(source="n_items")
    assignments = serializers.IntegerField(source="n_assignments")
    per_cell = serializers.IntegerField(allow_null=True)
    seed = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class AnnotatorProgressSerializer(serializers.Serializer):
    username = serializers.CharField()
    assigned = serializers.IntegerField()
    done = serializers.IntegerField()
    percent = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    total_seconds = serializers.FloatField()


class CellProgressSerializer(serializers.Serializer):
    model = serializers.CharField()
    dataset = serializers.CharField()
    setting = serializers.CharField()
    pronoun = serializers.CharField()
    items = serializers.IntegerField()
    assignments = serializers.IntegerField()
    done = serializers.IntegerField()
    percent = serializers.IntegerField()


class PoolDetailSerializer(serializers.Serializer):
    name = serializers.CharField()
    project = serializers.CharField(help_text="its members alone see the pool")
    labels = serializers.ListField(child=serializers.CharField())
    scale = serializers.CharField(help_text="nominal, ordinal or interval")
    positive_label = serializers.CharField(allow_null=True, help_text="the label rates count; null: none in the set")
    positive_at_least = serializers.CharField(
        allow_blank=True, help_text="ordinal or interval: rates count the labels at or above it; empty: none"
    )
    active = serializers.BooleanField(help_text="an active draw: each item carries its inclusion probability")
    active_judge_run = serializers.IntegerField(allow_null=True, help_text="the judge run an active draw used")
    active_budget = serializers.FloatField(allow_null=True, help_text="the expected number of contexts drawn")
    items = serializers.IntegerField()
    kinds = serializers.DictField(child=serializers.IntegerField())
    annotators = AnnotatorProgressSerializer(many=True)
    cells = CellProgressSerializer(many=True)


class ImportJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pool = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.ChoiceField(choices=list(IMPORT_STATUSES))
    files = serializers.ListField(child=serializers.CharField())
    bytes = serializers.IntegerField()
    rows_read = serializers.IntegerField()
    rows_written = serializers.IntegerField()
    items_created = serializers.IntegerField()
    already_imported = serializers.IntegerField()
    heuristic_mismatches = serializers.IntegerField()
    errors = serializers.ListField(child=serializers.CharField(), help_text="FILE:LINE: problem (the first ones)")
    error_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class ImportPreviewSerializer(serializers.Serializer):
    ok = serializers.BooleanField(help_text="false: the import would be refused; `errors` says why")
    errors = serializers.ListField(child=serializers.CharField(), help_text="FILE:LINE: problem")
    rows = serializers.ListField(child=serializers.DictField(), help_text="the first rows as they would be read")


class LabelImportResultSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[LABELS, JUDGE_LABELS])
    pool = serializers.CharField()
    file = serializers.CharField()
    rows = serializers.IntegerField(required=False, help_text="labels: labels read")
    annotators = serializers.IntegerField(required=False, help_text="labels")
    new = serializers.IntegerField(required=False, help_text="labels")
    replaced = serializers.IntegerField(required=False, help_text="labels")
    completed = serializers.IntegerField(required=False, help_text="labels: same label, details added")
    unchanged = serializers.IntegerField(required=False, help_text="labels")
    run = serializers.IntegerField(required=False, help_text="judge_labels: the new judge run")
    labels = serializers.IntegerField(required=False, help_text="judge_labels: labels written")
    new_labels = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="judge_labels: labels the pool gained (extend_labels)"
    )
    already_imported = serializers.BooleanField(
        required=False, help_text="judge_labels: the same labels were imported before for this judge: nothing written"
    )
    judge = serializers.CharField(required=False)
    version = serializers.IntegerField(required=False)


class ImportRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = serializers.ListField(child=serializers.CharField(), required=False, help_text="FILE:LINE: problem")


def _pool_detail(pool: Pool) -> dict:
    annotators, cells = research.pool_progress(pool=pool)
    return {
        "name": pool.name,
        "project": pool.project.name,
        "labels": list(pool.labels),
        "scale": pool.scale,
        "positive_label": positive_label(pool),
        "positive_at_least": pool.positive_at_least,
        "active": pool.active_run_id is not None,
        "active_judge_run": pool.active_run_id,
        "active_budget": pool.active_budget,
        "items": pool.items.count(),
        "kinds": research.pool_kind_counts(pool=pool),
        "annotators": annotators,
        "cells": cells,
    }


class PoolListCreateApi(APIView):
    """GET: the pools of the caller's projects (an admin: every pool), newest first (researcher; `?format=csv` for a
    table). POST (researcher), 201: with `labels`, an empty pool for the caller's own files, whose generations,
    people's labels and judges' labels are then uploaded to `/api/pools/{name}/imports/`; without `labels`, a pool
    drawn from finished jobs (admin). `project`: one of the caller's projects (default: their only one, else the
    default project)."""

    permission_classes = [IsAuthenticated, IsResearcher]
    renderer_classes = [JSONRenderer, CsvRenderer]

    class InputSerializer(serializers.Serializer):
        name = serializers.SlugField(max_length=64)
        project = serializers.CharField(
            max_length=64, required=False, allow_null=True, default=None,
            help_text="the project the pool belongs to, one of the caller's (default: their only one, else the "
            "default project)",
        )  # fmt: skip
        labels = serializers.ListField(
            child=serializers.CharField(max_length=64, trim_whitespace=False), required=False, min_length=2,
            max_length=100,
            help_text="the pool's label set, as written (docs/domain.md, 'Bring your own study'): alone, an empty pool "
            "for your own files (researchers); beside a draw's fields, the drawn pool's set (default correct, "
            "misgendering, no_pronoun)",
        )  # fmt: skip
        positive = serializers.CharField(
            max_length=64, required=False, allow_blank=True, default="",
            help_text="the label rates count (only for rates; a set with misgendering counts it)",
        )  # fmt: skip
        scale = serializers.ChoiceField(
            choices=list(SCALES), default=NOMINAL,
            help_text="nominal, ordinal (labels in the order given) or interval (numeric labels)",
        )  # fmt: skip
        positive_at_least = serializers.CharField(
            max_length=64, required=False, allow_blank=True, default="",
            help_text="ordinal or interval: rates count every label at or above this one (instead of positive)",
        )  # fmt: skip
        jobs = serializers.ListField(
            child=serializers.IntegerField(min_value=1), required=False, help_text="finished jobs; none: all of them"
        )
        draw = serializers.ChoiceField(choices=[DRAW_INSTANCES, DRAW_PER_SAMPLE_INDEX], default=DRAW_INSTANCES)
        instances = serializers.IntegerField(min_value=1, max_value=100_000, default=5)
        per_cell = serializers.IntegerField(min_value=1, max_value=100_000, default=25)
        seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=POOL_SEED)
        allow_short = serializers.BooleanField(default=False)
        active = serializers.BooleanField(
            default=False,
            help_text="an active draw from one job (docs/domain.md, 'Spending people's labels where they count'); "
            "needs judge_run and budget; draw, instances and per_cell do not apply",
        )
        judge_run = serializers.IntegerField(
            min_value=1, required=False, allow_null=True, default=None, help_text="active: a judge run over the job"
        )
        budget = serializers.FloatField(
            min_value=0, required=False, allow_null=True, default=None,
            help_text="active: the expected number of contexts people label",
        )  # fmt: skip

    @extend_schema(responses={200: PoolSummarySerializer(many=True)})
    def get(self, request):
        rows = PoolSummarySerializer(
            pools_visible_to(user=request.user, pools=research.pool_summaries()), many=True
        ).data
        if request.accepted_renderer.format == "csv":
            rows = [{**row, "labels": " ".join(row["labels"])} for row in rows]
        return Response(rows)

    @extend_schema(
        request=_named(InputSerializer, "PoolSample"),
        responses={
            201: inline_serializer(
                name="PoolSampled",
                fields={
                    "pool": PoolDetailSerializer(),
                    "short_cells": serializers.ListField(child=serializers.CharField()),
                },
            ),
            400: None,
            403: None,
        },
    )
    def post(self, request):
        files = "labels" in request.data and not set(request.data) & DRAW_FIELDS
        if not files and not has_role(request.user, ADMIN):
            raise PermissionDenied(
                f"{IsAdmin.message} A researcher makes a pool for their own files: send its `labels`."
            )
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if files:
            return self._pool_of_files(request, data)
        project = project_choose(name=data["project"], user=request.user)
        result = pool_sample(
            project=project,
            name=data["name"],
            job_ids=data.get("jobs") or None,
            draw=data["draw"],
            instances=data["instances"],
            per_cell=data["per_cell"],
            seed=data["seed"],
            allow_short=data["allow_short"],
            created_by=request.user,
            active=data["active"],
            judge_run=data["judge_run"],
            budget=data["budget"],
            labels=data.get("labels"),
            scale=data["scale"],
            positive=data["positive"],
            positive_at_least=data["positive_at_least"],
        )
        assert result.pool is not None
        body = {
            "pool": PoolDetailSerializer(_pool_detail(result.pool)).data,
            "short_cells": [str(cell) for cell in result.short],
        }
        return Response(body, status=status.HTTP_201_CREATED)

    def _pool_of_files(self, request, data: dict) -> Response:
        project = project_choose(name=data["project"], user=request.user)
        pool = pool_create(
            name=data["name"], labels=data["labels"], positive=data["positive"], scale=data["scale"],
            positive_at_least=data["positive_at_least"], project=project, created_by=request.user,
        )  # fmt: skip
        body = {"pool": PoolDetailSerializer(_pool_detail(pool)).data, "short_cells": []}
        return Response(body, status=status.HTTP_201_CREATED)


# What only a draw from jobs takes (PoolListCreateApi.InputSerializer): `labels` beside one of them is the drawn
# pool's label set (admins), `labels` alone an empty pool for the caller's own files.
DRAW_FIELDS = {"jobs", "draw", "instances", "per_cell", "seed", "allow_short", "active", "judge_run", "budget"}


class PoolDetailApi(APIView):
    """GET: one pool, its items by kind and its progress per annotator and per cell (researcher)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(responses={200: PoolDetailSerializer, 404: None})
    def get(self, request, name: str):
        pool = pool_visible_or_404(user=request.user, name=name)
        return Response(PoolDetailSerializer(_pool_detail(pool)).data)


class PoolImportListCreateApi(APIView):
    """GET: the pool's imports, newest first. POST (multipart): `files` and `kind`.

    - `generations` (study items; or the item kind `study`, `gold`, `training`): one or more files of generations
      (the released sample format, or free-text generations, with `import_generations`' optional `labels`, comma
      separated, `positive` and `codebook`, a file): the import is queued, 202 with its state, which
      `GET .../imports/{id}/` follows.
    - `labels`: one file of people's labels, long (`item, annotator, label`, optional `created_at, seconds,
      extraneous, note`) or `wide=true`; `replace=true` overwrites stored labels the file contradicts. 201 with the
      counts (new, replaced, completed, unchanged).
    - `judge_labels`: one file of an external judge's labels (`item, label`, optional `prob_<label>` or
      `confidence`) with `judge` (its name) and optional `model_id`, `description`, `prompt`: one new judge run with
      origin `imported`, 201 with its `run` and `labels`.

    `preview=true`: check the files and answer 200 with their first rows and what the import would do (or every
    problem), writing nothing. A refused file answers 400 with `errors`, each `FILE:LINE: problem` naming the
    uploaded file; nothing is written. A body over MAX_UPLOAD_MB is refused with 413 (researcher)."""

    permission_classes = [IsAuthenticated, IsResearcher]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        """`files`, `kind` and `preview`, and every import format's own options (the catalog's, named by format)."""

        files = serializers.ListField(child=serializers.FileField(allow_empty_file=False), allow_empty=False)
        kind = serializers.ChoiceField(
            choices=[], default=STUDY,
            help_text="generations (= study), study, gold, training: generations; labels: people's labels; "
            "judge_labels: an external judge's labels",
        )  # fmt: skip
        preview = serializers.BooleanField(default=False, help_text="check and show the first rows; write nothing")

        def get_fields(self):
            fields = super().get_fields()
            kinds = [kind for entry in import_formats(into_pool=True) for kind in (entry.name, *entry.kinds)]
            fields["kind"].choices = kinds
            fields["kind"].error_messages["invalid_choice"] = (
                f'"{{input}}" is not a valid choice; known: {", ".join(kinds)}'
            )
            for entry in import_formats(into_pool=True):
                for name, option in entry.options().get_fields().items():
                    fields.setdefault(name, option)
            return fields

    @extend_schema(responses={200: ImportJobSerializer(many=True), 404: None})
    def get(self, request, name: str):
        pool = pool_visible_or_404(user=request.user, name=name)
        jobs = pool.import_jobs.select_related("pool", "job")[:100]
        return Response(ImportJobSerializer([import_job_progress(job=job) for job in jobs], many=True).data)

    @extend_schema(
        request={"multipart/form-data": _named(InputSerializer, "ImportUpload")},
        responses={
            200: ImportPreviewSerializer, 201: LabelImportResultSerializer, 202: ImportJobSerializer,
            400: ImportRefusedSerializer, 404: None, 413: None,
        },
    )  # fmt: skip
    def post(self, request, name: str):
        pool = pool_visible_or_404(user=request.user, name=name)
        data = {key: value for key, value in request.data.items() if key not in ("files", "codebook")}
        if "codebook" in request.FILES:
            data["codebook"] = request.FILES["codebook"]
        serializer = self.InputSerializer(data={**data, "files": request.FILES.getlist("files")})
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        entry = import_format(values["kind"])
        if entry.one_file and len(values["files"]) != 1:
            return Response(
                {"detail": f"a {values['kind']} import takes one file", "errors": []},
                status=status.HTTP_400_BAD_REQUEST,
            )
        options = entry.options_from(values)  # refusals answer through common.errors.api_exception_handler
        if values["preview"]:
            return Response(entry.preview(pool, values["files"], options, values["kind"]))
        outcome = entry.run(pool, values["files"], options, values["kind"], request.user)
        if outcome.job is not None:  # queued: its state, which GET .../imports/{id}/ follows
            return Response(
                ImportJobSerializer(import_job_progress(job=outcome.job)).data, status=status.HTTP_202_ACCEPTED
            )
        return Response({"kind": values["kind"], **outcome.summary}, status=status.HTTP_201_CREATED)


class PoolImportDetailApi(APIView):
    """GET: one import's state: queued, reading (rows checked so far), writing (rows written of those read), done
    (with its counts) or failed (with its FILE:LINE errors; nothing was written) (researcher)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(responses={200: ImportJobSerializer, 404: None})
    def get(self, request, name: str, job_id: int):
        job = get_object_or_404(
            PoolImport.objects.select_related("pool", "job"),
            pk=job_id,
            pool=pool_visible_or_404(user=request.user, name=name),
        )
        return Response(ImportJobSerializer(import_job_progress(job=job)).data)


class PoolAssignApi(APIView):
    """POST: share the pool's items out among annotators, as the Assign page does (an admin, or the researcher who
    made the pool); 201 with the counts. Safe to repeat: done work and items in progress never move."""

    permission_classes = [IsAuthenticated, MayAssignPool]

    class InputSerializer(serializers.Serializer):
        annotators = serializers.ListField(child=serializers.CharField(max_length=150), allow_empty=False)
        overlap = serializers.IntegerField(min_value=0, max_value=10_000_000, default=0)
        raters = serializers.IntegerField(min_value=2, max_value=1000, default=DEFAULT_RATERS)
        seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)

    OutputSerializer = inline_serializer(
        name="AssignmentsCreated",
        fields={
            "created": serializers.IntegerField(),
            "overlap_items": serializers.IntegerField(),
            "raters": serializers.IntegerField(),
            "per_annotator": serializers.DictField(child=serializers.IntegerField()),
            "gold_items": serializers.IntegerField(),
            "training_items": serializers.IntegerField(),
            "reordered": serializers.IntegerField(),
        },
    )

    @extend_schema(
        request=_named(InputSerializer, "AssignmentsRequest"),
        responses={201: OutputSerializer, 400: None, 403: None, 404: None},
    )
    def post(self, request, name: str):
        pool = pool_visible_or_404(user=request.user, name=name)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = assignments_create(
            pool=pool,
            usernames=list(dict.fromkeys(data["annotators"])),
            overlap=data["overlap"],
            raters=data["raters"],
            seed=data["seed"],
            user=request.user,
        )
        body = {
            "created": result.created,
            "overlap_items": result.overlap_items,
            "raters": result.raters,
            "per_annotator": result.per_annotator,
            "gold_items": result.gold_items,
            "training_items": result.training_items,
            "reordered": result.reordered,
        }
        return Response(body, status=status.HTTP_201_CREATED)
