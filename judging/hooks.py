"""What judging hooks into at start-up (JudgingConfig.ready): the `judge` job kind, and the machine labels that
annotation's adjudication page and raw export show (annotation/machine.py), without annotation importing judging."""

from __future__ import annotations

from collections.abc import Iterable

from annotation.machine import MachineLabel as ShownLabel
from annotation.models import Pool, PoolItem


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


class JudgeLabelImport:
    """An external judge's labels uploaded on the pool page or through the API (annotation/label_imports.py)."""

    def preview(self, *, pool: Pool, upload, options: dict) -> dict:
        from judging.services.imports import judge_labels_preview

        return judge_labels_preview(source=upload, pool=pool, extend_labels=bool(options.get("extend_labels")))

    def run(self, *, pool: Pool, upload, options: dict, user) -> dict:
        from judging.services.imports import judge_labels_import

        run, plan = judge_labels_import(
            source=upload, pool_name=pool.name, judge=str(options.get("judge") or ""),
            model_id=str(options.get("model_id") or ""), description=str(options.get("description") or ""),
            prompt=str(options.get("prompt") or ""), created_by=user,
            extend_labels=bool(options.get("extend_labels")),
        )  # fmt: skip
        return {**plan.summary(), "run": run.pk, "judge": run.judge.name, "version": run.judge.version}


def connect() -> None:
    from annotation.active import context_probability_source_register
    from annotation.label_imports import JUDGE_LABELS, label_import_kind_register
    from annotation.machine import machine_label_source_register
    from generation.jobs.kinds import job_kind_register
    from judging.active import JudgeContextProbabilities
    from judging.kinds import JudgeKind
    from judging.models import JUDGE_KIND

    job_kind_register(JUDGE_KIND, JudgeKind())
    machine_label_source_register(JudgeLabels())
    label_import_kind_register(JUDGE_LABELS, JudgeLabelImport())
    context_probability_source_register(JudgeContextProbabilities())
