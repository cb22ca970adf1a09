from django.db import models

from generation.models import Job


class LiveJob(models.Model):
    """The generation job that `load_demo` queued for the pool `demo-live`, one per live dataset. The pool follows
    this job, never the newest job on the dataset: an admin's own job there (cancelled, say) is not the demo's."""

    dataset_name = models.CharField(max_length=100, unique=True)
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"{self.dataset_name}: job {self.job_id}"
