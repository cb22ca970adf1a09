"""The `dataset_import` job kind (generation/jobs/uploads.py): a templates dataset uploaded on the datasets page
(docs/domain.md, 'Your own templates'), imported in the background. Its input is the uploaded codebook, templates and
names (generation/jobs/inputs.py, keyed by those words); its row is a `DatasetUpload`. `templates_pieces_import`
checks every line (phase "checking"), then writes the dataset in one transaction (phase "writing"), sealed before it
commits (`job_seal`): a bad file, a stopped runner, a cancel or a failure while writing leaves nothing behind, and a
run taken over after its runner died starts again from the top. Progress within a phase is kept in the cache (the
writes are inside the import's transaction). generation/services/dataset_imports.py creates, cancels and shows one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache import cache

from generation.datasets.files import ImportFailed
from generation.datasets.templates import templates_pieces_import
from generation.jobs.inputs import job_input_pieces
from generation.jobs.progress import JobStopped, job_phase, job_seal
from generation.jobs.uploads import UploadKind
from generation.models import DatasetUpload, Job

DATASET_IMPORT_KIND = "dataset_import"
CHECKING, WRITING = "checking", "writing"
PROGRESS_SECONDS = 6 * 3600


def progress_key(job_id: int, phase: str) -> str:
    return f"concord:dataset-import:{job_id}:{phase}"


class DatasetImportKind(UploadKind):
    model = DatasetUpload
    failed = ImportFailed
    stopped = "the import stopped, nothing written"
    unreachable = "nothing written, upload again"
    first_phase = CHECKING

    def work(self, *, job: Job, row: Any, stop: Callable[[], bool]) -> dict[str, Any]:
        job_phase(job_id=job.pk, phase=CHECKING)

        def progress(phase: str, count: int) -> None:
            if phase == "checked":
                job_phase(job_id=job.pk, phase=WRITING)
                DatasetUpload.objects.filter(pk=job.pk).update(instances_expected=count)
            elif phase == "written":  # the last step inside the import's transaction
                job_seal(job_id=job.pk)
            else:  # per batch: kept in the cache (the writes are inside the import's transaction)
                if stop():
                    raise JobStopped  # a cancelled import stops here, its transaction rolled back
                cache.set(progress_key(job.pk, phase), count, timeout=PROGRESS_SECONDS)

        for phase in (CHECKING, WRITING):
            cache.delete(progress_key(job.pk, phase))
        files = {key: (str(shown), job_input_pieces(job_id=job.pk, name=key)) for key, shown in row.file_names.items()}
        result = templates_pieces_import(
            name=row.name, files=files, names_per_template=row.names_per_template, seed=row.seed, progress=progress
        )
        return {
            "instances_expected": result.instances,
            "instances_written": result.instances if result.created else 0,
            "created_dataset": result.created,
        }

    def describe(self, *, job: Job) -> str:
        row = DatasetUpload.objects.filter(pk=job.pk).first()
        return f"templates upload {row.name if row else job.pk}"

    def resume_entry(self, *, job: Job) -> dict[str, Any]:
        row = DatasetUpload.objects.get(pk=job.pk)
        return {"import": f"dataset-{job.pk}", "status": self.status(job=job), "instances": row.instances_written}
