"""Pages of the judging app: an admin starts a judge run over a finished generation job from the jobs page; a
researcher makes a panel of judge runs from the pool page; a judge run's card."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, RESEARCHER, role_required
from common.errors import refusal_shown
from judging.services.runs import judge_run_create


@require_POST
@role_required(ADMIN)
def job_judge_page(request, job_id: int):
    """Queue a run of the named judge over every generation of the job (or resume the equal unfinished run)."""
    with refusal_shown(request, say="Judge run not queued: {}"):
        run, created = judge_run_create(job=job_id, judge=request.POST.get("judge", ""), created_by=request.user)
        if created:
            messages.success(
                request, f"Judge run {run.pk} queued: {run.judge} over {run.total_items} generations of job {job_id}."
            )
        else:
            messages.info(request, f"Judge run {run.pk} of {run.judge} over job {job_id} exists ({run.state}).")
    return redirect("generation-jobs")


@require_POST
@role_required(RESEARCHER)
def pool_panel_page(request, name: str):
    """Make a panel of the chosen judge runs (judging/panels.py); back to the pool page with what happened."""
    from annotation.access import pool_visible_or_404
    from judging.panels import panel_create
    from judging.selectors import covering_runs

    pool = pool_visible_or_404(user=request.user, name=name)
    chosen = request.POST.getlist("runs")
    covering = {str(run.pk) for run in covering_runs(pool=pool)}
    if outside := [value for value in chosen if value not in covering]:
        messages.error(request, f"Panel not made: run {', '.join(outside)} does not cover pool {pool.name}.")
        return redirect("annotation:pool-detail", name=name)
    with refusal_shown(request, say="Panel not made: {}"):
        run, ties = panel_create(name=request.POST.get("name", ""), runs=request.POST.getlist("runs"),
                                 created_by=request.user)  # fmt: skip
        messages.success(
            request, f"Panel {run.judge.name}: run {run.pk} with {run.labels.count()} labels ({ties} ties, no label)."
        )
    return redirect("annotation:pool-detail", name=name)
