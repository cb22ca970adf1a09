"""Drawing an annotation pool from finished generation jobs (docs/domain.md, 'The annotation pool').

Two draws are offered:

- `instances` (the default, the paper's): per model x dataset x setting x pronoun, `instances` random instances,
  each with ALL of its samples (5 x 5 = 25). The seed's script samples the same rows for every sample column, so every
  released sample file holds exactly 5 distinct templates per pronoun, each 5 times. The draw is the seed's own:
  `df.sample(n=instances, random_state=seed)` over the cell's instances in the order of the seed's per-pronoun frame
  (name draw, then dataset order), so seed 131719 picks the released files' rows.
- The items are stored in the released files' order (docs/domain.md, 'The annotation pool'), the pool order that
  the examples draw and the bootstrap read: per job (model x dataset), per setting, the pronouns he, she, they, xe,
  and within each the sample index first (the drawn instances, in draw order, for sample 1, then for sample 2, ...).
- `per-sample-index` (an earlier reading, kept for comparison): `per_cell / samples` random instances drawn
  separately for each sample index, so one cell mixes up to `per_cell` different instances.

An active pool (docs/domain.md, "Spending people's labels where they count"; `active=True`) is drawn instead from one
job with a judge run over it: each context (instance x setting) is drawn with the inclusion probability its judge
probability gives it (annotation/active.py), all its samples together, each item carrying that probability.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction
from django.utils.text import slugify

from accounts.models import Project
from annotation.active import ActiveDrawError, active_draw, inclusion_probabilities, judged_contexts
from annotation.labelset import LabelSetError, labels_check
from annotation.models import NOMINAL, Pool, PoolItem
from annotation.schema import DEFAULT_LABELS, MISGENDERING
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from common.errors import FieldError, ServiceError
from generation.contexts import setting_rank
from generation.datasets.labels import dataset_label
from generation.models import Generation, Job, JobStatus
from generation.pronouns import BASES

DRAW_INSTANCES = "instances"
DRAW_PER_SAMPLE_INDEX = "per-sample-index"
DRAWS = (DRAW_INSTANCES, DRAW_PER_SAMPLE_INDEX)
POOL_SEED = 131719  # the seed's `random_state`: with it, a full job's pool holds the released sample files' rows

Cell = tuple[str, str, str, str]  # model, dataset kind, setting, pronoun


class PoolSampleError(ServiceError, ValueError):
    """The pool cannot be drawn as asked; nothing was written."""


@dataclass(frozen=True)
class ShortCell:
    """A cell without enough material: instances with all their samples (`sample_index` None, the instances draw)
    or generations of one sample index (the per-sample-index draw)."""

    model: str
    dataset: str
    setting: str
    pronoun: str
    sample_index: int | None
    wanted: int
    available: int
    samples: int = 0

    def __str__(self) -> str:
        cell = f"{self.model} x {self.dataset} x {self.setting} x {self.pronoun}"
        if self.sample_index is None:
            return f"{cell}: {self.available} instances with all {self.samples} samples, {self.wanted} wanted"
        return f"{cell}, sample index {self.sample_index}: {self.available} generations, {self.wanted} wanted"


@dataclass
class PoolSampleResult:
    pool: Pool | None
    items: int = 0
    cells: dict[Cell, int] = field(default_factory=dict)
    short: list[ShortCell] = field(default_factory=list)
    draw: str = DRAW_INSTANCES


def _short(cell: Cell, sample_index: int | None, wanted: int, available: int, *, samples: int = 0) -> ShortCell:
    model, dataset, setting, pronoun = cell
    return ShortCell(model, dataset, setting, pronoun, sample_index, wanted, available, samples)


def _cell_rng(seed: int, *parts: object) -> random.Random:
    # A string seed is hashed with sha512 by `random`, so the draw of one cell does not depend on which other
    # cells (jobs, pronouns) are in the pool, nor on the order they are visited in.
    return random.Random(":".join(str(part) for part in (seed, *parts)))


def _jobs_to_sample(*, job_ids: list[int] | None) -> list[Job]:
    """The named jobs (each must exist and be finished), or every finished job."""
    jobs_qs = Job.objects.filter(kind="generation").select_related("model", "generation_run__dataset").order_by("pk")
    if not job_ids:
        jobs = list(jobs_qs.filter(status=JobStatus.DONE))
        if not jobs:
            raise PoolSampleError("there is no finished generation job to sample from")
        return jobs
    jobs = list(jobs_qs.filter(pk__in=job_ids))
    missing = sorted(set(job_ids) - {job.pk for job in jobs})
    if missing:
        raise PoolSampleError(f"no generation job with id {', '.join(map(str, missing))}")
    unfinished = [job for job in jobs if job.status != JobStatus.DONE]
    if unfinished:
        raise PoolSampleError(
            "only finished jobs can be sampled: " + ", ".join(f"job {job.pk} is {job.status}" for job in unfinished)
        )
    return jobs


def _check_one_job_per_model_and_dataset(jobs: list[Job]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for job in jobs:
        assert job.dataset is not None  # the pool's jobs are chosen by their dataset
        key = (job.model.name, dataset_label(job.dataset))
        if key in seen:
            raise PoolSampleError(
                f"jobs {seen[key]} and {job.pk} both hold {key[0]} on {key[1]}; pass --jobs to pick one of them"
            )
        seen[key] = job.pk


def _generations_by_instance(job: Job) -> dict[tuple[str, str, int | None], dict[int, dict[int, int]]]:
    """(setting, pronoun, distractor count) -> instance ordinal -> sample index -> generation id. The count is None
    outside RUFF with distractors, whose pools draw per count (docs/domain.md, 'RUFF with distractors')."""
    found: dict[tuple[str, str, int | None], dict[int, dict[int, int]]] = defaultdict(lambda: defaultdict(dict))
    rows = Generation.objects.filter(job=job).values_list(
        "pk", "setting", "sample_index", "instance__pronoun", "instance__ordinal", "instance__distractors"
    )
    for pk, setting, index, pronoun, ordinal, distractors in rows:
        found[(setting, pronoun, distractors)][ordinal][index] = pk
    return found


def _seed_frame_order(job: Job) -> dict[int, tuple[int, int]]:
    """Instance ordinal -> its sort key in the seed's per-pronoun frame: the seed ran all templates once per name
    draw (`for t in range(15)`), so its rows go draw by draw, each in dataset order (RUFF has one draw)."""
    ordinals = Generation.objects.filter(job=job).values_list("instance__ordinal", "instance__draw").distinct()
    return {ordinal: (draw, ordinal) for ordinal, draw in ordinals}


def _seed_sample(population: list[int], n: int, seed: int) -> list[int]:
    """`pandas.Series(population).sample(n=n, random_state=seed)`, the seed's draw: numpy's legacy generator seeded
    afresh for every cell, so equal-sized cells draw the same positions; the picks come in the order drawn."""
    positions = np.random.RandomState(seed % 2**32).choice(len(population), size=n, replace=False)
    return [population[position] for position in positions]


def _in_order(values: list[str], order: tuple[str, ...]) -> list[str]:
    """`values` in `order`, any others after them in their own order."""
    return sorted(values, key=lambda value: order.index(value) if value in order else len(order))


def _job_cells(job: Job, found: dict) -> Iterator[tuple[tuple[str, str, int | None], Cell]]:
    """The job's cells in pool order (docs/domain.md, 'The annotation pool'): per setting, the pronouns he, she, they,
    xe (whatever order the job lists them in); a distractor set has one cell per distractor count it holds."""
    counts = sorted({count for _, _, count in found}, key=lambda count: -1 if count is None else count) or [None]
    kind = dataset_label(job.dataset)
    for setting in sorted(job.generation_run.settings, key=setting_rank):
        for pronoun in _in_order(list(job.generation_run.pronouns), BASES):
            for count in counts:
                dataset = kind if count is None else f"{kind} ({count} distractors)"
                yield (setting, pronoun, count), (job.model.name, dataset, setting, pronoun)


def _draw_whole_instances(job: Job, *, instances: int, seed: int, result: PoolSampleResult) -> list[tuple[Job, int]]:
    """`instances` random instances per cell among those with every sample index, each with all its samples."""
    chosen: list[tuple[Job, int]] = []
    found = _generations_by_instance(job)
    frame_order = _seed_frame_order(job)
    for key, cell in _job_cells(job, found):
        by_instance = found.get(key, {})
        complete = sorted(
            (
                ordinal
                for ordinal, samples in by_instance.items()
                if all(i in samples for i in range(job.generation_run.samples))
            ),
            key=frame_order.__getitem__,
        )
        if len(complete) < instances:
            result.short.append(_short(cell, None, instances, len(complete), samples=job.generation_run.samples))
            picked = complete
        else:
            picked = _seed_sample(complete, instances, seed)
        # The released files' order: sample column first, the drawn instances in draw order within each.
        for index in range(job.generation_run.samples):
            chosen.extend((job, by_instance[ordinal][index]) for ordinal in picked)
        result.cells[cell] = len(picked) * job.generation_run.samples
    return chosen


def _draw_per_sample_index(job: Job, *, per_cell: int, seed: int, result: PoolSampleResult) -> list[tuple[Job, int]]:
    """`per_cell / samples` random instances drawn separately from each sample index of each cell."""
    if per_cell % job.generation_run.samples:
        raise PoolSampleError(
            f"per-cell {per_cell} does not split evenly across the {job.generation_run.samples} sample indices of job {job.pk}"
        )
    per_index = per_cell // job.generation_run.samples
    chosen: list[tuple[Job, int]] = []
    found = _generations_by_instance(job)
    for key, cell in _job_cells(job, found):
        by_instance = found.get(key, {})
        drawn = 0
        for index in range(job.generation_run.samples):
            candidates = sorted(
                (ordinal, samples[index]) for ordinal, samples in by_instance.items() if index in samples
            )
            if len(candidates) < per_index:
                result.short.append(_short(cell, index, per_index, len(candidates)))
                picked = candidates
            else:
                picked = _cell_rng(seed, *cell, index).sample(candidates, per_index)
            chosen.extend((job, pk) for _, pk in picked)
            drawn += len(picked)
        result.cells[cell] = drawn
    return chosen


@dataclass(frozen=True)
class ActiveDraw:
    """What an active draw chose: the judge run, the budget, and each drawn generation's inclusion probability."""

    run_id: int
    budget: float
    probability: dict[int, float]


