"""Celery tasks of the annotation app: thin, they take an id and call a service (annotation/services/imports/job_run.py)."""

from celery import shared_task

from annotation.services.imports.job_run import import_job_run


@shared_task(acks_late=True, bind=True)
def import_job_run_task(self, job_id: int) -> None:
    # A message delivered again after its worker died (acks_late) restarts the import the dead worker left reading or
    # writing; a first delivery runs a queued job only.
    import_job_run(job_id=job_id, restart=bool((self.request.delivery_info or {}).get("redelivered")))
