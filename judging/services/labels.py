"""One chunk of a judge run: build each item's (or, for a run over a job, each generation's) prompt, rate it, write
its machine label.

Safe to run twice: items already labelled are skipped (likelihood) or the chunk is rated again with the same seed
and only the missing rows are inserted (sampling, which must draw the same numbers for the same batch); the unique
(run, item) constraint keeps one label per item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from annotation.models import PoolItem
from generation.engines import engine_for
from generation.models import Generation
from generation.seeds import seed_derive
from judging.models import JudgeMode, JudgeRun, MachineLabel
from judging.scoring import answer_verdict
from judging.selectors import generation_prompt, item_prompt


def chunk_seed(*, run_seed: int, chunk_index: int) -> int:
    return seed_derive(seed=run_seed, offset=chunk_index)


def _write_now(save: Callable[[], object]) -> bool:
    with transaction.atomic():
        save()
    return True


def judge_chunk_label(
    *,
    run: JudgeRun,
    item_ids: list[int],
    chunk_index: int,
    loaded: Any = None,
    write: Callable[[Callable[[], object]], bool] = _write_now,
) -> int:
    """Label the chunk's units (pool item ids, or generation ids for a run over a job) that have no label yet;
    returns how many labels were written. `write` runs the insert (the job kind passes `job_rows_write`, which
    writes nothing once the job is cancelled)."""
    judge = run.judge
    over_job = run.source_job_id is not None
    likelihood = run.mode == JudgeMode.LIKELIHOOD  # sampling rates the whole chunk again, to draw the same numbers
    unit = "generation_id" if over_job else "item_id"
    done = set(MachineLabel.objects.filter(run=run, **{f"{unit}__in": item_ids}).values_list(unit, flat=True))
    if len(done) == len(set(item_ids)):
        return 0
    units: list[Generation] | list[PoolItem]
    prompts: list[str]
    if over_job:
        generations = Generation.objects.select_related("instance", "job__generation_run__dataset").in_bulk(item_ids)
        units = [generations[i] for i in item_ids if i in generations and not (likelihood and i in done)]
        prompts = [generation_prompt(judge=judge, generation=row) for row in units]
    else:
        items = PoolItem.objects.select_related("generation__instance").in_bulk(item_ids)
        units = [items[i] for i in item_ids if i in items and not (likelihood and i in done)]
        prompts = [item_prompt(judge=judge, item=row) for row in units]
    # The judge's model runs on its engine, through the registry like a generation job's (generation/engines/): the
    # worker's engine for local weights, the endpoint engine for a model behind an endpoint.
    engine = engine_for(engine=None, language_model=judge.model)
    if loaded is None:
        loaded = engine.load(language_model=judge.model, job_id=run.job_id)
    answers = engine.answer(
        language_model=judge.model,
        loaded=loaded,
        prompts=prompts,
        options=judge.option_map,
        mode=run.mode,
        k=run.k,
        temperature=run.temperature,
        seed=chunk_seed(run_seed=run.seed, chunk_index=chunk_index),
    )
    options = judge.option_map
    verdicts = [answer_verdict(answer=answer, options=options) for answer in answers]
    rows = [
        MachineLabel(
            run=run,
            **{unit.removesuffix("_id"): row},
            label=verdict.label,
            confidence=verdict.confidence,
            scores=verdict.scores,
            prompt=prompt,
            samples=verdict.samples,
        )
        for row, prompt, verdict in zip(units, prompts, verdicts, strict=True)
        if row.pk not in done
    ]
    written = write(lambda: MachineLabel.objects.bulk_create(rows, ignore_conflicts=True))
    return len(rows) if written else 0
