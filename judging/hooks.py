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
                note = f"{run.judge} ({run.mode}), run {run.pk}, confidence {label.confidence:.4f}"
                rows.append(
                    machine_export_row(
                        pool=pool, item=items[item_id], origin=run.judge.origin, label=label.label, notes=note
                    )
                )
        return rows


def connect() -> None:
    from annotation.machine import machine_label_source_register
    from generation.jobs.kinds import job_kind_register
    from judging.kinds import JudgeKind
    from judging.models import JUDGE_KIND

    job_kind_register(JUDGE_KIND, JudgeKind())
    machine_label_source_register(JudgeLabels())
