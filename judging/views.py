"""Pages of the judging app: an admin starts a judge run over a finished generation job from the jobs page."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, role_required
from generation.jobs.services import JobDispatchError, JobParameterError
from judging.services.runs import judge_run_create


@require_POST
@role_required(ADMIN)
def job_judge_page(request, job_id: int):
    """Queue a run of the named judge over every generation of the job (or resume the equal unfinished run)."""
    try:
        run, created = judge_run_create(job=job_id, judge=request.POST.get("judge", ""), created_by=request.user)
    except JobParameterError as exc:
        messages.error(request, f"Judge run not queued: {exc}")
    except JobDispatchError as exc:
        messages.error(request, str(exc))
    else:
        if created:
            messages.success(
                request, f"Judge run {run.pk} queued: {run.judge} over {run.total_items} generations of job {job_id}."
            )
        else:
            messages.info(request, f"Judge run {run.pk} of {run.judge} over job {job_id} exists ({run.state}).")
    return redirect("generation-jobs")
