"""How a view declares the OpenAPI shapes of the responses it builds by hand (drf-spectacular), and the shapes every
API shares: an error's `{"detail": ...}`, a refusal's field errors and a file.

`declared(SomeApi, get=lambda view: {...})` returns an extension that drf-spectacular applies to the view (a class, or
its dotted path), leaving the view's own code alone. The extension is registered when the module that calls `declared`
is imported: each app's openapi.py, beside its views, which the app's urls.py imports (a schema is built from the
URLs, and workers and commands that load none never import it), so every declaration is in place before any schema is
built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from drf_spectacular.extensions import OpenApiViewExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
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


def declared(target: type | str, **methods: Callable[[Any], dict]) -> type[OpenApiViewExtension]:
    """An extension that gives each named method of the view at `target` the `@extend_schema` arguments its callable
    returns (called with the view class when the schema is built, so that a view's inner serializers can be named)."""

    class Declared(OpenApiViewExtension):
        target_class = target

        def view_replacement(self):
            def declared(arguments: dict):
                @extend_schema(**arguments)
                def handler(self, request, *args, **kwargs):
                    pass  # pragma: no cover (schema only)

                return handler

            view = cast(type, self.target_class)  # drf-spectacular has loaded the class named by `target` by now
            handlers = {method: declared(arguments(view)) for method, arguments in methods.items()}
            return type(view.__name__, (view,), handlers)

    return Declared
