"""`GET /api/reports/{pool}/?format=json|csv|html|latex[&table=NAME][&seed=N][&human=VERDICT][&epsilon=E][&alpha=A]
[&delta=D][&q=Q][&min_items=N]` for researchers."""

from __future__ import annotations

import json

from drf_spectacular.plumbing import resolve_type_hint
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsResearcher
from analysis.report.shape import QualityDashboard, Report
from analysis.responses import report_download
from analysis.selectors.examples import EXAMPLES_SEED, seed_parse
from analysis.selectors.human import HUMAN_VERDICTS
from analysis.selectors.verdict import VerdictQuery, verdict_parameters
from analysis.services import quality_dashboard_cached, report_build
from annotation.access import pool_visible_or_404
from common.openapi import FILE, Detail, FieldErrors
from common.renderers import CsvRenderer


class _PassthroughRenderer(BaseRenderer):
    """Lets `?format=...` pass DRF's content negotiation; the view returns the rendered bytes itself. Errors (400,
    403, 404) still come as DRF's data, which is written as JSON."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, bytes | str):
            return data
        return json.dumps(data).encode()


class LatexRenderer(_PassthroughRenderer):
    media_type = "application/x-tex"
    format = "latex"


class HtmlRenderer(_PassthroughRenderer):
    media_type = "text/html"
    format = "html"


def _seed(raw: str | None) -> int:
    if raw is None or raw == "":
        return EXAMPLES_SEED
    try:
        return seed_parse(raw)
    except ValueError as error:
        raise ValidationError({"seed": [str(error).capitalize()]}) from None


def _human(raw: str | None) -> str | None:
    if raw is None or raw == "":
        return None
    if raw not in HUMAN_VERDICTS:
        raise ValidationError({"human": [f"{raw!r} is not one of {', '.join(HUMAN_VERDICTS)}."]})
    return raw


VERDICT_PARAMETERS = ("epsilon", "alpha", "delta", "q", "min_items")


def verdict_query(params) -> VerdictQuery:
    """`?epsilon=E&alpha=A&delta=D&q=Q&min_items=N` (each optional), checked: a value that is no number, or out of
    range, is a 400 naming it, and nothing is built or cached."""
    values: dict = {}
    errors: dict[str, list[str]] = {}
    for name in VERDICT_PARAMETERS:
        raw = params.get(name)
        if raw is None or raw == "":
            values[name] = None
            continue
        try:
            values[name] = int(raw) if name == "min_items" else float(raw)
        except ValueError:
            errors[name] = [f"{raw!r} is not a {'whole number' if name == 'min_items' else 'number'}."]
    if not errors:
        try:
            verdict_parameters(**values)
        except ValueError as error:
            for problem in str(error).split("; "):
                name, _, why = problem.partition(": ")
                errors[name] = [f"{why[0].upper()}{why[1:]}."]
    if errors:
        raise ValidationError(errors)
    return VerdictQuery(
        epsilon=values["epsilon"], alpha=values["alpha"], delta=values["delta"], q=values["q"],
        min_items=values["min_items"],
    )  # fmt: skip


# --- the schema: the report's shape comes from its type (analysis/report/shape.py), which the table declarations make
# (analysis/report/tables/), so that the schema and the code cannot drift apart; its files are declared as binary.

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
    description="the judge's verdict: the Alternative Annotator Test's epsilon, in [0, 1) (default 0.15); out of "
    "range: 400",
)
ALPHA = OpenApiParameter(
    "alpha",
    float,
    description="selective judging: the disagreement allowed among kept items, in (0, 1) (default 0.1); out of "
    "range: 400",
)
DELTA = OpenApiParameter(
    "delta",
    float,
    description="selective judging: the chance the guarantee fails, in (0, 1) (default 0.1); out of range: 400",
)
Q = OpenApiParameter(
    "q",
    float,
    description="the Alternative Annotator Test's Benjamini-Yekutieli level, in (0, 1) (default 0.05); out of range: "
    "400",
)
MIN_ITEMS = OpenApiParameter(
    "min_items",
    int,
    description="the Alternative Annotator Test: the items an annotator needs to be tested, at least 1 (default 30)",
)
REPORT_SCHEMA = {**resolve_type_hint(Report), "description": "the report's tables (docs/guide-researcher.md)"}
QUALITY_SCHEMA = {**resolve_type_hint(QualityDashboard), "description": "the pool's quality dashboard"}


class ReportApi(APIView):
    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message
    renderer_classes = [JSONRenderer, CsvRenderer, LatexRenderer, HtmlRenderer]

    @extend_schema(
        parameters=[REPORT_FORMAT, TABLE, SEED, HUMAN, EPSILON, ALPHA, DELTA, Q, MIN_ITEMS],
        responses={
            (200, "application/json"): OpenApiResponse(REPORT_SCHEMA, description="the whole report"),
            (200, "text/csv"): FILE,
            (200, "text/html"): FILE,
            (200, "application/x-tex"): FILE,
            (400, "application/json"): FieldErrors,
            (404, "application/json"): Detail,
        },
    )
    def get(self, request, pool: str):
        pool_row = pool_visible_or_404(user=request.user, name=pool)
        fmt = request.accepted_renderer.format
        verdict = verdict_query(request.query_params)
        report = report_build(
            pool=pool_row,
            examples_seed=_seed(request.query_params.get("seed")),
            human_verdict=_human(request.query_params.get("human")),
            **verdict,
        )
        response = report_download(report=report, fmt=fmt, table=request.query_params.get("table"))
        if fmt == "json":
            del response["Content-Disposition"]
        return response


class PoolQualityApi(APIView):
    """`GET /api/pools/{name}/quality/`: the quality dashboard's data as JSON (researchers and admins)."""

    permission_classes = [IsAuthenticated, IsResearcher]  # a list keeps the role's message

    @extend_schema(responses={200: OpenApiResponse(QUALITY_SCHEMA), 404: Detail})
    def get(self, request, name: str):
        pool_row = pool_visible_or_404(user=request.user, name=name)
        return Response(quality_dashboard_cached(pool=pool_row))
