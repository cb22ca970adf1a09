"""Report pages for researchers: a pool index, a report, its downloads and plots, and the cell explorer."""

from __future__ import annotations

import io
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from accounts.roles import RESEARCHER, role_required
from analysis.cells import CELL
from analysis.plots import FIGURES, VERDICT_SECTION, plot_figures, plot_for_pool, report_remember
from analysis.plots import FORMATS as PLOT_FORMATS
from analysis.report.build import pool_list_for_reports
from analysis.report.exports.html import report_tables_for_display
from analysis.responses import report_download
from analysis.selectors.active import budget_sentences
from analysis.selectors.examples import EXAMPLES_SEED, seed_parse
from analysis.selectors.explorer import cell_instance_page, pool_cells
from analysis.selectors.human import HUMAN_VERDICTS
from analysis.selectors.judges import judge_label_counts
from analysis.selectors.verdict import MIN_ITEMS as CEILING_MIN_ITEMS
from analysis.selectors.verdict import NOTE as VERDICT_NOTE
from analysis.selectors.verdict import VerdictQuery, verdict_page_rows, verdict_parameters
from analysis.services import (
    pool_escalate,
    quality_dashboard_cached,
    report_build,
    report_is_cached,
)
from analysis.study.export import study_export
from annotation.access import pool_may_assign, pool_visible_or_404, pools_visible_to
from annotation.models import Pool
from common.errors import refusal_shown
from judging.models import JudgeRun


@require_safe
@role_required(RESEARCHER)
def report_index(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "analysis/report_index.html",
        {"pools": pools_visible_to(user=request.user, pools=pool_list_for_reports())},
    )


@require_safe
@role_required(RESEARCHER)
def report_detail(request: HttpRequest, pool: str) -> HttpResponse:
    pool_row = pool_visible_or_404(user=request.user, name=pool)
    seed = _seed(request)
    verdict = _verdict(request)
    if (
        _opened_in_a_browser(request)
        and not request.GET.get("wait")
        and not report_is_cached(pool=pool_row, examples_seed=seed, **verdict)
    ):
        return _report_building(request, pool_row, seed)
    report = report_build(pool=pool_row, examples_seed=seed, **verdict)
    figures = plot_figures(report=report)
    context = {
        "pool": pool_row,
        "report": report,
        "tables": report_tables_for_display(report=report),
        # The judge's verdict's figures are shown in its own section.
        "plots": [figure for figure in figures if figure["section"] != VERDICT_SECTION],
        "verdict_plots": [figure for figure in figures if figure["section"] == VERDICT_SECTION],
        "verdicts": verdict_page_rows(report=report),
        "budget_sentences": budget_sentences(report=report),
        "verdict_note": VERDICT_NOTE,
        "plot_version": report_remember(report=report),
        "conflict_all": next((row for row in report["conflict_rate"] if row["scope"] == "all"), None),
        "cell_links": [{**row, "query": urlencode({c: row[c] for c in CELL})} for row in report["accuracy"]],
        "judge_label_counts": judge_label_counts(pool=pool_row)
        if report["judge_calibration"] or report["judge_vs_heuristic"]
        else [],
        # An imported pool has no generation job: its probability- and generation-based columns are left out.
        "automatic_accuracy": any(row["n"] and row["prob_n"] + row["gen_n"] for row in report["accuracy"])
        or bool(report["prob_vs_gen"]),
        # And any column without a figure in any row (a job without probability scoring, a pool not annotated yet).
        "accuracy_columns": {
            measure: any(row[measure] is not None for row in report["accuracy"])
            for measure in ("prob", "gen", "gen_first", "human")
        },
    }
    return render(request, "analysis/report_detail.html", context)


@require_safe
@role_required(RESEARCHER)
def report_study_bundle(request: HttpRequest, pool: str) -> HttpResponse:
    """The pool's study bundle (analysis/study/export.py): the same archive as `manage.py export_study`."""
    pool_row = pool_visible_or_404(user=request.user, name=pool)
    buffer = io.BytesIO()
    study_export(pool=pool_row, out=buffer, user=request.user)
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{pool_row.name}-study.zip"'
    return response


