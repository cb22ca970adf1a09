"""Analysis listens to generation (generation/signals.py); generation imports nothing from analysis.

Connected in AnalysisConfig.ready(). Kept light: the task module (and spaCy behind it) loads only when a chunk ends.
"""

from django.db import transaction
from django.dispatch import receiver

from generation.signals import chunk_finished


@receiver(chunk_finished, dispatch_uid="analysis.repetition_rates")
def repetition_rates_queue(sender, *, job_id: int, instance_ids: list[int], **kwargs) -> None:
    """Reports need every generation's repetition rate; tokenizing them as chunks finish (a task on the default
    queue, or inline without a broker) keeps a paper-scale report from tokenizing 600k texts on its first request."""
    from analysis.tasks import repetition_rates_fill_task

    ids = list(instance_ids)
    transaction.on_commit(lambda: repetition_rates_fill_task.delay(job_id, ids))
