"""A templates dataset uploaded on the datasets page and imported in the background (docs/domain.md, 'Your own
templates'), as a pool's imports are: the request stores the files and answers at once; a Celery worker
(production) or a thread of the web process (the embedded default) checks and writes them
(generation/services/dataset_import_run.py, under generation/services/upload_runs.py's lease)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class DatasetImport(models.Model):
    """One upload of a codebook, templates and names: its arguments, state and outcome. Its files are stored as
    `DatasetImportFile` pieces until it ends, so that a worker on another machine reads them."""

    QUEUED, CHECKING, WRITING, DONE, FAILED = "queued", "checking", "writing", "done", "failed"
    CANCELLED = "cancelled"  # as a job's
    STATUS_CHOICES = [(s, s) for s in (QUEUED, CHECKING, WRITING, DONE, FAILED, CANCELLED)]

    name = models.CharField(max_length=64, help_text="the dataset's name")
    names_per_template = models.PositiveIntegerField(default=15)
    seed = models.BigIntegerField(default=42)
    file_names = models.JSONField(default=dict, help_text="codebook, templates, names: the uploaded files' names")
    bytes_total = models.BigIntegerField(default=0)
    status = models.CharField(max_length=9, choices=STATUS_CHOICES, default=QUEUED)
    instances_expected = models.PositiveIntegerField(default=0, help_text="known once every line is checked")
    instances_written = models.PositiveIntegerField(default=0)
    created_dataset = models.BooleanField(default=False, help_text="False: the same files were imported already")
    errors = models.JSONField(default=list, help_text="FILE:LINE: field problem, the first ones (nothing written)")
    error_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease of the runner checking or writing it, as a generation chunk's (generation/jobs/leases.py).
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"dataset import {self.pk} of {self.name} ({self.status})"


class DatasetImportFile(models.Model):
    """A piece of one uploaded file of a dataset import, in order; deleted when the import ends."""

    job = models.ForeignKey(DatasetImport, on_delete=models.CASCADE, related_name="pieces")
    key = models.CharField(max_length=16, help_text="codebook, templates or names")
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "key", "seq"], name="dataset_import_piece_unique")]

    def __str__(self) -> str:
        return f"{self.key} piece {self.seq} of dataset import {self.job_id}"