def pool_items_from_generations(
    pool: Pool,
    generations: Iterable[Generation],
    *,
    job: Job | None = None,
    probability: Mapping[int, float] | None = None,
) -> list[PoolItem]:
    """The pool's items of these generations, in their order, not yet saved: each generation's model, dataset label,
    setting, pronoun, sample, texts and heuristic verdict, of `job` (None: each generation's own, which the caller
    has fetched with it). `probability` (an active draw's) gives each generation's inclusion probability by id."""
    items = []
    for generation in generations:
        source = job if job is not None else generation.job
        items.append(
            PoolItem(
                pool=pool,
                generation=generation,
                model_name=source.model.name,
                dataset=dataset_label(source.dataset),
                setting=generation.setting,
                pronoun=generation.instance.pronoun,
                sample_index=generation.sample_index,
                template=generation.instance.text,
                context=generation.context,
                continuation=generation.continuation,
                heuristic_correct=generation.heuristic_correct,
                first_pronoun=generation.first_pronoun,
                inclusion_probability=probability[generation.pk] if probability is not None else None,
            )
        )
    return items


def _draw_active(
    job: Job, *, run_id: int, budget: float, seed: int, result: PoolSampleResult
) -> tuple[list[tuple[Job, int]], ActiveDraw]:
    """The active draw (docs/domain.md) over the job's judged contexts in their order: pi from the run's Yhat and the budget, one
    uniform per context; a drawn context brings all its samples, each with the context's pi."""
    try:
        contexts = judged_contexts(run_id=run_id, job_id=job.pk, positive=MISGENDERING)
        pi = inclusion_probabilities([context.yhat for context in contexts], budget)
    except ActiveDrawError as error:
        raise PoolSampleError(str(error)) from None
    drawn = active_draw(pi, seed)
    chosen: list[tuple[Job, int]] = []
    probability: dict[int, float] = {}
    for context, probability_of, taken in zip(contexts, pi, drawn, strict=True):
        if not taken:
            continue
        cell = (job.model.name, dataset_label(job.dataset), context.setting, context.pronoun)
        result.cells[cell] = result.cells.get(cell, 0) + len(context.generation_ids)
        for generation_id in context.generation_ids:
            chosen.append((job, generation_id))
            probability[generation_id] = float(probability_of)
    return chosen, ActiveDraw(run_id, float(budget), probability)


