from celery import shared_task

from analysis.repetition import repetition_rates_fill


@shared_task(acks_late=True)
def repetition_rates_fill_task(job_id: int, instance_ids: list[int]) -> int:
    """Runs on the default queue as each generation chunk finishes, so reports start with every rate cached."""
    return repetition_rates_fill(job_ids=[job_id], instance_ids=instance_ids)
