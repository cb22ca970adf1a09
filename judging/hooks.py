"""What judging hooks into at start-up (JudgingConfig.ready): the `judge` job kind, and the machine labels that
annotation's adjudication page and raw export show (annotation/machine.py), without annotation importing judging."""

from __future__ import annotations

from collections.abc import Iterable

from annotation.machine import MachineLabel as ShownLabel
from annotation.models import Pool, PoolItem


class JudgeLabels:
    """The newest finished run of each judge of a pool, as annotation shows machine labels."""

    def labels(self, *, pool: Pool, item_ids: Iterable[int]) -> dict[int, list[ShownLabel]]:
        from judging.models import MachineLabel
        from judging.selectors import finished_runs

        found: dict[int, list[ShownLabel]] = {}
        for run in finished_runs(pool=pool):
            rows = MachineLabel.objects.filter(run=run, item_id__in=list(item_ids)).values_list(
                "item_id", "label", "confidence"
            )
            for item_id, label, confidence in rows:
                found.setdefault(item_id, []).append(ShownLabel(run.judge.origin, label, confidence))
        return found

    def export_rows(self, *, pool: Pool) -> list[dict]:
        from annotation.selectors.export import machine_export_row
        from judging.models import MachineLabel
        from judging.selectors import finished_runs

        rows = []
        for run in finished_runs(pool=pool):
            labels = MachineLabel.objects.filter(run=run).order_by("item_id")
            items = PoolItem.objects.in_bulk([label.item_id for label in labels])
            for label in labels:
                note = f"{run.judge} ({run.mode}), run {run.pk}, confidence {label.confidence:.4f}"
                rows.append(
                    machine_export_row(
                        pool=pool, item=items[label.item_id], origin=run.judge.origin, label=label.label, notes=note
                    )
                )
        return rows


def connect() -> None:
    from annotation.machine import machine_label_source_register
    from generation.services.kinds import job_kind_register
    from judging.kinds import JudgeKind
    from judging.models import JUDGE_KIND

    job_kind_register(JUDGE_KIND, JudgeKind())
    machine_label_source_register(JudgeLabels())