def _write_pool(
    *, name: str, per_cell: int | None, seed: int, jobs: list[Job], chosen, created_by,
    active: ActiveDraw | None = None, project: Project | None = None, label_set: dict | None = None,
) -> tuple[Pool, int]:  # fmt: skip
    generations = Generation.objects.select_related("instance").in_bulk([pk for _, pk in chosen])
    with transaction.atomic():
        pool = Pool.objects.create(
            name=name, per_cell=per_cell, seed=seed, created_by=created_by,
            active_run_id=active.run_id if active else None, active_budget=active.budget if active else None,
            **_in_project(project),
            **(label_set or {}),
        )  # fmt: skip
        pool.jobs.set(jobs)
        data: dict = {"per_cell": per_cell, "seed": seed, "jobs": [job.pk for job in jobs], "items": len(chosen)}
        if active is not None:
            data["active"] = {"run": active.run_id, "budget": active.budget}
        audit_record(event="pool.create", obj=pool, actor=created_by, action=CREATE, data=data)
        generations_chosen = [generations[pk] for _, pk in chosen]
        for (job, _), generation in zip(chosen, generations_chosen, strict=True):
            generation.job = job  # the job the draw read, without a query per item
        items = pool_items_from_generations(
            pool, generations_chosen, probability=active.probability if active else None
        )
        PoolItem.objects.bulk_create(items)
        pool_changed(pools=[pool])
    return pool, len(items)