@require_safe
@role_required(RESEARCHER)
def report_export(request: HttpRequest, pool: str, fmt: str) -> HttpResponse:
    pool_row = pool_visible_or_404(user=request.user, name=pool)
    report = report_build(
        pool=pool_row, examples_seed=_seed(request), human_verdict=_human(request), **_verdict(request)
    )
    return report_download(report=report, fmt=fmt, table=request.GET.get("table"))


@require_safe
@role_required(RESEARCHER)
def report_plot(request: HttpRequest, pool: str, name: str, fmt: str) -> HttpResponse:
    if name not in FIGURES or fmt not in PLOT_FORMATS:
        raise Http404("No such plot.")
    pool_row = pool_visible_or_404(user=request.user, name=pool)
    version = request.GET.get("v")
    image = plot_for_pool(
        pool=pool_row.name, name=name, fmt=fmt, version=version, build=lambda: report_build(pool=pool_row)
    )
    response = HttpResponse(image, content_type=PLOT_FORMATS[fmt])
    if version:  # the address names the data version, so the browser may keep the image
        response["Cache-Control"] = "private, max-age=86400"
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{pool_row.name}-{name}.{fmt}"'
    return response


def _human(request: HttpRequest) -> str | None:
    """`?human=VERDICT`: the human label the heuristic is compared with (docs/domain.md, 'Multi-rater statistics')."""
    raw = request.GET.get("human", "")
    if raw and raw not in HUMAN_VERDICTS:
        raise BadRequest(f"{raw!r} is not a human verdict; choose one of {', '.join(HUMAN_VERDICTS)}.")
    return raw or None


def _verdict(request: HttpRequest) -> VerdictQuery:
    """`?epsilon=E&alpha=A&delta=D&q=Q&min_items=N`, the judge's verdict's parameters (each optional); a bad one is
    a 400."""
    parsed: dict = {}
    for name in ("epsilon", "alpha", "delta", "q", "min_items"):
        raw = request.GET.get(name, "")
        try:
            parsed[name] = (int(raw) if name == "min_items" else float(raw)) if raw else None
        except ValueError:
            raise BadRequest(f"{name} must be a number, got {raw!r}.") from None
    values = VerdictQuery(
        epsilon=parsed["epsilon"], alpha=parsed["alpha"], delta=parsed["delta"], q=parsed["q"],
        min_items=parsed["min_items"],
    )  # fmt: skip
    try:
        verdict_parameters(**values)
    except ValueError as error:
        raise BadRequest(f"{str(error).capitalize()}.") from None
    return values


@require_POST
@role_required(RESEARCHER)
def report_escalate(request: HttpRequest, pool: str) -> HttpResponse:
    """The verdict section's button: a new pool of what the judge abstains on (`pool_escalate`)."""
    pool_row = pool_visible_or_404(user=request.user, name=pool)
    try:
        run = JudgeRun.objects.select_related("judge", "job", "source_job").get(pk=int(request.POST.get("run", "")))
        alpha, delta = float(request.POST.get("alpha") or 0.1), float(request.POST.get("delta") or 0.1)
    except (ValueError, JudgeRun.DoesNotExist):
        messages.error(request, "Choose a judge run over the pool's generation job, and numbers for alpha and delta.")
        return redirect("report-detail", pool=pool_row.name)
    with refusal_shown(request, say="Not escalated: {}.") as refused:
        result = pool_escalate(
            pool=pool_row, run=run, name=request.POST.get("name", "").strip(), alpha=alpha, delta=delta,
            created_by=request.user,
        )  # fmt: skip
    if refused.error:
        return redirect("report-detail", pool=pool_row.name)
    if result.pool is None:
        messages.warning(request, result.message)
        return redirect("report-detail", pool=pool_row.name)
    messages.success(
        request, _ready_to_assign(result.message, may_assign=pool_may_assign(user=request.user, pool=result.pool))
    )
    return redirect("annotation:pool-detail", name=result.pool.name)


def _ready_to_assign(message: str, *, may_assign: bool) -> str:
    """The escalation's sentence for its reader: who assigns the new pool's annotators (annotation.access)."""
    if may_assign:
        return message.replace("ready to assign.", "ready to assign: Assign annotators below.")
    return message.replace("ready to assign.", "ready for an admin, or the researcher who made it, to assign.")


