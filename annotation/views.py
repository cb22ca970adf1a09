"""Server-rendered pages. The annotation page carries no item data: its script loads items from the blinded API."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.projects import ProjectError, project_choose, project_default, projects_of
from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, role_required
from annotation import selectors
from annotation.access import ASSIGN_REFUSED, pool_may_assign, pool_visible_or_404, pools_visible_to
from annotation.active import judge_runs_to_draw_from
from annotation.forms import AdjudicationForm, AssignForm, ImportGenerationsForm, PoolFilesForm, PoolSampleForm
from annotation.machine import machine_labels
from annotation.middleware import PARTICIPANT_SESSION_KEY
from annotation.models import Pool, PoolImport, PoolItem, Recruitment
from annotation.referents import item_people
from annotation.schema import ITEM_SHAPES, LABEL_NAMES, label_guideline
from annotation.selectors import research
from annotation.services import (
    adjudication_save,
    assignments_create,
    pool_sample,
)
from annotation.services.guidelines import pool_guideline, pool_guidelines_set
from annotation.services.imports.catalog import import_format
from annotation.services.imports.jobs import import_job_cancel, import_job_progress
from annotation.services.pool import pool_create
from annotation.services.preview import GENERATIONS
from annotation.services.qualification import (
    pass_mark_parse,
    pool_pass_mark_set,
    qualification_reset,
)
from annotation.services.recruitment import study_path
from common.errors import refusal_on, refusal_shown


@require_safe
@role_required(ANNOTATOR)
def annotate(request):
    """The annotator's pools; with exactly one, its annotation page."""
    pools = selectors.annotator_pools(user=request.user)
    if len(pools) == 1:
        return _annotate_page(request, pool=pools[0].name, pools=pools)
    return render(request, "annotation/annotate_pools.html", {"pools": pools})


@require_safe
@role_required(ANNOTATOR)
def annotate_pool(request, pool: str):
    """The annotation page of one of the annotator's pools: its label set, guidelines and queue."""
    pools = selectors.annotator_pools(user=request.user)
    if pool not in {row.name for row in pools}:
        raise Http404("No such pool among your work.")
    return _annotate_page(request, pool=pool, pools=pools)


def _annotate_page(request, *, pool: str, pools: list):
    pool_row = get_object_or_404(Pool, name=pool)
    labels = [{"key": label, **label_guideline(label)} for label in pool_row.labels]
    return render(
        request,
        "annotation/annotate.html",
        {
            "pool": pool_row,
            "labels": labels,
            "label_names": {label["key"]: label["name"] for label in labels},
            "tags": ITEM_SHAPES[pool_row.flags].flags,
            "shape": ITEM_SHAPES[pool_row.flags],
            "several_pools": len(pools) > 1,
            "guideline": pool_guideline(pool=pool_row),
            # A study participant's page goes to their code once their queue is done (annotation/study_views.py).
            "study_finish": PARTICIPANT_SESSION_KEY in request.session,
        },
    )


@require_safe
@role_required(RESEARCHER)
def pool_list(request):
    return render(
        request,
        "annotation/pool_list.html",
        {"pools": pools_visible_to(user=request.user, pools=research.pool_summaries())},
    )


def _pool_detail_context(pool: Pool, import_form: ImportGenerationsForm, user) -> dict:
    annotators, cells = research.pool_progress(pool=pool)
    return {
        "pool": pool,
        "may_assign": pool_may_assign(user=user, pool=pool),
        "annotators": annotators,
        "cells": cells,
        "items": pool.items.count(),
        "kinds": research.pool_kind_counts(pool=pool),
        "import_form": import_form,
        "import_jobs": [import_job_progress(job=job) for job in pool.import_jobs.select_related("pool", "job")[:10]],
        **_recruitment_context(pool),
    }


def _recruitment_context(pool: Pool) -> dict:
    """The pool page's recruitment section (annotation/study_views.py): the recruitment and its link's path."""
    recruitment = Recruitment.objects.filter(pool=pool).first()
    return {"recruitment": recruitment, "study_path": study_path(recruitment) if recruitment else ""}


@require_safe
@role_required(RESEARCHER)
def pool_detail(request, name: str):
    pool = pool_visible_or_404(user=request.user, name=name)
    return render(
        request, "annotation/pool_detail.html", _pool_detail_context(pool, ImportGenerationsForm(), request.user)
    )


