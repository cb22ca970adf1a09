"""The OpenAPI shapes every API shares (drf-spectacular): an error's `{"detail": ...}`, a refusal's field errors and
a file. Each view declares its own answers beside it, with drf-spectacular's `@extend_schema` on the method; every
status the method can answer is declared (tests/test_api_schema.py compares them with the statuses the tests see).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

Detail = inline_serializer(name="Detail", fields={"detail": serializers.CharField()})
FieldErrors = OpenApiResponse(
    OpenApiTypes.OBJECT, description="`{field: [message, ...]}` for each field that was refused"
)
FILE = OpenApiTypes.BINARY
# A file export (common/renderers.py: CSV or JSON lines); errors answer in JSON.
FILE_FORMAT = OpenApiParameter("format", str, enum=["csv", "jsonl"], description="default csv")
FILE_RESPONSES = {(200, "text/csv"): FILE, (200, "application/jsonl"): FILE, (404, "text/csv"): Detail}


def named(serializer: type, name: str) -> type:
    """The same serializer under its own component name (the views' inner classes are all `InputSerializer`)."""
    return type(f"{name}Serializer", (serializer,), {"__module__": serializer.__module__})


def refusals_declared(result: dict, generator, request, public) -> dict:
    """drf-spectacular's post-processing hook: every operation that needs a signed-in caller also answers 401 (no or
    a bad token or session) and 403 (a role that may not, or a session's request without its CSRF token), with the
    `{"detail": ...}` of DRF's refusals. Declared here once, rather than on each view."""
    refused = {
        "401": "not signed in: no valid token or session",
        "403": "signed in without the role this needs (or a session's request without its CSRF token)",
    }
    detail = {"$ref": "#/components/schemas/Detail"}
    for path in result.get("paths", {}).values():
        for operation in path.values():
            if not isinstance(operation, dict) or not operation.get("security") or operation["security"] == [{}]:
                continue
            responses = operation.setdefault("responses", {})
            for status, description in refused.items():
                responses.setdefault(
                    status, {"content": {"application/json": {"schema": detail}}, "description": description}
                )
    return result