def pool_from_generations(
    *,
    name: str,
    generations: list[Generation],
    labels: list[str],
    positive: str,
    seed: int,
    created_by=None,
    project: Project | None = None,
) -> Pool:
    """A pool of generations a caller drew itself (GIFI's scorer checks, docs/domain.md 'GIFI'), in the order given,
    with its own label set; the same rows, audit and constraints as `pool_sample`'s. Raises PoolSampleError
    (nothing written) on a taken name or a bad label set."""
    if Pool.objects.filter(name=name).exists():
        raise PoolSampleError(f"a pool named {name!r} already exists; choose another name")
    try:
        labels = labels_check(labels, positive)
    except LabelSetError as exc:
        raise PoolSampleError(str(exc)) from None
    jobs = {generation.job_id: generation.job for generation in generations}
    chosen = [(jobs[generation.job_id], generation.pk) for generation in generations]
    pool, _ = _write_pool(
        name=name, per_cell=None, seed=seed, jobs=list(jobs.values()), chosen=chosen, created_by=created_by,
        label_set={"labels": labels, "positive_label": positive}, project=project,
    )  # fmt: skip
    return pool


def pool_sample(
    *,
    name: str,
    job_ids: list[int] | None = None,
    draw: str = DRAW_INSTANCES,
    instances: int = 5,
    per_cell: int = 25,
    seed: int = POOL_SEED,
    allow_short: bool = False,
    created_by=None,
    active: bool = False,
    judge_run: int | None = None,
    budget: float | None = None,
    project: Project | None = None,
    labels: list[str] | None = None,
    scale: str = NOMINAL,
    positive: str = "",
    positive_at_least: str = "",
) -> PoolSampleResult:
    """Draw a pool per model x dataset x setting x pronoun from finished jobs (see the module docstring).

    `draw="instances"` takes `instances` whole instances per cell (all their samples); `draw="per-sample-index"`
    takes `per_cell / samples` instances per sample index. Cells without enough material are never silently shrunk:
    without `allow_short` the draw fails and writes nothing (the error lists every short cell); with it, short cells
    keep all they have and are reported. The draw is a pure function of the seed and the generations present.

    `active=True` draws an active pool instead (see the module docstring) from the one job named, with `judge_run`
    (a finished judge run over that job) and `budget` (the expected number of contexts); `draw`, `instances` and
    `per_cell` do not apply. Refused (PoolSampleError, nothing written) when the run does not cover the job or has
    no probabilities. `project`: the project the pool belongs to (accounts.projects.project_choose; None: the
    default project). `labels`, `scale`, `positive` and `positive_at_least` declare the pool's label set as an
    import's do (docs/domain.md, "Scales"; none: the schema's three, nominal); an active draw is labelled with the
    schema's (its draw reads the judge's probability of misgendering).
    """
    label_set = _declared_labels(labels, scale, positive, positive_at_least)
    if active:
        if label_set:
            raise PoolSampleError(
                "an active draw is labelled with the schema's labels (it draws by the judge's probability of "
                "misgendering): leave out labels, scale, positive and positive-at-least"
            )
        return _pool_sample_active(
            name=name, job_ids=job_ids, judge_run=judge_run, budget=budget, seed=seed, created_by=created_by,
            project=project,
        )  # fmt: skip
    if judge_run is not None or budget is not None:
        raise PoolSampleError("a judge run and a budget belong to an active draw (--active)")
    if draw not in DRAWS:
        raise PoolSampleError(f"unknown draw {draw!r}: use one of {', '.join(DRAWS)}")
    if draw == DRAW_INSTANCES and instances < 1:
        raise PoolSampleError("instances must be at least 1")
    if draw == DRAW_PER_SAMPLE_INDEX and per_cell < 1:
        raise PoolSampleError("per-cell must be at least 1")
    if Pool.objects.filter(name=name).exists():
        raise PoolSampleError(f"a pool named {name!r} already exists; choose another name")

    jobs = _jobs_to_sample(job_ids=job_ids)
    _check_one_job_per_model_and_dataset(jobs)

    result = PoolSampleResult(pool=None, draw=draw)
    chosen: list[tuple[Job, int]] = []
    for job in jobs:
        if draw == DRAW_INSTANCES:
            chosen += _draw_whole_instances(job, instances=instances, seed=seed, result=result)
        else:
            chosen += _draw_per_sample_index(job, per_cell=per_cell, seed=seed, result=result)

    if result.short and not allow_short:
        what = "instances with all their samples" if draw == DRAW_INSTANCES else "generations"
        raise PoolSampleError(
            f"{len(result.short)} cell(s) have too few {what} (nothing was written; "
            "use --allow-short to keep what there is):\n  " + "\n  ".join(map(str, result.short))
        )

    sizes = {job.generation_run.samples for job in jobs}
    stored_per_cell = (
        per_cell if draw == DRAW_PER_SAMPLE_INDEX else (instances * sizes.pop() if len(sizes) == 1 else None)
    )
    result.pool, result.items = _write_pool(
        name=name, per_cell=stored_per_cell, seed=seed, jobs=jobs, chosen=chosen, created_by=created_by,
        project=project, label_set=label_set,
    )  # fmt: skip
    return result


