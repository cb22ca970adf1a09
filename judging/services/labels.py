"""One chunk of a judge run: build each item's prompt, rate it, write its machine label.

Safe to run twice: items already labelled are skipped (likelihood) or the chunk is rated again with the same seed
and only the missing rows are inserted (sampling, which must draw the same numbers for the same batch); the unique
(run, item) constraint keeps one label per item.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from annotation.models import PoolItem
from generation.loading import LoadedModel, model_load
from generation.seeds import seed_derive
from judging.models import JudgeMode, JudgeRun, MachineLabel
from judging.scoring import likelihood_judge, sampling_judge
from judging.selectors import item_prompt


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
    loaded: LoadedModel | None = None,
    write: Callable[[Callable[[], object]], bool] = _write_now,
) -> int:
    """Label the chunk's items that have no label yet; returns how many labels were written. `write` runs the
    insert (the job kind passes `job_rows_write`, which writes nothing once the job is cancelled)."""
    judge = run.judge
    done = set(MachineLabel.objects.filter(run=run, item_id__in=item_ids).values_list("item_id", flat=True))
    if len(done) == len(set(item_ids)):
        return 0
    by_id = PoolItem.objects.select_related("generation__instance").in_bulk(item_ids)
    items = [by_id[item_id] for item_id in item_ids if item_id in by_id]
    if run.mode == JudgeMode.LIKELIHOOD:
        items = [item for item in items if item.pk not in done]
    prompts = [item_prompt(judge=judge, item=item) for item in items]
    loaded = loaded or model_load(language_model=judge.model)
    if run.mode == JudgeMode.SAMPLING:
        verdicts = sampling_judge(
            loaded=loaded,
            prompts=prompts,
            options=judge.option_map,
            k=run.k,
            temperature=run.temperature,
            seed=chunk_seed(run_seed=run.seed, chunk_index=chunk_index),
            batch_size=len(prompts),
        )
    else:
        verdicts = likelihood_judge(loaded=loaded, prompts=prompts, options=judge.option_map)
    rows = [
        MachineLabel(
            run=run,
            item=item,
            label=verdict.label,
            confidence=verdict.confidence,
            scores=verdict.scores,
            prompt=prompt,
            samples=verdict.samples,
        )
        for item, prompt, verdict in zip(items, prompts, verdicts, strict=True)
        if item.pk not in done
    ]
    written = write(lambda: MachineLabel.objects.bulk_create(rows, ignore_conflicts=True))
    return len(rows) if written else 0