@require_http_methods(["GET", "HEAD", "POST"])  # GET: back to the pool page
@role_required(RESEARCHER)
def pool_import(request, name: str):
    """Generations uploaded from the pool page: the same import service, the same checks, errors on the page."""
    pool = pool_visible_or_404(user=request.user, name=name)
    if request.method != "POST":
        return redirect("annotation:pool-detail", name=pool.name)
    form = ImportGenerationsForm(request.POST, request.FILES)
    entry = import_format(GENERATIONS)  # the form's files are generations of the item kind it names
    options: dict = {}
    if form.is_valid():
        # The label set and codebook of free-text generations, checked first (the catalog's options).
        with refusal_on(form, say="Import failed, nothing was written: {}."):
            options = entry.options_from(form.cleaned_data)
    if form.is_valid() and request.POST.get("preview") == "true":
        # Check every row and show the first ones; nothing is written.
        data = form.cleaned_data
        preview = entry.preview(pool, data["csv_files"], options, data["kind"])
        context = {**_pool_detail_context(pool, form, request.user), "generations_preview": preview}
        # The page's script asks in the background and shows the answer in place, the files still chosen.
        context["files_kept"] = request.headers.get("X-Preview-In-Place") == "1"
        return render(request, "annotation/pool_detail.html", context, status=200 if preview["ok"] else 400)
    if form.is_valid():
        # Run in the background (annotation/services/imports/jobs.py): the page answers at once and shows its state.
        data = form.cleaned_data
        with refusal_on(form, say="Import failed, nothing was written: {}."):
            outcome = entry.run(pool, data["csv_files"], options, data["kind"], request.user)
            messages.success(request, outcome.message)
            return redirect(f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#import")
    response = render(request, "annotation/pool_detail.html", _pool_detail_context(pool, form, request.user))
    response.status_code = 400
    return response


@require_POST
@role_required(RESEARCHER)
def pool_import_cancel(request, name: str, job_id: int):
    """Cancel a queued or running import of the pool (its uploader's role): it stops at its next batch."""
    job = get_object_or_404(PoolImport, pk=job_id, pool=pool_visible_or_404(user=request.user, name=name))
    with refusal_shown(request):
        import_job_cancel(job=job, user=request.user)
        messages.success(request, f"Import {job.pk} cancelled; the rows it had written stay in the pool.")
    return redirect(f"{reverse('annotation:pool-detail', kwargs={'name': name})}#import")


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(RESEARCHER)
def pool_guidelines(request, name: str):
    """The pool's guidelines: every version, readable; a POST saves the text as a new version."""
    pool = pool_visible_or_404(user=request.user, name=name)
    status = 200
    text = request.POST.get("text", "") if request.method == "POST" else ""
    if request.method == "POST":
        with refusal_shown(request, say="Not saved: {}.") as refused:
            guideline = pool_guidelines_set(pool=pool, text=text, user=request.user)
            messages.success(request, f"Saved as version {guideline.version}.")
            return redirect("annotation:pool-guidelines", name=pool.name)
        if refused.error:
            status = 400
    versions = list(pool.guidelines.order_by("-version"))
    current = versions[0].text if versions else ""
    context = {"pool": pool, "versions": versions, "text": text or current}
    return render(request, "annotation/pool_guidelines.html", context, status=status)


@require_http_methods(["GET", "HEAD", "POST"])  # GET: back to the pool page
@role_required(RESEARCHER)
def pool_qualification(request, name: str):
    """The pool page's qualification controls: a new pass mark (`pass_mark`), or a new training round for an
    annotator who failed it (`reset`: the username). The same services as `manage.py pool_qualification`."""
    pool = pool_visible_or_404(user=request.user, name=name)
    back = f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#by-annotator"
    if request.method != "POST":
        return redirect(back)
    with refusal_shown(request, say="Not changed: {}."):
        if "reset" in request.POST:
            username = request.POST["reset"]
            if "\x00" in username:  # no one is named so, and PostgreSQL cannot even look the name up
                raise BadRequest("Not changed: reset: holds a NUL character")
            before = qualification_reset(pool=pool, username=username, user=request.user)
            messages.success(
                request,
                f"{username} has a new training round ({before['correct']} of {before['total']} before); "
                "their earlier answers are in the audit trail.",
            )
        else:
            mark = pass_mark_parse(request.POST.get("pass_mark", ""))
            pool_pass_mark_set(pool=pool, pass_mark=mark, user=request.user)
            messages.success(request, f"The pass mark is now {mark:.0%}.")
    return redirect(back)


def _holds_nul(form) -> bool:
    return any(
        error.code == "null_characters_not_allowed" for errors in form.errors.as_data().values() for error in errors
    )


def _pronoun_tokens(item: PoolItem) -> list[dict]:
    """A distractor item's pronoun tokens, whose referents the adjudicator may settle; none for other items."""
    people = item_people(item)
    return people["pronoun_tokens"] if people else []


def _adjudication_post(request, pool: Pool):
    form = AdjudicationForm(request.POST, labels=pool.labels)
    if not form.is_valid() and ("item" in form.errors or _holds_nul(form)):  # nothing to look up, or no text
        raise BadRequest(f"Not saved: {form.errors.as_text()}")
    item = get_object_or_404(PoolItem, pool=pool, public_id=form.cleaned_data["item"])
    form = AdjudicationForm(request.POST, labels=pool.labels, tokens=_pronoun_tokens(item))
    if not form.is_valid():
        messages.error(request, f"Not saved: {form.errors.as_text()}")
        return item
    with refusal_shown(request, say="Not saved: {}"):
        adjudication_save(
            item=item,
            label=form.cleaned_data["label"],
            extraneous=form.cleaned_data["extraneous"],
            spans=form.spans_decided(),
            notes=form.cleaned_data["notes"],
            adjudicator=request.user,
            referents=form.referents_decided(),
        )
        messages.success(request, "Adjudication saved.")
    return item


def _annotator_referents(row, tokens: list[dict]) -> dict[str, str]:
    """Per referent field: what each annotator chose for that pronoun ("alice: target, bob: other")."""
    if not tokens:
        return {}
    chosen: dict[str, list[str]] = {}
    for annotation, _ in row.annotations:
        for referent in annotation.referents.all():
            chosen.setdefault(f"referent_{referent.start}_{referent.end}", []).append(
                f"{annotation.annotator.username}: {referent.referent}"
            )
    return {name: ", ".join(choices) for name, choices in chosen.items()}


ADJUDICATION_PAGE_SIZE = 50  # items per page of the adjudication page


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(RESEARCHER)
def pool_adjudicate(request, name: str):
    pool = pool_visible_or_404(user=request.user, name=name)
    if request.method == "POST":
        item = _adjudication_post(request, pool)
        # Back to the same filters; the query is parsed and re-encoded, never echoed.
        filters = QueryDict(request.POST.get("back", "").lstrip("?")).urlencode()
        return redirect(f"{request.path}{'?' + filters if filters else ''}#item-{item.public_id}")
    kind = request.GET.get("kind") if request.GET.get("kind") in research.DISAGREEMENT_KINDS else None
    status = request.GET.get("status") if request.GET.get("status") in ("open", "adjudicated") else None
    sort = request.GET.get("sort") if request.GET.get("sort") in research.SORTS else "item"
    model = request.GET.get("model") or None
    page = research.pool_disagreements_page(
        pool=pool, kind=kind, status=status, model=model, sort=sort, page=_page_number(request),
        per_page=ADJUDICATION_PAGE_SIZE,
    )  # fmt: skip
    disagreements = page.rows
    # Machine raters, each with its origin as a badge: the heuristic, and LLM judges (annotation/machine.py).
    machine = machine_labels(pool=pool, item_ids=[row.item.pk for row in disagreements])
    rows = []
    for row in disagreements:
        verdict = row.adjudication
        initial: dict[str, object] = {"item": row.item.public_id}
        if verdict is not None:
            initial.update(
                label=verdict.label,
                extraneous="" if verdict.extraneous is None else ("yes" if verdict.extraneous else "no"),
                decide_spans=verdict.spans is not None,
                spans=[f"{start}-{end}" for start, end in verdict.spans or []],
                notes=verdict.notes,
            )
            initial.update({f"referent_{start}_{end}": referent for start, end, referent in verdict.referents or []})
        tokens = _pronoun_tokens(row.item)
        form = AdjudicationForm(initial=initial, labels=pool.labels, words=row.marked_words, tokens=tokens)
        chosen = _annotator_referents(row, tokens)
        # Each pronoun's choice, with what the annotators chose for it beside it.
        form.referent_rows = [(form[name], chosen.get(name, "")) for name in form.referent_names]
        form.machine_labels = machine.get(row.item.pk, [])  # shown with the form, as badges
        rows.append((row, form))
    context = {
        "pool": pool,
        "rows": rows,
        "label_names": LABEL_NAMES,
        "kinds": research.DISAGREEMENT_KINDS,
        "sorts": research.SORTS,
        "models": research.pool_models(pool=pool),
        "chosen": {"kind": kind or "", "status": status or "", "sort": sort, "model": model or ""},
        "query": "?" + request.GET.urlencode() if request.GET else "",
        "page": page,
        "page_links": _page_links(request, page),
    }
    return render(request, "annotation/adjudicate.html", context)


def _page_number(request) -> int:
    try:
        return int(request.GET.get("page", "1"))
    except ValueError:
        return 1


def _page_links(request, page: research.DisagreementPage) -> dict[str, str]:
    """The previous and next pages' queries, the filters kept (parsed and re-encoded, never echoed)."""
    links = {}
    for name, number in (("previous", page.number - 1), ("next", page.number + 1)):
        if 1 <= number <= page.pages:
            query = request.GET.copy()
            query["page"] = str(number)
            links[name] = "?" + query.urlencode()
    return links


def _short_cells_ticked(message: str) -> str:
    # The service names the command's flag; on this page the same choice is the "Allow short" checkbox.
    return message.replace("use --allow-short", 'tick "Allow short" below')


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(ADMIN)
def pool_sample_page(request):
    form = PoolSampleForm(
        request.POST or None,
        jobs=research.finished_jobs(),
        projects=projects_of(user=request.user),
        judge_runs=judge_runs_to_draw_from(),
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with refusal_on(form, say=_short_cells_ticked):
            result = pool_sample(
                project=data["project"] or project_default(),
                name=data["name"],
                job_ids=data["jobs"],
                draw=data["draw"],
                instances=data["instances"],
                per_cell=data["per_cell"],
                seed=data["seed"],
                allow_short=data["allow_short"],
                created_by=request.user,
                active=data["active"],
                judge_run=data["judge_run"],
                budget=data["budget"],
            )
            for cell in result.short:
                messages.warning(request, f"Short cell: {cell}")
            assert result.pool is not None  # pool_sample returns the pool it wrote, or raises
            messages.success(request, f"Pool {result.pool.name}: {result.items} items in {len(result.cells)} cells.")
            return redirect("annotation:pool-detail", name=result.pool.name)
    return render(request, "annotation/pool_sample.html", {"form": form})


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(RESEARCHER)
def pool_assign_page(request, name: str):
    pool = pool_visible_or_404(user=request.user, name=name)
    if not pool_may_assign(user=request.user, pool=pool):
        raise PermissionDenied(ASSIGN_REFUSED)
    usernames = list(research.annotators().values_list("username", flat=True))
    form = AssignForm(request.POST or None, usernames=usernames)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with refusal_on(form):
            result = assignments_create(
                pool=pool,
                usernames=data["annotators"],
                overlap=data["overlap"],
                raters=data.get("raters") or 2,
                seed=data["seed"],
                user=request.user,
            )
            messages.success(
                request,
                f"{result.created} new assignments; {result.overlap_items} overlap items ({result.raters} annotators"
                f" each); {result.reordered} open assignments reordered to make room.",
            )
            return redirect("annotation:pool-detail", name=pool.name)
    status = 400 if request.method == "POST" else 200  # the form again, with what was wrong
    return render(request, "annotation/pool_assign.html", {"pool": pool, "form": form}, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(RESEARCHER)
def pool_files_page(request):
    """New pool from files: its name, label set and project; then its page takes the generations, people's labels and
    judges' labels (docs/guide-researcher.md, "Bring your own study")."""
    projects = projects_of(user=request.user)
    try:
        initial = {"project": project_choose(user=request.user).name}
    except ProjectError:
        initial = {}
    form = PoolFilesForm(request.POST or None, projects=projects, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with refusal_on(form):
            pool = pool_create(
                name=data["name"], labels=data["labels"], positive=data["positive"], scale=data["scale"],
                positive_at_least=data["positive_at_least"], project=data["project"], created_by=request.user,
            )  # fmt: skip
            messages.success(
                request,
                f"Pool {pool.name} is made in project {pool.project.name}, with labels {', '.join(pool.labels)}. "
                "Upload its generations below, then people's labels and judges' labels.",
            )
            return redirect(f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#import")
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "no_project": not projects.exists()}
    return render(request, "annotation/pool_files.html", context, status=status)