def _declared_labels(labels: list[str] | None, scale: str, positive: str, positive_at_least: str = "") -> dict:
    """The pool's label set, scale, positive label and threshold as declared (docs/domain.md, "Scales"), checked;
    none declared: the schema's three, nominal."""
    if labels is None and scale == NOMINAL and not positive and not positive_at_least:
        return {}
    chosen = list(labels) if labels is not None else list(DEFAULT_LABELS)
    try:
        labels_check(chosen, positive, scale=scale, positive_at_least=positive_at_least)
    except LabelSetError as exc:
        raise PoolSampleError(f"labels: {exc}") from None
    return {"labels": chosen, "scale": scale, "positive_label": positive, "positive_at_least": positive_at_least}


def _pool_sample_active(
    *, name: str, job_ids: list[int] | None, judge_run: int | None, budget: float | None, seed: int, created_by,
    project: Project | None,
) -> PoolSampleResult:  # fmt: skip
    if judge_run is None or budget is None:
        raise PoolSampleError("an active draw needs a judge run (--judge-run) and a budget (--budget)")
    if not job_ids or len(job_ids) != 1:
        raise PoolSampleError("an active draw is made from one generation job (--jobs JOB), the judge run's")
    if Pool.objects.filter(name=name).exists():
        raise PoolSampleError(f"a pool named {name!r} already exists; choose another name")
    (job,) = _jobs_to_sample(job_ids=job_ids)
    result = PoolSampleResult(pool=None, draw="active")
    chosen, active = _draw_active(job, run_id=judge_run, budget=budget, seed=seed, result=result)
    if not chosen:
        raise PoolSampleError(f"the draw at budget {budget:g} and seed {seed} took no context; raise the budget")
    result.pool, result.items = _write_pool(
        name=name, per_cell=None, seed=seed, jobs=[job], chosen=chosen, created_by=created_by, active=active,
        project=project,
    )  # fmt: skip
    return result