def _opened_in_a_browser(request: HttpRequest) -> bool:
    """A browser opening the page (Fetch Metadata: a navigation to a document), not a script or a test client."""
    return request.headers.get("Sec-Fetch-Dest") == "document" and request.headers.get("Sec-Fetch-Mode") == "navigate"


def _report_building(request: HttpRequest, pool: Pool, seed: int) -> HttpResponse:
    """A first build (long on a large pool: benchmarks/README.md, "Report") shows its progress instead of a blank
    tab: this page answers at once, asks for the smallest download of the report (which builds and caches it) and
    then opens the report with `wait=1` (served from the cache, or built there if another process has no copy)."""
    query = request.GET.copy()
    query["wait"] = "1"
    build = urlencode({"table": "conflict_rate", "seed": seed})
    context = {
        "pool": pool,
        "build_url": f"{reverse('report-export', args=[pool.name, 'json'])}?{build}",
        "report_url": f"{request.path}?{query.urlencode()}",
    }
    return render(request, "analysis/report_building.html", context)


def _seed(request: HttpRequest) -> int:
    """`?seed=N` for the qualitative examples' draw; the paper's seed by default."""
    raw = request.GET.get("seed", "")
    try:
        return seed_parse(raw) if raw else EXAMPLES_SEED
    except ValueError as error:
        raise BadRequest(str(error).capitalize()) from None


@require_safe
@role_required(RESEARCHER)
def report_cells(request: HttpRequest, pool: str) -> HttpResponse:
    """The cell explorer. With all four cell fields (`model`, `dataset`, `setting`, `pronoun`): that cell's instances,
    paged (`page`). With fewer (e.g. only `model`: the model view): the matching cells, each linked."""
    pool_row = pool_visible_or_404(user=request.user, name=pool)
    given = {c: request.GET[c] for c in CELL if request.GET.get(c)}
    if len(given) < len(CELL):
        cells = [{**row, "query": urlencode({c: row[c] for c in CELL})} for row in pool_cells(pool=pool_row, **given)]
        return render(request, "analysis/cell_list.html", {"pool": pool_row, "filters": given, "cells": cells})
    try:
        number = int(request.GET.get("page", "1"))
    except ValueError:
        return HttpResponseBadRequest("page must be a whole number.")
    page = cell_instance_page(pool=pool_row, cell=given, page=number)
    query = urlencode(given)
    return render(request, "analysis/cell_explorer.html", {"pool": pool_row, "page": page, "query": query})


CONFUSIONS_SHOWN = 50  # raters whose confusion tables the quality page draws before its "show all" link


@require_safe
@role_required(RESEARCHER)
def pool_quality(request: HttpRequest, name: str) -> HttpResponse:
    """The quality dashboard of a pool: annotator_quality, the kappa heat map, drift, time per decision and
    warnings. The page draws the first state itself and then polls `api-pool-quality` from static/js/quality.js."""
    pool_row = pool_visible_or_404(user=request.user, name=name)
    data = quality_dashboard_cached(pool=pool_row)
    # Each rater's three tables side by side, found here once: looked up in the template they were a loop over every
    # rater per rater (a crowd study's 600 raters: 720,000 steps; benchmarks/README.md, "A crowd-sized pool"). The
    # first CONFUSIONS_SHOWN raters' only, unless `?confusions=all`: a crowd study's 1,800 tables are slow to render.
    show_all = request.GET.get("confusions") == "all"
    names = list(data["confusion_gold"])
    confusions = [
        (
            name,
            data["confusion_gold"][name],
            data["confusion_aggregate"].get(name),
            data["confusion_heuristic"].get(name),
        )
        for name in (names if show_all else names[:CONFUSIONS_SHOWN])
    ]
    context = {
        "pool": pool_row,
        "data": data,
        "confusions": confusions,
        "confusions_hidden": len(names) - len(confusions),
        "ceiling_min_items": CEILING_MIN_ITEMS,
    }
    return render(request, "analysis/pool_quality.html", context)


