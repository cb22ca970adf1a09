"""RUFF with distractors (docs/domain.md, 'RUFF with distractors'): read the task and context files
(generation/datasets/distractor_sources.py), build the instances in RUFF's order and draw RUFF's sample
(generation/datasets/distractor_rows.py), and stream them into a dataset stored as RUFF, with RUFF's codebook.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.db import transaction

from generation.datasets.base import DatasetKind, DatasetKindSpec
from generation.datasets.distractor_rows import (
    COUNTS,
    Builder,
    distractor_counts,
    distractor_rows_write,
    distractor_sample,
)
from generation.datasets.distractor_sources import Sources, distractor_sources_read
from generation.datasets.files import ImportFailed
from generation.datasets.ruff import CODEBOOK, EXPORT_COLUMNS, export_rows
from generation.datasets.writing import pronoun_forms_create
from generation.models import Dataset, Instance, Template

NAME = "ruff-distractors"
SAMPLE_SEEDS = (13, 17, 19)
SAMPLE_SEED_CHOICES = [*(str(seed) for seed in SAMPLE_SEEDS), "none"]  # as the command, the form and the API take them


@dataclass
class DistractorImport:
    dataset: Dataset
    by_distractors: dict[str, int]
    written: int = 0
    seconds: float = 0.0
    sample_seed: int | None = None
    counts: dict[int, int] = field(default_factory=dict)

    @property
    def instances(self) -> int:
        return sum(self.by_distractors.values())

    @property
    def rows_per_second(self) -> float:
        return self.written / self.seconds if self.seconds else 0.0

    def lines(self) -> list[str]:
        """What `import_dataset` prints."""
        counts = ", ".join(f"{n} with {count}" for count, n in self.by_distractors.items())
        what = "the full set" if self.sample_seed is None else f"RUFF's sample for seed {self.sample_seed}"
        return [
            f"{self.dataset.name}: {self.instances} instances, {what} ({counts}); wrote {self.written} rows "
            f"in {self.seconds:.1f} s ({self.rows_per_second:,.0f} rows/s)"
        ]

    def as_json(self) -> dict:
        return {
            "dataset": self.dataset.name,
            "instances": self.instances,
            "by_distractors": self.by_distractors,
            "sample_seed": self.sample_seed,
            "written": self.written,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
        }


def _dataset_for(sources: Sources, name: str) -> tuple[Dataset, list[int]]:
    dataset = Dataset.objects.select_for_update().filter(name=name).first()
    if dataset is not None:
        if dataset.import_signature != sources.signature:
            raise ImportFailed(
                [f"dataset {name!r} was imported from other files; import these under another name (--name)"]
            )
    else:
        dataset = Dataset.objects.create(
            name=name, kind=DatasetKind.RUFF, source=sources.source[:500], import_signature=sources.signature
        )
        pronoun_forms_create(dataset, CODEBOOK)
        Template.objects.bulk_create(
            Template(
                dataset=dataset,
                source_id=f"{t}/{task.occupation}/{task.participant}/{task.form}",
                line=task.line,
                text=task.sentence,
                mask=task.marker,
                form=task.form,
                meta={"occupation": task.occupation, "participant": task.participant, "word": task.word},
            )
            for t, task in enumerate(sources.tasks)
        )
    templates = list(dataset.templates.order_by("line").values_list("pk", flat=True))
    return dataset, templates


@transaction.atomic
def dataset_import_ruff_distractors(
    *,
    task_path: Path,
    context_path: Path,
    distractors: Iterable[int] = COUNTS,
    sample_seed: int | None = None,
    name: str = NAME,
) -> DistractorImport:
    """Import RUFF's distractor sets (all counts, or the ones asked for), whole or as RUFF's sample for one seed.

    A dataset gathers what its imports bring: importing another count or seed adds the rows it lacks (same ordinals:
    an instance's ordinal is its place in the full construction order) and marks the sample's members, so a second
    run of the same import writes nothing."""
    counts_asked = sorted(set(distractors))
    bad = [c for c in counts_asked if c not in COUNTS]
    if bad or not counts_asked:
        raise ImportFailed([f"--distractors must be among 0-5 (got {', '.join(map(str, bad)) or 'nothing'})"])
    if sample_seed is not None and sample_seed not in SAMPLE_SEEDS:
        seeds = ", ".join(map(str, SAMPLE_SEEDS))
        raise ImportFailed([f"--sample-seed must be one of {seeds} or none (got {sample_seed})"])
    sources = distractor_sources_read(task_path=task_path, context_path=context_path)
    full = distractor_counts(sources)
    dataset, templates = _dataset_for(sources, name)
    builder = Builder(sources)
    started = time.perf_counter()
    result = DistractorImport(dataset=dataset, by_distractors={}, sample_seed=sample_seed, counts=full)
    for count in counts_asked:
        keep = None if sample_seed is None else distractor_sample(sources, count=count, seed=sample_seed)
        stored = Instance.objects.filter(dataset=dataset, distractors=count)
        present: set[int] = set()
        if stored.count() == full[count]:
            present = set(range(full[count]))
        elif stored.exists():
            offset = builder.count_offset[count]
            present = {o - offset for o in stored.values_list("ordinal", flat=True).iterator(chunk_size=10000)}
        wanted = set(range(full[count])) if keep is None else keep
        missing = None if keep is None and not present else (wanted - present)
        if missing is None or missing:
            result.written += distractor_rows_write(dataset.pk, templates, sources, builder.rows(count, missing))
        if keep is not None:
            ordinals = sorted(builder.count_offset[count] + i for i in keep)
            for start in range(0, len(ordinals), 1000):
                Instance.objects.filter(dataset=dataset, ordinal__in=ordinals[start : start + 1000]).update(
                    **{f"sample_{sample_seed}": True}
                )
        result.by_distractors[str(count)] = len(wanted)
    result.seconds = time.perf_counter() - started
    return result


def command_import(name: str, options: dict[str, Any]) -> DistractorImport:
    """`import_dataset ruff-distractors --task task.tsv --context context.tsv [--distractors N] [--sample-seed S]`."""
    if options["task"] is None or options["context"] is None:
        raise CommandError("ruff-distractors needs --task PATH and --context PATH")
    seed = None if options["sample_seed"] == "none" else int(options["sample_seed"])
    return dataset_import_ruff_distractors(
        task_path=options["task"],
        context_path=options["context"],
        distractors=options["distractors"] or COUNTS,
        sample_seed=seed,
        name=name,
    )


RUFF_DISTRACTORS = DatasetKindSpec(
    name=NAME,
    kind=DatasetKind.RUFF,
    codebook=CODEBOOK,
    command_import=command_import,
    export_columns=EXPORT_COLUMNS,
    export_rows=export_rows,
    reads_template_file=False,
)
