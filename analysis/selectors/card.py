"""A judge card (docs/domain.md, "Judges a reviewer trusts"): one judge run on one page, with everything a
reviewer asks of it, read from the report of a pool the run covers (its own pool; a run over a job: the pool given,
else the first pool drawn from the job): the judge, its model, prompt version and text, a panel's members, the
verdict (Alternative Annotator Test, agreement, selective threshold), its checks, calibration before and after
contextual calibration, the prediction-powered and bias-corrected rates, and the cost where the run has one.

`judge_card` gives it as a dict (its JSON export); the page and its HTML and LaTeX exports render that dict.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from analysis.selectors.verdict import selective_sentence, verdict_sentence
from annotation.models import Pool
from common.errors import ServiceError
from judging.models import RUN_PANEL, JudgeRun
from judging.panels import panel_members

# What an endpoint run spent, as the endpoint engine records it for the run's job (generation.selectors.job_spent).
COST_FIELDS = ("requests", "tokens_in", "tokens_out", "cost_usd")


class CardError(ServiceError, ValueError):
    pass


def card_pool(*, run: JudgeRun, pool: str | None = None, visible: QuerySet[Pool] | None = None) -> Pool | None:
    """The pool whose report the card reads: the run's own, else the named one (which must be drawn from the run's
    job), else the first pool drawn from the job; None when no pool covers the run. `visible`: the pools the reader
    may see (annotation.access), the others as if they did not exist."""
    visible = Pool.objects.all() if visible is None else visible
    if run.pool is not None:
        if pool and pool != run.pool.name:
            raise CardError(f"run {run.pk} is over pool {run.pool.name}, not {pool}")
        return visible.filter(pk=run.pool.pk).first()
    pools = visible.filter(jobs=run.source_job_id).order_by("id")
    if pool:
        chosen = pools.filter(name=pool).first()
        if chosen is None:
            raise CardError(f"pool {pool} is not drawn from job {run.source_job_id}, which run {run.pk} judges")
        return chosen
    return pools.first()


def _cost(run: JudgeRun) -> dict[str, Any] | None:
    """What the run's job spent on its endpoint (requests sent, tokens in and out, the cost in USD where the model
    declares prices, else None); None for a run on local weights, which sends nothing."""
    from generation.selectors import job_spent

    if not run.judge.model.is_endpoint:
        return None
    spent = job_spent(job=run.job)
    return {field: spent[field] for field in COST_FIELDS}


def judge_card(
    *, run: JudgeRun, pool: str | None = None, report: dict | None = None, visible: QuerySet[Pool] | None = None
) -> dict:
    """The card of one judge run (see the module docstring). `report`: the pool's report, built here (cached)
    unless the caller has it."""
    from analysis.services import report_build

    chosen = card_pool(run=run, pool=pool, visible=visible)
    if report is None and chosen is not None:
        report = report_build(pool=chosen)
    report = report or {}
    judge = run.judge
    name = judge.name
    verdict = next((row for row in report.get("judge_verdict") or [] if row["run"] == run.pk), None)
    calibration = next(
        (row for row in report.get("judge_calibration") or [] if row["judge"] == name and row["model"] is None), None
    )
    checks = [row for row in report.get("judge_checks") or [] if row["judge"] == name]
    contextual = next((row for row in checks if row["check"] == "contextual"), None)
    members = panel_members(run=run) if run.origin == RUN_PANEL else []
    return {
        "judge": name,
        "version": judge.version,
        "run": run.pk,
        "origin": run.origin,
        "scope": run.scope,
        "pool": chosen.name if chosen is not None else None,
        "model": judge.model.name,
        "model_source": judge.model.source,
        "mode": run.mode,
        "k": run.k,
        "temperature": run.temperature,
        "prompt_version": judge.version,
        "prompt": judge.template,
        "options": judge.option_map,
        "description": judge.description,
        "members": [
            {"run": m.pk, "judge": m.judge.name, "version": m.judge.version, "model": m.judge.model.name}
            for m in members
        ],
        "n_labels": run.labels.count(),
        "n_unlabelled": run.labels.filter(label="").count(),  # a panel's ties; answers naming no option
        "verdict": verdict,
        "verdict_sentence": verdict_sentence(verdict) if verdict else None,
        "selective_sentence": selective_sentence(verdict) if verdict else None,
        "calibration": {
            "before": calibration,
            "reliability_before": [r for r in report.get("judge_reliability") or [] if r["judge"] == name],
            "contextual": contextual,
        },
        "checks": checks,
        "rates": [row for row in report.get("prediction_powered") or [] if row["run"] == run.pk],
        "rates_corrected": [row for row in report.get("rates_corrected") or [] if row["run"] == run.pk],
        "cost": _cost(run),
    }
