"""What judging hooks into at start-up (JudgingConfig.ready): the `judge` and `judge_check` job kinds, the machine labels that
annotation's adjudication page and raw export show (annotation/machine.py), and the `judge_labels` import format
(annotation/services/imports/catalog.py), without annotation importing judging."""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework import serializers

from annotation.machine import MachineLabel as ShownLabel
from annotation.models import Pool, PoolItem
from generation.models import Job


class JudgeLabels:
    """Each judge's labels of a pool's items, from its newest finished runs that cover the pool (the pool's own
    runs and the runs over its jobs: an item takes its generation's label), as annotation shows machine labels."""

    def labels(self, *, pool: Pool, item_ids: Iterable[int]) -> dict[int, list[ShownLabel]]:
        from judging.selectors import pool_judge_labels

        found: dict[int, list[ShownLabel]] = {}
        for labels in pool_judge_labels(pool=pool, item_ids=list(item_ids)).values():
            for item_id, row in labels.items():
                found.setdefault(item_id, []).append(ShownLabel(row.run.judge.origin, row.label, row.confidence))
        return found

    def export_rows(self, *, pool: Pool) -> list[dict]:
        from annotation.selectors.export import machine_export_row
        from judging.selectors import pool_judge_labels

        rows = []
        for labels in pool_judge_labels(pool=pool).values():
            items = PoolItem.objects.in_bulk(list(labels))
            for item_id, label in labels.items():
                run = label.run
                confidence = "none" if label.confidence is None else f"{label.confidence:.4f}"
                note = f"{run.judge} ({run.mode}), run {run.pk}, confidence {confidence}"
                rows.append(
                    machine_export_row(
                        pool=pool, item=items[item_id], origin=run.judge.origin, label=label.label, notes=note
                    )
                )
        return rows


class JudgeLabelOptions(serializers.Serializer):
    judge = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="judge_labels: the judge's name"
    )
    model_id = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="judge_labels: e.g. gpt-4o"
    )
    description = serializers.CharField(required=False, allow_blank=True, default="", help_text="judge_labels")
    extend_labels = serializers.BooleanField(
        default=False, help_text="judge_labels: add labels outside the pool's set as categories"
    )
    prompt = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        help_text="judge_labels: the prompt it was given",
    )  # fmt: skip


def judge_labels_parse(pool: Pool, source, options: dict, kind: str | None = None):
    from annotation.services.imports.catalog import Parsed
    from annotation.services.label_files import LabelImportError
    from judging.services.imports import judge_labels_plan

    try:
        plan = judge_labels_plan(source=source, pool=pool, extend_labels=options["extend_labels"])
    except LabelImportError as exc:
        return Parsed([], exc.errors)
    return Parsed([row.preview() for row, _ in plan.rows], [])


def judge_labels_preview(pool: Pool, files: list, options: dict, kind: str | None = None) -> dict:
    from annotation.services.imports.catalog import upload_of
    from judging.services.imports import judge_labels_preview

    return judge_labels_preview(source=upload_of(files[0]), pool=pool, extend_labels=options["extend_labels"])


def judge_labels_run(pool: Pool, files: list, options: dict, kind: str | None = None, user=None):
    """An external judge's labels uploaded on the pool page or through the API: one imported judge run."""
    from annotation.services.imports.catalog import ImportOutcome, upload_of
    from judging.services.imports import judge_labels_import

    run, plan = judge_labels_import(
        source=upload_of(files[0]), pool_name=pool.name, judge=options["judge"], model_id=options["model_id"],
        description=options["description"], prompt=options["prompt"], created_by=user,
        extend_labels=options["extend_labels"],
    )  # fmt: skip
    summary = {**plan.summary(), "run": run.pk, "judge": run.judge.name, "version": run.judge.version}
    message = (
        f"{summary['file']}: judge run {summary['run']} of {summary['judge']} v{summary['version']}, "
        f"{summary['labels']} labels imported."
    )
    return ImportOutcome(message=message, summary=summary)


def audit_hidden(reader):
    """The audit entries on judge runs over pools `reader` may not see, and on those runs' jobs (common.audit's hook;
    docs/domain.md, "Projects"); runs over a generation job are everyone's."""
    from django.contrib.contenttypes.models import ContentType
    from django.db.models import Q

    from accounts.roles import ADMIN, has_role
    from annotation.access import pools_visible_to
    from generation.models import Job
    from judging.models import JudgeRun

    if has_role(reader, ADMIN):
        return None
    hidden_runs = JudgeRun.objects.filter(pool__isnull=False).exclude(pool__in=pools_visible_to(user=reader))
    return Q(content_type=ContentType.objects.get_for_model(JudgeRun), object_id__in=hidden_runs.values("pk")) | Q(
        content_type=ContentType.objects.get_for_model(Job), object_id__in=hidden_runs.values("job_id")
    )


def jobs_hidden(reader):
    """The judge jobs over pools `reader` may not see (generation.selectors' hook; docs/domain.md, "Projects")."""
    from django.db.models import Q

    from accounts.roles import ADMIN, has_role
    from annotation.access import pools_visible_to

    if has_role(reader, ADMIN):
        return None
    return Q(judge_run__pool__isnull=False) & ~Q(judge_run__pool__in=pools_visible_to(user=reader))


def _judged_pools_changed(sender, *, job_ids: list[int], **kwargs) -> None:
    """A judge run's or a check run's job progressed: the pool it judges changed, and so did the pools drawn from the
    generation job it judges (their reports read its labels).

    The jobs' runs are read first, from the jobs' rows: most jobs that progress are no judge's, and then that one
    read is all (the pools' three-way join, asked for every job, cost more)."""
    from annotation.services.stamp import pool_changed

    pools: set[int] = set()
    judged_jobs: set[int] = set()
    runs = Job.objects.filter(pk__in=list(job_ids)).values_list(
        "judge_run__pool", "judge_run__source_job", "check_run__pool"
    )
    for run_pool, judged_job, check_pool in runs:
        pools.update(pool for pool in (run_pool, check_pool) if pool is not None)
        if judged_job is not None:
            judged_jobs.add(judged_job)
    if judged_jobs:
        pools.update(Pool.jobs.through.objects.filter(job_id__in=judged_jobs).values_list("pool_id", flat=True))
    pool_changed(pools=pools)


def connect() -> None:
    from annotation.active import context_probability_source_register
    from annotation.machine import machine_label_source_register
    from annotation.services.imports.catalog import JUDGE_LABELS, POOL_LABELS, ImportFormat, import_format_register
    from common.audit import audit_hidden_register
    from generation.jobs.kinds import job_kind_register
    from generation.selectors import jobs_hidden_register
    from generation.signals import jobs_changed
    from judging.active import JudgeContextProbabilities
    from judging.checks import CheckKind
    from judging.kinds import JudgeKind
    from judging.models import CHECK_KIND, JUDGE_KIND

    job_kind_register(JUDGE_KIND, JudgeKind())
    job_kind_register(CHECK_KIND, CheckKind())
    machine_label_source_register(JudgeLabels())
    import_format_register(
        ImportFormat(
            name=JUDGE_LABELS, title="an external judge's labels", options=JudgeLabelOptions,
            parse=judge_labels_parse, preview=judge_labels_preview, run=judge_labels_run, one_file=True,
            section=POOL_LABELS,
        )
    )  # fmt: skip
    context_probability_source_register(JudgeContextProbabilities())
    audit_hidden_register(audit_hidden)
    jobs_hidden_register(jobs_hidden)
    jobs_changed.connect(_judged_pools_changed, dispatch_uid="judging-judged-pools-changed")
