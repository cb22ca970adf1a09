import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _stale_chunk_sweeper(sender=None, **kwargs) -> None:
    """Every worker re-queues chunks whose runner is gone or whose message the broker lost (generation/jobs/runner.py)."""
    from generation.jobs.runner import stale_chunk_sweeper_start

    stale_chunk_sweeper_start()
