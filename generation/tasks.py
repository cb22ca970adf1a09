"""Celery tasks: thin wrappers that take ids and call services. Routed to the `generation` queue (settings).

Late acknowledgement (settings) means a chunk whose worker dies is delivered again; `chunk_run` is safe to repeat.
"""

from celery import shared_task

from generation.services.chunks import chunk_run


@shared_task(name="generation.tasks.chunk_run_task")
def chunk_run_task(chunk_id: int) -> None:
    chunk_run(chunk_id=chunk_id)
