"""The OpenAPI account of the analysis API (analysis/apis.py), generated with drf-spectacular's type-hint resolver
from the report's type, which the table declarations make (analysis/report/shape.py, analysis/report/tables/), so that
the schema and the code cannot drift apart. The report also comes as files (CSV, HTML, LaTeX), declared as binary.
Loaded by analysis/urls.py; `common.openapi.declared` attaches these declarations to the
views without touching them."""

from __future__ import annotations

from drf_spectacular.plumbing import resolve_type_hint
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from analysis.report.shape import QualityDashboard, Report
from common.openapi import FILE, Detail, FieldErrors, declared

REPORT_FORMAT = OpenApiParameter("format", str, enum=["json", "csv", "html", "latex"], description="default json")
TABLE = OpenApiParameter("table", str, description="one table only (CSV: otherwise a zip of every table)")
SEED = OpenApiParameter("seed", int, description="seed of the example items drawn for the report")
HUMAN = OpenApiParameter(
    "human",
    str,
    enum=["majority", "dawid_skene", "mace", "first"],
    description="the human label compared with the heuristic: an aggregate of the ratings or the first annotation "
    "(default: the adjudicated label, else the majority); an aggregate needs items rated twice (400 otherwise)",
)


EPSILON = OpenApiParameter(
    "epsilon",
    float,
    description="the judge's verdict: the Alternative Annotator Test's epsilon, in [0, 1) "
    "(default 0.15); out of range: 400",
)
ALPHA = OpenApiParameter(
    "alpha",
    float,
    description="selective judging: the disagreement allowed among kept items, in (0, 1) "
    "(default 0.1); out of range: 400",
)
DELTA = OpenApiParameter(
    "delta",
    float,
    description="selective judging: the chance the guarantee fails, in (0, 1) (default 0.1); out of range: 400",
)


def report_schema() -> dict:
    """The JSON report as an OpenAPI object, from `Report`: its header, then each declared table that the report holds
    (a list of its row type, or its section's type), required unless the declaration says `optional`."""
    return {**resolve_type_hint(Report), "description": "the report's tables (docs/guide-researcher.md)"}


def quality_schema() -> dict:
    return {**resolve_type_hint(QualityDashboard), "description": "the pool's quality dashboard"}


ReportSchema = declared(
    "analysis.apis.ReportApi",
    get=lambda view: {
        "parameters": [REPORT_FORMAT, TABLE, SEED, HUMAN, EPSILON, ALPHA, DELTA],
        "responses": {
            (200, "application/json"): OpenApiResponse(report_schema(), description="the whole report"),
            (200, "text/csv"): FILE,
            (200, "text/html"): FILE,
            (200, "application/x-tex"): FILE,
            (400, "application/json"): FieldErrors,
            (404, "application/json"): Detail,
        },
    },
)
PoolQualitySchema = declared(
    "analysis.apis.PoolQualityApi",
    get=lambda view: {"responses": {200: OpenApiResponse(quality_schema()), 404: Detail}},
)
