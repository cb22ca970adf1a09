"""Server-rendered pages for generation jobs. Each view checks the role; the services do the work."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.roles import ADMIN, RESEARCHER, has_role, role_required
from common.errors import refusal_on, refusal_shown
from common.safe_csv import SafeDictWriter
from generation.datasets.templates import templates_upload_import
from generation.forms import JobForm, TemplatesImportForm
from generation.jobs.kinds import job_kind_get, job_kind_handler
from generation.jobs.services import (
    ACTIVE,
    JobDispatchError,
    job_cancel,
    job_create,
    job_resume,
    job_size,
)
from generation.models import GENERATION_KIND, Generation, JobStatus, ProbResult, TangoTemplate
from generation.selectors import (
    EXPORT_COLUMNS,
    dataset_rows,
    job_estimate,
    job_export_rows,
    job_generations,
    job_get,
    job_list,
    job_prob_results,
    job_prob_summary,
    job_resumable,
    job_sizing,
    job_spent,
    job_status_text,
    job_tango_results,
    job_timing,
)
from generation.services.dataset_imports import (
    dataset_import_cancel,
    dataset_import_create,
    dataset_import_progress,
    dataset_imports,
    upload_is_large,
)

PAGE_SIZE = 50


def _job_or_404(job_id: int, reader=None):
    job = job_get(job_id=job_id, reader=reader)
    if job is None:
        raise Http404(f"no generation job {job_id}")
    return job


@require_safe
@role_required(RESEARCHER)
def job_list_page(request):
    can_manage = has_role(request.user, ADMIN)
    rows = [_job_row(job, can_manage=can_manage) for job in job_list(reader=request.user)[:200]]
    return render(request, "generation/job_list.html", {"jobs": rows, "can_manage": can_manage})


# A running job with no estimate yet: nothing of this run finished and no recent pace of its model is known.
ETA_PENDING = "estimated after the first batch"


def _job_row(job, *, can_manage: bool) -> dict:
    """A job with its elapsed time, estimate of the time left, and the actions an admin may take on it."""
    timing = job_timing(job=job)
    handler = job_kind_get(job.kind)
    return {
        "job": job,
        "description": handler.describe(job=job) if handler is not None else job.kind,
        "status_text": job_status_text(job=job),
        "elapsed": duration_text(timing.elapsed_seconds),
        "eta": ETA_PENDING
        if job.status == JobStatus.RUNNING and timing.eta_seconds is None
        else duration_text(timing.eta_seconds),
        "eta_range": duration_range_text(timing.eta_low_seconds, timing.eta_high_seconds),
        "cancellable": can_manage and job.status in ACTIVE,
        "resumable": can_manage and job_resumable(job=job),
        # An admin may run a judge over a finished generation job's generations (judging/views.py).
        "judgeable": can_manage and job.kind == GENERATION_KIND and job.status == JobStatus.DONE,
    }


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(ADMIN)
def job_new_page(request):
    form = JobForm(request.POST or None)
    unsent = size = estimate = None
    if request.method == "POST" and form.is_valid() and "preview" in request.POST:
        assert form.parameters is not None
        size = job_size(params=form.parameters)  # "Show size and time": nothing is queued
        if form.parameters.model.is_endpoint:  # and what it would send, before anything is
            estimate = job_estimate(params=form.parameters)
    elif request.method == "POST" and form.is_valid():
        with refusal_on(form) as refused:
            job = job_create(created_by=request.user, params=form.parameters)
            messages.success(request, f"Job {job.pk} queued: {job.total_units} instances.")
            return redirect("generation-jobs")
        if isinstance(refused.error, JobDispatchError):  # the job is kept, failed and resumable: offer Resume
            unsent = _job_row(_job_or_404(refused.error.job_id), can_manage=True)
    context: dict[str, object] = {
        "form": form, "unsent": unsent, "size": size, "sizing": job_sizing(), "estimate": estimate,
    }  # fmt: skip
    if size is not None:
        context |= {
            "size_time": duration_text(size.seconds),
            "size_range": duration_range_text(size.seconds_low, size.seconds_high),
        }
    return render(request, "generation/job_new.html", context, status=503 if unsent else 200)


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(RESEARCHER)
def dataset_list_page(request):
    """The imported datasets; admins may import a templates dataset here, as `import_dataset templates` does."""
    can_manage = has_role(request.user, ADMIN)
    if request.method == "POST" and not can_manage:
        raise PermissionDenied("Importing a dataset is for the admin role.")
    form = TemplatesImportForm(request.POST or None, request.FILES or None) if can_manage else None
    if form is not None and request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if upload_is_large(
            codebook=data["codebook"],
            templates=data["templates"],
            names=data["names"],
            names_per_template=data["names_per_template"],
        ):
            with refusal_on(form):
                job = dataset_import_create(
                    name=data["name"],
                    codebook=data["codebook"],
                    templates=data["templates"],
                    names=data["names"],
                    names_per_template=data["names_per_template"],
                    seed=data["seed"],
                    created_by=request.user,
                )
                messages.success(
                    request, f"Import {job.pk} of {job.name} queued: it runs in the background; its progress is below."
                )
                return redirect(f"{reverse('generation-datasets')}#dataset-imports")
    if form is not None and request.method == "POST" and form.is_valid() and not form.errors:
        with refusal_on(form):
            result = templates_upload_import(
                name=form.cleaned_data["name"],
                codebook=form.cleaned_data["codebook"],
                templates=form.cleaned_data["templates"],
                names=form.cleaned_data["names"],
                names_per_template=form.cleaned_data["names_per_template"],
                seed=form.cleaned_data["seed"],
            )
            verb = "Imported" if result.created else "Already imported, unchanged:"
            messages.success(request, f"{verb} {result.dataset.name}: {result.instances} instances.")
            return redirect("generation-datasets")
    imports = [dataset_import_progress(job=job) for job in dataset_imports()]
    return render(
        request,
        "generation/dataset_list.html",
        {
            "datasets": dataset_rows(),
            "form": form,
            "can_manage": can_manage,
            "imports": imports,
            "imports_running": any(row["cancellable"] for row in imports),
        },
        status=400 if form is not None and form.errors else 200,
    )


@require_POST
@role_required(ADMIN)
def dataset_import_cancel_page(request, job_id: int):
    """Cancel a background upload of a templates dataset (the admin's, as uploading is): it writes nothing."""
    with refusal_shown(request):
        dataset_import_cancel(job_id=job_id, user=request.user)
        messages.success(request, f"Import {job_id} cancelled: nothing written.")
    return redirect(f"{reverse('generation-datasets')}#dataset-imports")


@require_POST
@role_required(ADMIN)
def job_cancel_page(request, job_id: int):
    job = _job_or_404(job_id, request.user)
    with refusal_shown(request):
        job_cancel(job=job, user=request.user)
        messages.success(request, f"Job {job.pk} cancelled.")
    return redirect("generation-jobs")


@require_POST
@role_required(ADMIN)
def job_resume_page(request, job_id: int):
    job = _job_or_404(job_id, request.user)
    with refusal_shown(request):
        job = job_resume(job_id=job.pk, user=request.user)
        messages.success(request, f"Job {job.pk} resumed: {job.done_items} of {job.total_items} kept.")
    if request.POST.get("back") == "job":  # a fixed choice, never an address from the form
        return redirect("generation-job-results", job_id=job.pk)
    return redirect("generation-jobs")


def duration_text(seconds: float | None) -> str:
    """12 s, 3 min 05 s, 2 h 04 min; a dash when unknown (static/js/generation-jobs.js writes the same)."""
    if seconds is None:
        return "—"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def duration_range_text(low: float | None, high: float | None) -> str:
    """The range as "10 min 05 s–14 min 30 s"; empty when unknown (static/js/generation-jobs.js writes the same)."""
    if low is None or high is None:
        return ""
    return f"{duration_text(low)}–{duration_text(high)}"


class _Echo:
    """A file that hands back what is written to it, so csv writes can be streamed."""

    def write(self, value: str) -> str:
        return value


@require_safe
@role_required(RESEARCHER)
def job_export_page(request, job_id: int):
    """The job's generations as CSV (the export_generations columns), streamed; formula-like cells neutralised."""
    job = _job_or_404(job_id, request.user)
    writer = SafeDictWriter(_Echo(), fieldnames=EXPORT_COLUMNS)

    def lines():
        yield writer.writeheader()
        for row in job_export_rows(job=job):
            yield writer.writerow(row)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="job-{job.pk}-generations.csv"'
    return response


@require_safe
@role_required(RESEARCHER)
def job_results_page(request, job_id: int):
    job = _job_or_404(job_id, request.user)
    run = job.generation_run_or_none  # None: a job of another kind, whose page shows no generations
    setting = request.GET.get("setting") or None
    if run is None or setting not in run.settings:  # pre, post, or TANGO's open; anything else shows them all
        setting = None
    page = Paginator(job_generations(job=job, setting=setting), PAGE_SIZE).get_page(request.GET.get("page"))
    summary = job_prob_summary(job=job)
    rows: list[tuple[Generation, ProbResult | TangoTemplate | None]]
    if summary["tango"]:  # Prob-TANGO: one template and verdict per generation
        tangos = job_tango_results(job=job, generation_ids=[g.pk for g in page])
        rows = [(generation, tangos.get(generation.pk)) for generation in page]
    else:
        probs = job_prob_results(job=job, instance_ids={g.instance_id for g in page})
        rows = [(generation, probs.get(generation.instance_id)) for generation in page]
    return render(
        request,
        "generation/job_results.html",
        {
            "job": job,
            "run": run,
            "job_row": _job_row(job, can_manage=has_role(request.user, ADMIN)),
            "page": page,
            "rows": rows,
            "setting": setting or "",
            "summary": summary,
            # What the job's requests to its model's endpoint cost (none for local weights).
            "spent": job_spent(job=job) if job.model.is_endpoint else None,
            "facts": job_kind_handler(job.kind).facts(job=job),
        },
    )
