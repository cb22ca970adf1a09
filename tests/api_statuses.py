"""Every status an API view answers in the tests is one its schema declares.

While the tests run, each answer of an API view (`APIView.finalize_response`) is recorded as (route, method, status).
At the end of the run the statuses seen are compared with the schema that `manage.py spectacular` builds: a status
that a view answered and does not declare fails the run, naming the route, the method and the status. Each pytest
worker writes what it saw to a file that the process that started it reads (`pytest_sessionfinish` in
tests/conftest.py). Methods the schema does not list (405s, HEAD, OPTIONS) are not operations and are left out.
"""

from __future__ import annotations

import io
import json
import os
import re

from tests.conftest import REPO

OBSERVED: set[tuple[str, str, int]] = set()
FOLDER = REPO / "var" / "test-api-statuses"


def record() -> None:
    """Record the answers of every API view from now on (called once per test process)."""
    from rest_framework.views import APIView

    finalize = APIView.finalize_response
    if getattr(finalize, "recording", False):
        return

    def finalize_response(self, request, response, *args, **kwargs):
        response = finalize(self, request, response, *args, **kwargs)
        match = getattr(request, "resolver_match", None)
        if match is not None and match.route.startswith("api/"):
            OBSERVED.add((match.route, request.method.lower(), response.status_code))
        return response

    finalize_response.recording = True  # type: ignore[attr-defined]
    APIView.finalize_response = finalize_response  # type: ignore[method-assign]


def openapi_path(route: str) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


def worker_write(worker: str) -> None:
    """A worker's statuses, for the process that started it (its parent)."""
    folder = FOLDER / str(os.getppid())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{worker}.json").write_text(json.dumps(sorted(OBSERVED)))


def gathered() -> set[tuple[str, str, int]]:
    """This process's statuses and those its workers wrote (their files removed)."""
    seen = set(OBSERVED)
    folder = FOLDER / str(os.getpid())
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        seen.update((route, method, status) for route, method, status in json.loads(path.read_text()))
        path.unlink()
    if folder.is_dir():
        folder.rmdir()
    return seen


def built_schema() -> dict:
    """The schema as `manage.py spectacular` writes it, in its JSON form: the same document as the YAML one,
    written and read back without PyYAML's pure-Python writer and reader."""
    from django.core.management import call_command

    out = io.StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def undeclared(seen: set[tuple[str, str, int]], schema: dict) -> list[str]:
    """'METHOD /path: STATUS' for each status seen that the schema does not declare for that operation."""
    found = []
    for route, method, status in sorted(seen):
        operation = schema["paths"].get(openapi_path(route), {}).get(method)
        if operation is None:
            continue  # not an operation: a method the view refuses (405), HEAD, OPTIONS
        if str(status) not in operation.get("responses", {}):
            found.append(f"{method.upper()} {openapi_path(route)}: {status}")
    return found


def check(seen: set[tuple[str, str, int]]) -> list[str]:
    return undeclared(seen, built_schema()) if seen else []
