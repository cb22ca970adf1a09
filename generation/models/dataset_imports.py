"""A templates dataset uploaded on the datasets page and imported in the background (docs/domain.md, 'Your own
templates'): a job of the `dataset_import` kind (generation/jobs/dataset_import_kind.py), whose input is the
uploaded files (`JobInput`) and whose own row is this one: its arguments and its outcome."""

from __future__ import annotations

from django.db import models

from generation.models.jobs import Job


class DatasetUpload(models.Model):
    """One upload of a codebook, templates and names (a `dataset_import` job): the dataset's name and draws, the
    files' names, and what the import found and wrote. Its state is its job's (status, phase, times)."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="dataset_upload")
    name = models.CharField(max_length=64, help_text="the dataset's name")
    names_per_template = models.PositiveIntegerField(default=15)
    seed = models.BigIntegerField(default=42)
    file_names = models.JSONField(default=dict, help_text="codebook, templates, names: the uploaded files' names")
    bytes_total = models.BigIntegerField(default=0)
    instances_expected = models.PositiveIntegerField(default=0, help_text="known once every line is checked")
    instances_written = models.PositiveIntegerField(default=0)
    created_dataset = models.BooleanField(default=False, help_text="False: the same files were imported already")
    written = models.BooleanField(default=False, help_text="the import ended with every row written")
    errors = models.JSONField(default=list, help_text="FILE:LINE: field problem, the first ones (nothing written)")
    error_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-job_id"]

    def __str__(self) -> str:
        return f"dataset upload {self.pk} of {self.name}"