def _in_project(project: Project | None) -> dict:
    """The new pool's project field: the one chosen, or none given (the model's default: the default project)."""
    return {} if project is None else {"project": project}


class PoolCreateError(FieldError, ValueError):
    """The pool cannot be made as asked (`FIELD: WHY`); nothing was written."""


@transaction.atomic
def pool_create(
    *,
    name: str,
    labels: list[str],
    positive: str = "",
    scale: str = NOMINAL,
    positive_at_least: str = "",
    project: Project | None = None,
    created_by=None,
) -> Pool:
    """An empty pool for a researcher's own files (docs/domain.md, "Bring your own study"): its label set (and the
    label rates count, for a set without misgendering) on its scale (docs/domain.md, "Scales"), in `project`; its generations, people's labels and judges'
    labels are uploaded after. The same checks as an import's label set (annotation/labelset.py)."""
    limit = Pool._meta.get_field("name").max_length or 64
    if not name or slugify(name) != name or len(name) > limit:
        raise PoolCreateError(
            f"name: a pool's name is a slug of at most {limit} characters (letters, digits, - and _), got {name!r}"
        )
    try:
        chosen_positive, threshold = positive.strip(), positive_at_least.strip()
        chosen = labels_check(list(labels), chosen_positive, scale=scale, positive_at_least=threshold)
    except LabelSetError as exc:
        raise PoolCreateError(f"labels: {exc}") from None
    if Pool.objects.filter(name=name).exists():
        raise PoolCreateError(f"name: a pool named {name!r} already exists; choose another name")
    pool = Pool.objects.create(
        name=name, labels=chosen, positive_label=chosen_positive, scale=scale, positive_at_least=threshold,
        created_by=created_by, **_in_project(project),
    )  # fmt: skip
    audit_record(
        event="pool.create", obj=pool, actor=created_by, action=CREATE,
        data={"labels": chosen, "positive_label": chosen_positive, "scale": scale, "positive_at_least": threshold,
              "project": pool.project.name,
              "items": 0},
    )  # fmt: skip
    pool_changed(pools=[pool])
    return pool