@require_safe
@role_required(RESEARCHER)
def pair_report_page(request: HttpRequest) -> HttpResponse:
    """The stereotype pair report (docs/domain.md, 'Stereotype pair benchmarks'): bias, agreement and dimension
    mix with their figures; `?format=json|csv|latex` downloads it."""
    import base64

    from analysis.plots.pairs import pair_bias_figure, pair_dimensions_figure
    from analysis.report.exports.pairs import pair_report_render
    from analysis.selectors.pairs import PairReportError, pair_report, pair_report_rows
    from annotation.schema import PAIR_PITFALLS
    from generation.models.pairs import PAIR_METHOD_CHOICES

    methods = [value for value, _ in PAIR_METHOD_CHOICES]
    chosen_pool = request.GET.get("pool", "")
    chosen_datasets = request.GET.get("datasets", "")
    chosen_method = request.GET.get("method", "")
    visible = pools_visible_to(user=request.user)
    pools = list(visible.filter(flags=PAIR_PITFALLS).order_by("name").values_list("name", flat=True))
    context: dict = {"pools": pools, "methods": methods, "chosen_pool": chosen_pool,
                     "chosen_datasets": chosen_datasets, "chosen_method": chosen_method}  # fmt: skip
    pool = visible.filter(name=chosen_pool).first() if chosen_pool else None
    datasets = [name.strip() for name in chosen_datasets.split(",") if name.strip()] or None
    try:
        if chosen_pool and pool is None:
            raise PairReportError(f"no pool {chosen_pool!r}")
        if chosen_method and chosen_method not in methods:
            raise PairReportError(f"unknown method {chosen_method!r}")
        report = pair_report(datasets=datasets, dimensions_pool=pool, method=chosen_method or None)
    except PairReportError as exc:
        return render(request, "analysis/pair_report.html", {**context, "error": str(exc)}, status=400)
    fmt = request.GET.get("format")
    if fmt in ("json", "csv", "latex"):
        types = {"json": "application/json", "csv": "text/csv", "latex": "application/x-tex"}
        response = HttpResponse(pair_report_render(report, fmt), content_type=f"{types[fmt]}; charset=utf-8")
        suffix = {"json": "json", "csv": "csv", "latex": "tex"}[fmt]
        response["Content-Disposition"] = f'attachment; filename="pair-report.{suffix}"'
        return response
    query = {"pool": chosen_pool, "datasets": chosen_datasets, "method": chosen_method}
    context |= {"report": report, "query": urlencode({k: v for k, v in query.items() if v}), **pair_report_rows(report)}
    if report["bias"]:
        context["bias_svg"] = base64.b64encode(pair_bias_figure(report)).decode()
    if report["dimensions"]:
        context["dimensions_svg"] = base64.b64encode(pair_dimensions_figure(report)).decode()
    return render(request, "analysis/pair_report.html", context)


@require_safe
@role_required(RESEARCHER)
def judge_card_page(request: HttpRequest, run: int) -> HttpResponse:
    """A judge run's card (analysis/selectors/card.py); `?pool=NAME` picks the pool of a run over a job."""
    from analysis.report.exports.card import CARD_FORMATS, card_figures

    card = _card(request, run)
    context = {"card": card, "figures": card_figures(card), "formats": list(CARD_FORMATS)}
    return render(request, "analysis/judge_card.html", context)


@require_safe
@role_required(RESEARCHER)
def judge_card_export(request: HttpRequest, run: int, fmt: str) -> HttpResponse:
    """The card as JSON, standalone HTML (figures inline) or LaTeX."""
    from django.template.loader import render_to_string

    from analysis.report.exports.card import CARD_FORMATS, card_figures, card_json, card_latex

    if fmt not in CARD_FORMATS:
        raise Http404("No such format.")
    card = _card(request, run)
    if fmt == "json":
        body = card_json(card)
    elif fmt == "tex":
        body = card_latex(card)
    else:
        body = render_to_string("analysis/judge_card_standalone.html", {"card": card, "figures": card_figures(card)})
    response = HttpResponse(body, content_type=CARD_FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="judge-card-{card["judge"]}-run-{card["run"]}.{fmt}"'
    return response


def _card(request: HttpRequest, run: int) -> dict:
    from analysis.selectors.card import judge_card

    row = get_object_or_404(JudgeRun.objects.select_related("judge__model", "pool", "job"), pk=run)
    if row.pool_id is not None and not pools_visible_to(user=request.user).filter(pk=row.pool_id).exists():
        raise Http404("No such judge run.")  # a run over another project's pool, as one that does not exist
    return judge_card(run=row, pool=request.GET.get("pool") or None, visible=pools_visible_to(user=request.user))
