"""Drawing an annotation pool from finished generation jobs (DOMAIN section 4, the "2400 design")."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction

from annotation.models import Pool, PoolItem
from generation.models import Generation, GenerationJob, JobStatus


class PoolSampleError(ValueError):
    """The pool cannot be drawn as asked; nothing was written."""


@dataclass(frozen=True)
class ShortCell:
    model: str
    dataset: str
    setting: str
    pronoun: str
    sample_index: int
    wanted: int
    available: int

    def __str__(self) -> str:
        return (
            f"{self.model} x {self.dataset} x {self.setting} x {self.pronoun}, sample index {self.sample_index}: "
            f"{self.available} generations, {self.wanted} wanted"
        )


@dataclass
class PoolSampleResult:
    pool: Pool | None
    items: int = 0
    cells: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    short: list[ShortCell] = field(default_factory=list)


def _cell_rng(seed: int, *parts: object) -> random.Random:
    # A string seed is hashed with sha512 by `random`, so the draw of one cell does not depend on which other
    # cells (jobs, pronouns) are in the pool, nor on the order they are visited in.
    return random.Random(":".join(str(part) for part in (seed, *parts)))


def pool_sample(
    *,
    name: str,
    job_ids: list[int] | None = None,
    per_cell: int = 25,
    seed: int = 0,
    allow_short: bool = False,
    created_by=None,
) -> PoolSampleResult:
    """Draw `per_cell` generations per model x dataset x setting x pronoun: `per_cell / samples` random instances
    from each of the job's sample indices (5 x 5 = 25 in the paper).

    Cells with too few generations are never silently shrunk: without `allow_short` the draw fails and writes
    nothing (the error lists every short cell); with it, short cells keep all they have and are reported.
    The draw is a pure function of the seed and the generations present.
    """
    if per_cell < 1:
        raise PoolSampleError("per-cell must be at least 1")
    if Pool.objects.filter(name=name).exists():
        raise PoolSampleError(f"a pool named {name!r} already exists; choose another name")

    jobs_qs = GenerationJob.objects.select_related("model", "dataset").order_by("pk")
    if job_ids:
        jobs = list(jobs_qs.filter(pk__in=job_ids))
        missing = sorted(set(job_ids) - {job.pk for job in jobs})
        if missing:
            raise PoolSampleError(f"no generation job with id {', '.join(map(str, missing))}")
        unfinished = [job for job in jobs if job.status != JobStatus.DONE]
        if unfinished:
            raise PoolSampleError(
                "only finished jobs can be sampled: " + ", ".join(f"job {job.pk} is {job.status}" for job in unfinished)
            )
    else:
        jobs = list(jobs_qs.filter(status=JobStatus.DONE))
        if not jobs:
            raise PoolSampleError("there is no finished generation job to sample from")

    seen: dict[tuple[str, str], int] = {}
    for job in jobs:
        key = (job.model.name, job.dataset.kind)
        if key in seen:
            raise PoolSampleError(
                f"jobs {seen[key]} and {job.pk} both hold {key[0]} on {key[1]}; pass --jobs to pick one of them"
            )
        seen[key] = job.pk
        if per_cell % job.samples:
            raise PoolSampleError(
                f"per-cell {per_cell} does not split evenly across the {job.samples} sample indices of job {job.pk}"
            )

    result = PoolSampleResult(pool=None)
    chosen: list[tuple[GenerationJob, int]] = []
    for job in jobs:
        per_index = per_cell // job.samples
        # cell -> sample index -> [(instance ordinal, generation id)]
        found: dict[tuple[str, str, int], list[tuple[int, int]]] = defaultdict(list)
        rows = Generation.objects.filter(job=job).values_list(
            "pk", "setting", "sample_index", "instance__pronoun", "instance__ordinal"
        )
        for pk, setting, index, pronoun, ordinal in rows:
            found[(setting, pronoun, index)].append((ordinal, pk))
        for setting in job.settings:
            for pronoun in job.pronouns:
                cell = (job.model.name, job.dataset.kind, setting, pronoun)
                drawn = 0
                for index in range(job.samples):
                    candidates = sorted(found.get((setting, pronoun, index), []))
                    if len(candidates) < per_index:
                        result.short.append(ShortCell(*cell, index, per_index, len(candidates)))
                        picked = candidates
                    else:
                        picked = _cell_rng(seed, *cell, index).sample(candidates, per_index)
                    chosen.extend((job, pk) for _, pk in picked)
                    drawn += len(picked)
                result.cells[cell] = drawn

    if result.short and not allow_short:
        raise PoolSampleError(
            f"{len(result.short)} cell(s) have too few generations (nothing was written; "
            "use --allow-short to keep what there is):\n  " + "\n  ".join(map(str, result.short))
        )

    generations = Generation.objects.select_related("instance").in_bulk([pk for _, pk in chosen])
    with transaction.atomic():
        pool = Pool.objects.create(name=name, per_cell=per_cell, seed=seed, created_by=created_by)
        pool.jobs.set(jobs)
        items = []
        for job, pk in chosen:
            generation = generations[pk]
            items.append(
                PoolItem(
                    pool=pool,
                    generation=generation,
                    model_name=job.model.name,
                    dataset=job.dataset.kind,
                    setting=generation.setting,
                    pronoun=generation.instance.pronoun,
                    sample_index=generation.sample_index,
                    template=generation.instance.text,
                    context=generation.context,
                    continuation=generation.continuation,
                    heuristic_correct=generation.heuristic_correct,
                    first_pronoun=generation.first_pronoun,
                )
            )
        PoolItem.objects.bulk_create(items)
    result.pool = pool
    result.items = len(items)
    return result
