"""Celery tasks: thin wrappers that take ids and call services. Routed to the `generation` queue (settings).

Late acknowledgement (settings) means a chunk whose worker dies is delivered again, and each worker's sweeper
(config/celery.py) sends it again sooner, once its lease expires; `chunk_run` is safe to repeat and runs a chunk in one
place at a time. Transient errors are retried inside `chunk_run`.
"""

from celery import shared_task

from generation.jobs.chunks import chunk_run


@shared_task(name="generation.tasks.chunk_run_task")
def chunk_run_task(chunk_id: int) -> None:
    chunk_run(chunk_id=chunk_id)
