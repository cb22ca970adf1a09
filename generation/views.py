"""Server-rendered pages for generation jobs. Each view checks the role; the services do the work."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, RESEARCHER, has_role, role_required
from generation.forms import JobForm
from generation.selectors import job_generations, job_get, job_list, job_prob_results, job_prob_summary
from generation.services.jobs import JobParameterError, JobStateError, job_cancel, job_create

PAGE_SIZE = 50


def _job_or_404(job_id: int):
    job = job_get(job_id=job_id)
    if job is None:
        raise Http404(f"no generation job {job_id}")
    return job


@role_required(RESEARCHER)
def job_list_page(request):
    return render(
        request,
        "generation/job_list.html",
        {"jobs": job_list()[:200], "can_manage": has_role(request.user, ADMIN)},
    )


@role_required(ADMIN)
def job_new_page(request):
    form = JobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = job_create(created_by=request.user, **form.cleaned_data)
        except JobParameterError as exc:
            for field, message in exc.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, f"Job {job.pk} queued: {job.total_instances} instances.")
            return redirect("generation-jobs")
    return render(request, "generation/job_new.html", {"form": form})


@role_required(ADMIN)
@require_POST
def job_cancel_page(request, job_id: int):
    job = _job_or_404(job_id)
    try:
        job_cancel(job=job)
    except JobStateError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Job {job.pk} cancelled.")
    return redirect("generation-jobs")


@role_required(RESEARCHER)
def job_results_page(request, job_id: int):
    job = _job_or_404(job_id)
    setting = request.GET.get("setting") or None
    if setting not in (None, "pre", "post"):
        setting = None
    page = Paginator(job_generations(job=job, setting=setting), PAGE_SIZE).get_page(request.GET.get("page"))
    probs = job_prob_results(job=job, instance_ids={g.instance_id for g in page})
    rows = [(generation, probs.get(generation.instance_id)) for generation in page]
    return render(
        request,
        "generation/job_results.html",
        {"job": job, "page": page, "rows": rows, "setting": setting or "", "summary": job_prob_summary(job=job)},
    )
