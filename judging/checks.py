"""The checks a reviewer asks of a judge (docs/domain.md, "Judges a reviewer trusts"): position consistency,
family-swap invariance and contextual calibration, each a check run over a pool's items.

A check run presents each item as variants and stores the judge's label of each (`CheckLabel`):
- `position`: the options in each cyclic rotation of the judge's order (variant "0" is the judge's own order, "r" the
  order starting at its r-th option); the prompt lists them in that order.
- `family_swap`: the item itself (variant `original`) and, for each other family of the item's codebook, the item
  with its declared family and every form of it in the context and the generation mapped to that family by the
  codebook's form table (a whole word, case kept: "Xe" -> "He"); the prompt declares the target family. A spelling
  that is several forms of a family (she's "her") takes the first of them in form order. A family the item's other
  person uses (distractors) is no target: the swap would make the two people alike.
- `contextual` (likelihood judges only): the item itself (`original`) and the content-free probes, the item with its
  generation replaced by "N/A" (`n/a`), by "" (`empty`) and by "[MASK]" (`mask`).

Every variant is scored by `judge_prompts_score`, the one call that scores prompts with a judge, the call a judge
run's chunk makes (judging/services/labels.py), so a check runs wherever the judge runs. Its work is a job of kind
`judge_check` (chunks, leases, progress, cancel, resume), its row a `CheckRun` written with the job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from rest_framework import serializers

from annotation.models import Pool, PoolItem
from generation.engines import engine_for
from generation.jobs.kinds import JobKind
from generation.jobs.progress import job_rows_write
from generation.jobs.services import job_create
from generation.models import Job, JobChunk
from generation.parameters import JobParameterError, JobParameters
from generation.pronouns import Codebook
from judging.kinds import RunParameters, judge_run_parameters_validate
from judging.models import (
    CHECK_CONTEXTUAL,
    CHECK_FAMILY_SWAP,
    CHECK_KIND,
    CHECK_POSITION,
    CHECKS,
    CheckLabel,
    CheckRun,
    Judge,
    JudgeMode,
)
from judging.prompts import PromptItem, codebook_of, prompt_render
from judging.scoring import Verdict, answer_verdict
from judging.selectors import prompt_item
from judging.services.runs import run_engine_check, run_taken_up

ORIGINAL = "original"
PROBES = {"n/a": "N/A", "empty": "", "mask": "[MASK]"}  # variant -> the generation put in its place
CHECK_NAMES = {"position": CHECK_POSITION, "family-swap": CHECK_FAMILY_SWAP, "contextual": CHECK_CONTEXTUAL}


# --- scoring ---------------------------------------------------------------------------------------------------------


def judge_prompts_score(
    *,
    judge: Judge,
    mode: str,
    prompts: Sequence[str],
    options: dict[str, str],
    k: int = 1,
    temperature: float = 1.0,
    seed: int = 0,
    loaded: Any = None,
    job_id: int | None = None,
) -> list[Verdict]:
    """Score these prompts with this judge: one verdict per prompt, the options in the order given. The call a judge
    run makes for a chunk (judging/services/labels.py): the judge's model on its engine (`engine_for(...).answer`),
    so a check runs wherever the judge runs, an endpoint judge's replies stored before they are used (likelihood:
    each option's score; sampling: k answers, seeded). `loaded`: what the engine's `load` gave, else loaded here
    (`job_id`: the job an endpoint's requests are spent for)."""
    if not prompts:
        return []
    engine = engine_for(engine=None, language_model=judge.model)
    if loaded is None:
        loaded = engine.load(language_model=judge.model, job_id=job_id)
    answers = engine.answer(
        language_model=judge.model, loaded=loaded, prompts=prompts, options=options, mode=mode, k=k,
        temperature=temperature, seed=seed,
    )  # fmt: skip
    return [answer_verdict(answer=answer, options=options) for answer in answers]


# --- variants ---------------------------------------------------------------------------------------------------------


def rotations(options: dict[str, str]) -> list[dict[str, str]]:
    """Every cyclic rotation of the options' order; the first is the order given."""
    labels = list(options)
    return [{label: options[label] for label in labels[r:] + labels[:r]} for r in range(len(labels))]


def _cased(word: str, surface: str) -> str:
    if word.isupper() and len(word) > 1:
        return surface.upper()
    if word[:1].isupper():
        return surface[:1].upper() + surface[1:]
    return surface


def family_map(codebook: Codebook, source: str, target: str) -> dict[str, str]:
    """Each spelling of the source family -> the target family's spelling of the same form (the first form in
    form order where a spelling is several); a form the target lacks keeps its spelling."""
    mapping: dict[str, str] = {}
    for form in codebook.forms:
        surface = codebook.table.get(source, {}).get(form)
        if surface and surface.lower() not in mapping:
            mapping[surface.lower()] = codebook.table.get(target, {}).get(form, surface)
    return mapping


def family_swap(text: str, mapping: dict[str, str]) -> str:
    """The text with every whole-word spelling in `mapping` replaced, any case, its case kept."""
    if not mapping or not text:
        return text
    pattern = re.compile(
        r"(?<![\w'’])(" + "|".join(re.escape(s) for s in sorted(mapping, key=len, reverse=True)) + r")(?!\w)",
        re.IGNORECASE,
    )
    return pattern.sub(lambda match: _cased(match.group(0), mapping[match.group(0).lower()]), text)


def swap_targets(item: PromptItem) -> list[str]:
    """The families an item's declared family is swapped to: every other family of its codebook but the other
    person's; none when the item declares no family of its codebook."""
    codebook = codebook_of(item.dataset)
    if not item.pronoun or item.pronoun not in codebook.table:
        return []
    return [base for base in codebook.bases if base not in (item.pronoun, item.other_pronoun)]


@dataclass(frozen=True)
class Variant:
    key: str  # the CheckLabel's variant
    options: dict[str, str]
    prompt: str


def item_variants(*, kind: str, judge: Judge, item: PromptItem) -> list[Variant]:
    options = judge.option_map
    render = lambda shown, order=options: prompt_render(template=judge.template, options=order, item=shown)  # noqa: E731
    if kind == CHECK_POSITION:
        return [Variant(str(r), order, render(item, order)) for r, order in enumerate(rotations(options))]
    variants = [Variant(ORIGINAL, options, render(item))]
    if kind == CHECK_FAMILY_SWAP:
        codebook = codebook_of(item.dataset)
        for target in swap_targets(item):
            mapping = family_map(codebook, item.pronoun, target)
            swapped = replace(
                item, pronoun=target, context=family_swap(item.context, mapping),
                generation=family_swap(item.generation, mapping),
            )  # fmt: skip
            variants.append(Variant(target, options, render(swapped)))
    elif kind == CHECK_CONTEXTUAL:
        variants += [Variant(key, options, render(replace(item, generation=text))) for key, text in PROBES.items()]
    return variants


# --- the job kind ------------------------------------------------------------------------------------------------------


def check_labels_write(*, run: CheckRun, item_ids: list[int], chunk_index: int, write=None, loaded=None) -> int:
    """Label every variant of the chunk's items that has no label yet (a sampling check rates the whole chunk
    again, to draw the same numbers); returns how many labels were written."""
    from judging.services.labels import chunk_seed

    done = set(CheckLabel.objects.filter(run=run, item_id__in=item_ids).values_list("item_id", "variant"))
    items = PoolItem.objects.select_related("generation__instance").in_bulk(item_ids)
    # Prompts grouped by the options' order (one scoring call each: a rotation lists them in its own order).
    groups: dict[tuple, list[tuple[int, Variant]]] = {}
    for item_id in item_ids:
        if item_id not in items:
            continue
        for variant in item_variants(kind=run.kind, judge=run.judge, item=prompt_item(item=items[item_id])):
            if run.mode == JudgeMode.LIKELIHOOD and (item_id, variant.key) in done:
                continue
            groups.setdefault(tuple(variant.options.items()), []).append((item_id, variant))
    rows = []
    for order, members in groups.items():
        verdicts = judge_prompts_score(
            judge=run.judge, mode=run.mode, prompts=[v.prompt for _, v in members], options=dict(order), k=run.k,
            temperature=run.temperature, seed=chunk_seed(run_seed=run.seed, chunk_index=chunk_index), loaded=loaded,
            job_id=run.job_id,
        )  # fmt: skip
        for (item_id, variant), verdict in zip(members, verdicts, strict=True):
            if (item_id, variant.key) in done:
                continue
            rows.append(
                CheckLabel(
                    run=run,
                    item_id=item_id,
                    variant=variant.key,
                    label=verdict.label,
                    confidence=verdict.confidence,
                    scores=verdict.scores,
                    prompt=variant.prompt,
                    options=[list(pair) for pair in order],
                )  # fmt: skip
            )

    def save() -> object:
        return CheckLabel.objects.bulk_create(rows, ignore_conflicts=True)

    if write is None:
        with transaction.atomic():
            save()
        return len(rows)
    return len(rows) if write(save) else 0


class CheckKind(JobKind[JobParameters]):
    needs_dataset = False
    rows_related = ("check_run__judge", "check_run__pool")
    unit_label = "items"
    item_label = "items"  # each item's variants are written together

    def options_validate(self, *, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        """`check`, `pool` and `judge` by name, `mode`, `k`, `temperature` (the generic jobs API); the seed is the
        job's and the model the judge's."""
        try:
            params = check_parameters_validate(
                check=str(options.get("check", "")), pool=str(options.get("pool", "")),
                judge=str(options.get("judge", "")), mode=options.get("mode"), k=options.get("k"),
                temperature=options.get("temperature"), seed=values.get("seed", 0),
            )  # fmt: skip
        except JobParameterError as exc:
            raise serializers.ValidationError(exc.errors) from None
        values["model"] = params.judge.model
        return {**params.options(), "check": CHECK_NAMES.get(options["check"], options["check"])}

    def options_kept(self, *, params: JobParameters) -> dict[str, Any]:
        return {}  # the check's parameters are its row's

    def rows_create(self, *, job: Job, params: JobParameters) -> None:
        options = params.options
        CheckRun.objects.create(
            job=job, judge_id=options["judge_id"], pool_id=options["pool_id"], kind=options["check"],
            mode=options["mode"], k=options["k"], temperature=options["temperature"], seed=params.seed,
            created_by=job.created_by,
        )  # fmt: skip

    def parameters(self, *, job: Job) -> dict[str, Any]:
        run = job.check_run
        return {
            "seed": run.seed,
            "options": {
                "pool_id": run.pool_id, "pool": run.pool.name, "judge_id": run.judge_id, "judge": run.judge.name,
                "version": run.judge.version, "check": run.kind, "mode": run.mode, "k": run.k,
                "temperature": run.temperature,
            },
        }  # fmt: skip

    def units(self, *, params: JobParameters) -> list[int]:
        items = PoolItem.objects.filter(pool_id=params.options["pool_id"]).order_by("id")
        return list(items.values_list("id", flat=True))

    def run_chunk(self, *, job: Job, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]) -> bool:
        run = CheckRun.objects.select_related("judge__model", "pool").get(job=job)
        if stop():
            return False
        check_labels_write(
            run=run, item_ids=list(chunk.unit_ids), chunk_index=chunk.index,
            write=lambda save: job_rows_write(job_id=job.pk, write=save),
        )  # fmt: skip
        step_done()
        return not stop()

    def counts(self, *, job: Job) -> tuple[int, int]:
        # An item's variants are written together (one insert per chunk): an item is done with any of its labels.
        done = CheckLabel.objects.filter(run__job=job).values("item_id").distinct().count()
        return done, done

    def describe(self, *, job: Job) -> str:
        run = job.check_run
        return f"check {run.kind} of judge {run.judge.name} v{run.judge.version} ({run.mode}) on pool {run.pool.name}"


# --- creating a check run ----------------------------------------------------------------------------------------------


def check_parameters_validate(*, check: str, pool: str | Pool, judge: str | Judge, **parameters) -> RunParameters:
    """A judge run's parameters (judging/kinds.py, over a pool) and the check's own conditions; every problem at
    once: an unknown check, a family-swap check where no item declares a family with another to swap to, a
    contextual check of a sampling judge."""
    errors: dict[str, str] = {}
    kind = CHECK_NAMES.get(check, check if check in dict(CHECKS) else "")
    if not kind:
        errors["check"] = f"unknown check {check!r}; use {', '.join(CHECK_NAMES)}"
    try:
        params = judge_run_parameters_validate(pool=pool, judge=judge, **parameters)
    except JobParameterError as exc:
        raise JobParameterError({**exc.errors, **errors}) from None
    assert params.pool is not None
    if kind == CHECK_CONTEXTUAL and params.mode != JudgeMode.LIKELIHOOD:
        errors["mode"] = (
            f"contextual calibration needs the judge's option probabilities: {params.judge} runs in {params.mode} "
            "mode; check a likelihood judge (--mode likelihood)"
        )
    if kind == CHECK_FAMILY_SWAP:
        items = PoolItem.objects.filter(pool=params.pool).select_related("generation__instance")
        if not any(swap_targets(prompt_item(item=item)) for item in items.iterator()):
            errors["check"] = (
                f"a family-swap check of {params.judge} on pool {params.pool.name}: no item declares a pronoun family "
                "of its codebook with another family to swap to (the items' pronoun is empty or not a family of "
                "their dataset's codebook)"
            )
    if errors:
        raise JobParameterError(errors)
    return params


def check_run_create(
    *, check: str, rerun: bool = False, created_by=None, queue: bool = True, **parameters
) -> tuple[CheckRun, bool]:
    """(check run, created): as `judge_run_create` (judging/services/runs.py) does for a judge run, over a pool. A
    finished check of the same judge version, pool, check, mode, k, temperature and seed is returned unless
    `rerun`; an unfinished one is resumed. Bad input raises JobParameterError and writes nothing."""
    params = check_parameters_validate(check=check, **parameters)
    kind = CHECK_NAMES.get(check, check)
    if not rerun:
        same = (
            CheckRun.objects.filter(
                judge=params.judge,
                pool=params.pool,
                kind=kind,
                mode=params.mode,
                k=params.k,
                temperature=params.temperature,
                seed=params.seed,
            )  # fmt: skip
            .exclude(job__status="cancelled")
            .select_related("job", "judge", "pool")
            .order_by("-id")
            .first()
        )
        if same is not None:
            return run_taken_up(same, queue=queue), False
    run_engine_check(params)
    job = job_create(
        params=JobParameters(
            model=params.judge.model,
            dataset=None,
            kind=CHECK_KIND,
            settings=[],
            seed=params.seed,
            options={**params.options(), "check": kind},
        ),  # fmt: skip
        created_by=created_by,
        queue=queue,
    )
    return CheckRun.objects.select_related("job", "judge", "pool").get(job=job), True
