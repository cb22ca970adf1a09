"""The OpenAPI account of the jobs API (generation/apis.py): its views validate with an inner `InputSerializer` and
answer with `JobOutputSerializer` by hand, so each declares its shapes here (`common.openapi.declared`), leaving the
views' code alone. Imported by generation/urls.py, so before any schema is built."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiViewExtension
from drf_spectacular.utils import OpenApiResponse

from common.openapi import Detail, FieldErrors, declared, named
from generation.apis import (
    JobCancelApi,
    JobDetailApi,
    JobListCreateApi,
    JobOutputSerializer,
    JobResumeApi,
)

JobListCreateSchema = declared(
    JobListCreateApi,
    get=lambda view: {"operation_id": "generation_jobs_list", "responses": {200: JobOutputSerializer(many=True)}},
    post=lambda view: {
        "description": "Queue a job (admins).",
        "request": named(view.InputSerializer, "JobParameters"),
        "responses": {201: JobOutputSerializer, 400: FieldErrors},
    },
)
JobDetailSchema = declared(JobDetailApi, get=lambda view: {"responses": {200: JobOutputSerializer, 404: Detail}})


def _job_action(target: type, description: str) -> type[OpenApiViewExtension]:
    return declared(
        target,
        post=lambda view: {
            "description": description,
            "request": None,
            "responses": {200: JobOutputSerializer, 404: Detail, 409: OpenApiResponse(Detail, "not in a state to")},
        },
    )


JobCancelSchema = _job_action(JobCancelApi, "Cancel a queued or running job (admins).")
# What `job_resume` (generation/jobs/services.py) takes: a job that did not finish, never a cancelled or done one.
JobResumeSchema = _job_action(
    JobResumeApi,
    "Resume a failed job, or one left queued or running by a runner that is gone (admins); a cancelled or done job "
    "is refused (409).",
)
