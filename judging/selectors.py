"""Reads of the judging app: judges, runs, machine labels, and what a prompt says about an item or a generation.

A run labels a pool's items (a pool run) or a generation job's generations (a run over a job). A run over a job
counts for every pool drawn from that job: a pool item takes the label of its generation (`run_pool_labels`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from annotation.models import Pool, PoolItem
from generation.datasets.labels import dataset_label
from generation.models import Generation, Job
from judging.models import Judge, JudgeMode, JudgeRun, MachineLabel
from judging.prompts import PromptItem, codebook_of, prompt_render


def _prompt_item(*, context: str, continuation: str, dataset: str, pronoun: str, instance) -> PromptItem:
    confuse = (getattr(instance, "confuse_pronoun", "") or "").lower()
    other_base = codebook_of(dataset).base_of.get(confuse, "") if confuse else ""
    return PromptItem(
        context=context,
        generation=continuation,
        dataset=dataset,
        pronoun=pronoun,
        other_pronoun=other_base,
        target=(getattr(instance, "word", "") or "") if other_base else "",
        other=(getattr(instance, "other_person", "") or "") if other_base else "",
    )


def prompt_item(*, item: PoolItem) -> PromptItem:
    """The item as the prompt shows it. With distractors (an instance with a second person: RUFF's participant and
    `confuse_pronoun`) both people and their pronouns, the target (RUFF's `word`, the occupation) marked; otherwise
    the target's declared pronouns."""
    instance = item.generation.instance if item.generation is not None else None
    return _prompt_item(
        context=item.context, continuation=item.continuation, dataset=item.dataset, pronoun=item.pronoun,
        instance=instance,
    )  # fmt: skip


def generation_prompt_item(*, generation: Generation) -> PromptItem:
    """A generation as the prompt shows it: as a pool item drawn from it would be shown (the same prompt)."""
    dataset = dataset_label(generation.job.dataset)
    return _prompt_item(
        context=generation.context, continuation=generation.continuation, dataset=dataset,
        pronoun=generation.instance.pronoun, instance=generation.instance,
    )  # fmt: skip


def item_prompt(*, judge: Judge, item: PoolItem) -> str:
    return prompt_render(template=judge.template, options=judge.option_map, item=prompt_item(item=item))


def generation_prompt(*, judge: Judge, generation: Generation) -> str:
    return prompt_render(
        template=judge.template, options=judge.option_map, item=generation_prompt_item(generation=generation)
    )


def pool_runs(*, pool: Pool) -> QuerySet[JudgeRun]:
    """The pool's own runs (not the runs over its jobs: `covering_runs`)."""
    return JudgeRun.objects.filter(pool=pool).select_related("judge", "job").order_by("id")


def job_runs(*, job: Job) -> QuerySet[JudgeRun]:
    """The runs over a generation job's generations, oldest first."""
    return JudgeRun.objects.filter(source_job=job).select_related("judge", "job", "source_job").order_by("id")


def run_labels(*, run: JudgeRun) -> QuerySet[MachineLabel]:
    return MachineLabel.objects.filter(run=run).select_related("item").order_by("item_id")


def label_rows(*, run: JudgeRun) -> list[dict]:
    """One row per labelled item: `item` (the public id), `origin`, `label`, `confidence`, `prompt` (the exact text
    scored), `options` (label -> option text) and `score_<label>` per option."""
    options = run.judge.option_map
    rows = []
    for label in run_labels(run=run).filter(item__isnull=False):
        assert label.item is not None  # a pool run's labels are of items
        rows.append(
            {
                "item": label.item.public_id,
                "origin": run.judge.origin,
                "judge": run.judge.name,
                "version": run.judge.version,
                "mode": run.mode,
                "label": label.label,
                "confidence": label.confidence,
                "prompt": label.prompt,
                "options": options,
                **{f"score_{key}": label.scores.get(key) for key in options},
            }
        )
    return rows


def covering_runs(*, pool: Pool) -> list[JudgeRun]:
    """The finished runs whose labels reach the pool: per judge name, the newest finished run over the pool and the
    newest finished run over each of the pool's jobs; ordered by judge name, then id."""
    runs = (
        JudgeRun.objects.filter(Q(pool=pool) | Q(source_job__in=pool.jobs.all()))
        .select_related("judge__model", "job", "source_job__model", "source_job__generation_run__dataset")
        .order_by("id")
    )
    newest: dict[tuple[str, str], JudgeRun] = {}
    for run in runs:
        if run.state == "done":
            newest[(run.judge.name, run.scope)] = run  # ordered by id: later runs replace earlier ones
    return sorted(newest.values(), key=lambda run: (run.judge.name, run.pk))


@dataclass(frozen=True)
class ItemLabel:
    item_id: int
    label: str
    confidence: float | None
    scores: dict
    run: JudgeRun


# Inside `run_labels_read_once`: (run id, pool id) -> every label of the run over the pool, read once.
_labels_read: ContextVar[dict[tuple[int, int], list[ItemLabel]] | None] = ContextVar("labels_read", default=None)


@contextmanager
def run_labels_read_once() -> Iterator[None]:
    """Within it, `run_pool_labels` reads each run's labels of a pool once and answers later calls (any `item_ids`)
    from what it read: for one consistent read of many figures (a report's judge frame, verdict, PPI++ and corrected
    rates all start from the same runs' labels). Nested uses share the outermost's reads."""
    token = _labels_read.set({}) if _labels_read.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _labels_read.reset(token)


def run_pool_labels(*, run: JudgeRun, pool: Pool, item_ids=None) -> list[ItemLabel]:
    """The run's labels of the pool's items, in item order: a pool run's own labels, or, for a run over a job, the
    label of each pool item's generation (inside `run_labels_read_once`, read once per run and pool)."""
    read = _labels_read.get()
    if read is None:
        return _run_pool_labels(run=run, pool=pool, item_ids=item_ids)
    key = (run.pk, pool.pk)
    if key not in read:
        read[key] = _run_pool_labels(run=run, pool=pool, item_ids=None)
    if item_ids is None:
        return list(read[key])
    wanted = set(item_ids)
    return [row for row in read[key] if row.item_id in wanted]


def _run_pool_labels(*, run: JudgeRun, pool: Pool, item_ids=None) -> list[ItemLabel]:
    if run.pool_id is not None:
        if run.pool_id != pool.pk:
            return []
        rows = MachineLabel.objects.filter(run=run, item__isnull=False)
        if item_ids is not None:
            rows = rows.filter(item_id__in=list(item_ids))
        found = list(rows.values_list("item_id", "label", "confidence", "scores"))
    else:
        items = PoolItem.objects.filter(pool=pool, generation__machine_labels__run=run)
        if item_ids is not None:
            items = items.filter(pk__in=list(item_ids))
        found = list(
            items.values_list(
                "id",
                "generation__machine_labels__label",
                "generation__machine_labels__confidence",
                "generation__machine_labels__scores",
            )
        )
    return sorted(
        (ItemLabel(item_id, label, confidence, scores, run) for item_id, label, confidence, scores in found),
        key=lambda row: row.item_id,
    )


def pool_judge_labels(
    *, pool: Pool, item_ids=None, runs: list[JudgeRun] | None = None
) -> dict[str, dict[int, ItemLabel]]:
    """judge name -> item id -> its label, from the judge's runs that cover the pool (`runs`: `covering_runs`, read
    here unless the caller has them); where two cover an item (the pool's own run and a run over its job), the newer
    run's label."""
    labels: dict[str, dict[int, ItemLabel]] = defaultdict(dict)
    for run in covering_runs(pool=pool) if runs is None else runs:  # by name, then id: newer runs overwrite
        for row in run_pool_labels(run=run, pool=pool, item_ids=item_ids):
            labels[run.judge.name][row.item_id] = row
    return {name: labels[name] for name in sorted(labels)}


GENERATION_COLUMNS = [
    "generation", "model", "dataset", "setting", "pronoun", "context", "sample_index", "item", "label", "confidence",
]  # fmt: skip


def generation_label_columns(*, run: JudgeRun) -> list[str]:
    """The columns of `generation_label_rows`: the base columns, then `prob_<label>` and `score_<label>` per option."""
    options = run.judge.option_map
    return GENERATION_COLUMNS + [f"prob_{label}" for label in options] + [f"score_{label}" for label in options]


def generation_label_rows(
    *, run: JudgeRun, pool: Pool | None = None, pools: QuerySet[Pool] | None = None
) -> list[dict]:
    """One row per judged generation of a run over a job (a pool run: per item), in generation (item) order.

    `item` is the public id of the study item that shows the generation in `pool`; without a pool, the items that
    show it in any pool (of `pools`, when given: those the reader may see), joined by `;` (empty when none). `prob_<label>` is the option's probability (the softmax of
    the scores in likelihood mode, the vote share in sampling mode), `score_<label>` its stored score."""
    from annotation.models import STUDY
    from judging.scoring import option_probabilities

    options = run.judge.option_map

    def figures(label: MachineLabel) -> dict:
        # An imported label without probabilities has none (not zeros).
        given = label.scores or run.mode != JudgeMode.IMPORTED
        probabilities = option_probabilities(run.mode, options, label.scores) if given else {}
        return {
            "label": label.label,
            "confidence": label.confidence,
            **{f"prob_{key}": probabilities.get(key) for key in options},
            **{f"score_{key}": label.scores.get(key) for key in options},
        }

    rows = []
    if run.source_job_id is None:
        labels = MachineLabel.objects.filter(run=run, item__isnull=False).select_related("item").order_by("item_id")
        for label in labels:
            item = label.item
            assert item is not None
            rows.append(
                {
                    "generation": item.generation_id, "model": item.model_name, "dataset": item.dataset,
                    "setting": item.setting, "pronoun": item.pronoun, "context": item.context,
                    "sample_index": item.sample_index, "item": item.public_id, **figures(label),
                }
            )  # fmt: skip
        return rows
    shown: dict[int, list[str]] = defaultdict(list)
    items = PoolItem.objects.filter(generation__job_id=run.source_job_id, kind=STUDY)
    if pool is not None:
        items = items.filter(pool=pool)
    if pools is not None:
        items = items.filter(pool__in=pools)
    for generation_id, public_id in items.order_by("pool_id", "id").values_list("generation_id", "public_id"):
        shown[generation_id].append(public_id)
    labels = (
        MachineLabel.objects.filter(run=run, generation__isnull=False)
        .select_related("generation__instance", "generation__job__model", "generation__job__generation_run__dataset")
        .order_by("generation_id")
    )
    for label in labels:
        generation = label.generation
        assert generation is not None
        job = generation.job
        rows.append(
            {
                "generation": generation.pk, "model": job.model.name,
                "dataset": dataset_label(job.dataset), "setting": generation.setting,
                "pronoun": generation.instance.pronoun, "context": generation.context,
                "sample_index": generation.sample_index, "item": ";".join(shown.get(generation.pk, [])),
                **figures(label),
            }
        )  # fmt: skip
    return rows


def judge_run_estimate(*, params) -> dict:
    """What a judge run (validated `judging.kinds.RunParameters`) would send before it is sent: one request per item
    (likelihood) or k (sampling), each its item's prompt (docs/domain.md, 'Models behind an endpoint')."""
    from generation.engines.endpoint.engine import ANSWER_TOKENS
    from generation.selectors import spend_estimate

    judge = params.judge
    if params.pool is not None:
        items = PoolItem.objects.filter(pool=params.pool).select_related("generation__instance")
        prompts = [item_prompt(judge=judge, item=item) for item in items]
    else:
        generations = Generation.objects.filter(job=params.source_job).select_related(
            "instance", "job__generation_run__dataset"
        )
        prompts = [generation_prompt(judge=judge, generation=row) for row in generations]
    per = params.k if params.mode == JudgeMode.SAMPLING else 1
    requests = len(prompts) * per
    return spend_estimate(
        model=judge.model,
        requests=requests,
        chars_in=sum(len(prompt) for prompt in prompts) * per,
        tokens_out=requests * (ANSWER_TOKENS if params.mode == JudgeMode.SAMPLING else 1),
    )
