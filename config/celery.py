import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery's Django fixup runs Django's system checks as a worker starts and never reads what they find; their URL check
# imports every view, and with the views scipy and pandas, which no task needs (seconds of CPU per worker start).
# The web server and `manage.py check` run the checks; CELERY_SKIP_CHECKS set empty runs them in the worker too.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _stale_chunk_sweeper(sender=None, **kwargs) -> None:
    """Every worker re-queues chunks whose runner is gone or whose message the broker lost (generation/jobs/runner.py)."""
    from generation.jobs.runner import stale_chunk_sweeper_start

    stale_chunk_sweeper_start()
