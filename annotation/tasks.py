"""Celery tasks of the annotation app: thin, they take an id and call a service (annotation/services/imports/job_run.py)."""

from celery import shared_task

from annotation.services.imports.job_run import import_job_run


@shared_task(acks_late=True, bind=True)
def import_job_run_task(self, job_id: int, restart: bool = False) -> None:
    # A message delivered again after its worker died (acks_late), or sent again by a sweeper (`restart`), takes over
    # the import whose runner is gone (its lease expired); a first delivery runs a queued job only. A live runner's
    # lease keeps a second runner out either way.
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    import_job_run(job_id=job_id, restart=restart or redelivered)
