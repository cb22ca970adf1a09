"""The generation kind (`GenerationKind`), registered like any other job kind (generation/jobs/kinds.py) by the
generation app: a job's units are instances of its dataset, each giving settings x samples generations and, on the
masked datasets, one probability result. The chunk runner (generation/jobs/chunks.py) hands it one chunk at a time.

A chunk's steps: probability scoring, then sampling (every setting, each from its own seed), each step written as it
finishes. Safe to run twice:
a step whose rows all exist is skipped; a step with some rows is redone with the same seed (so it reproduces the same
text) and inserted with `ignore_conflicts`, the database's unique constraints keeping one row per (job, instance) and
per (job, instance, setting, sample index). A worker killed mid-chunk therefore loses only the step it was in. A
chunk is one batch (its size is at most the batch size), so a cancel stops it between batches; with an engine that is
`stoppable` (hf) a sampling call in progress also asks `stop` about once a second and ends there, writing nothing;
and `job_rows_write` writes no step once the job is cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db.models import Count, Q

from generation.contexts import ALL_SETTINGS, SETTINGS, build_context
from generation.datasets.registry import dataset_kind
from generation.engines import Engine, engine_for, engine_sample
from generation.engines.base import NO_PROB_SCORE, Interrupted, Sampling, ScoreItem
from generation.heuristic import heuristic_verdicts
from generation.jobs.kinds import JobKind
from generation.jobs.progress import job_rows_write
from generation.models import Generation, GenerationRun, Instance, Job, JobChunk, ProbResult
from generation.parameters import JobParameters
from generation.pronouns import Codebook
from generation.seeds import seed_derive
from generation.selectors import dataset_codebook
from generation.services.tango import tango_instances_done, tango_templates_fill
from generation.signals import chunk_finished

logger = logging.getLogger(__name__)

# The parameters a generation run keeps in its columns of the same name (besides its dataset, engine and filters).
RUN_PARAMETERS = ("pronouns", "settings", "samples", "max_new_tokens", "top_k", "top_p", "num_beams", "seed",
                  "per_pronoun", "prob_score")  # fmt: skip


def chunk_seed(*, job_seed: int, chunk_index: int, setting: str) -> int:
    """The seed of one chunk's sampling for one setting: a re-run chunk draws the same numbers."""
    # ALL_SETTINGS starts with SETTINGS, so pre/post seeds are unchanged; open (TANGO) jobs have no other setting.
    return seed_derive(seed=job_seed, offset=chunk_index * len(SETTINGS) + ALL_SETTINGS.index(setting))


def _score(job: Job, engine: Engine, loaded: Any, instances: list[Instance], codebook: Codebook) -> None:
    run = job.generation_run
    spec = dataset_kind(run.dataset.kind)
    if run.prob_score == NO_PROB_SCORE or spec.scores_per_generation or not spec.scores_probability:
        # none asked for; or no mask: Prob-TANGO scores each generation once it is written (tango_templates_fill);
        # or nothing to score (GIFI's prompts)
        return
    scored = set(ProbResult.objects.filter(job=job, instance__in=instances).values_list("instance_id", flat=True))
    todo = [instance for instance in instances if instance.pk not in scored]
    if not todo:
        return
    items = [
        ScoreItem(
            text=instance.text,
            mask=instance.template.mask,
            form=instance.template.form,
            correct_form=instance.correct_form,
            codebook=codebook,
            prob_score=run.prob_score,
        )
        for instance in todo
    ]
    results = engine.score(language_model=job.model, loaded=loaded, items=items)
    rows = [
        ProbResult(
            job=job, instance=instance, losses=result.losses, prediction=result.prediction, correct=result.correct
        )
        for instance, result in zip(todo, results, strict=True)
    ]
    job_rows_write(job_id=job.pk, write=lambda: ProbResult.objects.bulk_create(rows, ignore_conflicts=True))


def _sample(
    job: Job,
    chunk: JobChunk,
    chosen: Engine,
    loaded: Any,
    instances: list[Instance],
    codebook: Codebook,
    stop: Callable[[], bool],
    step_done: Callable[[], None],
) -> bool:
    """Sample and write the chunk's settings whose rows are not all written, each from its own seed, with a
    `step_done` after each setting; False, with the setting in progress not written, when `stop` interrupted the
    sampling. An engine that samples several groups in one call (hf) gets every setting at once, with the same text
    as one call per setting; another gets one call per setting."""
    run = job.generation_run
    todo = [
        setting
        for setting in run.settings
        if Generation.objects.filter(job=job, instance__in=instances, setting=setting).count()
        != len(instances) * run.samples
    ]
    contexts = {
        setting: [
            build_context(instance.text, instance.template.mask, instance.correct_form, setting)
            for instance in instances
        ]
        for setting in todo
    }
    decoding = Sampling(
        samples=run.samples,
        max_new_tokens=run.max_new_tokens,
        top_k=run.top_k,
        top_p=run.top_p,
        num_beams=run.num_beams,
    )
    # The whole chunk is sampled again even when some rows exist: the same batch and seed reproduce the same text.
    seeds = {setting: chunk_seed(job_seed=run.seed, chunk_index=chunk.index, setting=setting) for setting in todo}
    engine = run.engine or None  # the job's, else this worker's (generation/engines/)
    sampled: dict[str, list[list[str]]] = {}
    try:
        if len(todo) > 1 and chosen.samples_groups:
            together = chosen.sample_groups(
                language_model=job.model,
                loaded=loaded,
                groups=[(contexts[setting], seeds[setting]) for setting in todo],
                decoding=decoding,
                stop=stop,
            )
            sampled = dict(zip(todo, together, strict=True))
        for setting in run.settings:
            if setting in todo and setting not in sampled:
                if stop():
                    return False
                sampled[setting] = engine_sample(
                    engine=engine,
                    language_model=job.model,
                    loaded=loaded,
                    contexts=contexts[setting],
                    decoding=decoding,
                    seed=seeds[setting],
                    stop=stop,
                )
            if setting in sampled:
                _write_generations(job, instances, setting, contexts[setting], sampled[setting], codebook)
            step_done()
    except Interrupted:
        return False  # a cancel (or a lost lease) inside the call: the step is redone, or never, from its seed
    return True


def _write_generations(
    job: Job,
    instances: list[Instance],
    setting: str,
    contexts: list[str],
    continuations: list[list[str]],
    codebook: Codebook,
) -> None:
    pairs = [
        (instance, context, index, text)
        for instance, context, texts in zip(instances, contexts, continuations, strict=True)
        for index, text in enumerate(texts)
    ]
    verdicts = heuristic_verdicts(((text, instance.pronoun) for instance, _, _, text in pairs), codebook=codebook)
    rows = [
        Generation(
            job=job,
            instance=instance,
            setting=setting,
            sample_index=index,
            context=context,
            continuation=text,
            heuristic_correct=verdict.correct,
            first_pronoun=verdict.first_pronoun or "",
            first_pronoun_offset=verdict.offset,
        )
        for (instance, context, index, text), verdict in zip(pairs, verdicts, strict=True)
    ]
    job_rows_write(job_id=job.pk, write=lambda: Generation.objects.bulk_create(rows, ignore_conflicts=True))


class GenerationKind(JobKind[JobParameters]):
    """The generation kind: a job's units are instances of its dataset; each gives settings x samples generations
    and, on the masked datasets, one probability result (TANGO: one Prob-TANGO template per generation)."""

    rows_related = ("generation_run__dataset",)
    unit_label = "instances"
    item_label = "generations"

    def units(self, *, params: JobParameters) -> list[int]:
        assert params.dataset is not None  # the parameters say a generation job needs one
        # A GIFI SAOF prompt declares no family (pronoun ""): the pronouns pick among those that declare one.
        rows = Instance.objects.filter(Q(pronoun__in=params.pronouns) | Q(pronoun=""), dataset=params.dataset).order_by(
            "ordinal"
        )
        if params.part is not None:
            rows = rows.filter(template__meta__part=params.part)
        if params.distractors is not None:
            rows = rows.filter(distractors=params.distractors)
        if params.sample_seed is not None:
            rows = rows.filter(**{f"sample_{params.sample_seed}": True})
        taken: dict[str, int] = {}
        ids = []
        for instance_id, pronoun in rows.values_list("id", "pronoun"):
            if params.per_pronoun is not None and taken.get(pronoun, 0) >= params.per_pronoun:
                continue
            taken[pronoun] = taken.get(pronoun, 0) + 1
            ids.append(instance_id)
        return ids

    def nothing_to_do(self, *, params: JobParameters) -> dict[str, str] | None:
        if params.dataset is None:
            return None
        return {"dataset": f"{params.dataset.name} has no instances for pronouns {', '.join(params.pronouns)}"}

    def items_per_unit(self, *, params: JobParameters) -> int:
        return len(params.settings) * params.samples

    def run_chunk(self, *, job: Job, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]) -> bool:
        # The engine loads what it needs, no more (an endpoint: nothing; vLLM: no HF model unless it scores).
        chosen = engine_for(engine=job.generation_run.engine or None, language_model=job.model)
        loaded = chosen.load(language_model=job.model, job_id=job.pk)
        codebook = dataset_codebook(dataset=job.generation_run.dataset)
        by_id = Instance.objects.select_related("template").in_bulk(chunk.unit_ids)
        instances = [by_id[instance_id] for instance_id in chunk.unit_ids]
        if stop():
            return False
        _score(job, chosen, loaded, instances, codebook)
        step_done()
        if stop() or not _sample(job, chunk, chosen, loaded, instances, codebook, stop, step_done):
            return False
        if stop():
            return False
        if job.generation_run.prob_score != NO_PROB_SCORE:
            tango_templates_fill(job=job, instance_ids=chunk.unit_ids)  # TANGO only
        return True

    def counts(self, *, job: Job) -> tuple[int, int]:
        run = job.generation_run
        per_instance = len(run.settings) * run.samples
        generations = Generation.objects.filter(job=job)
        complete = generations.values("instance").annotate(n=Count("id")).filter(n=per_instance).values("instance")
        spec = dataset_kind(run.dataset.kind)
        if run.prob_score == NO_PROB_SCORE or not spec.scores_probability:  # sampling only (none asked for; GIFI)
            done_instances = complete.count()
        elif spec.scores_per_generation:  # Prob-TANGO is per generation
            done_instances = tango_instances_done(job=job, complete=complete)
        else:
            done_instances = ProbResult.objects.filter(job=job, instance__in=complete).count()
        return done_instances, generations.count()

    def describe(self, *, job: Job) -> str:
        return f"{job.model.name} on {job.generation_run.dataset.name}"

    def options_kept(self, *, params: JobParameters) -> dict[str, Any]:
        return {}  # every parameter is a column of the kind's own table

    def rows_create(self, *, job: Job, params: JobParameters) -> None:
        assert params.dataset is not None  # the parameters say a generation job needs one
        GenerationRun.objects.create(
            job=job,
            dataset=params.dataset,
            **{name: getattr(params, name) for name in RUN_PARAMETERS},
            engine=params.engine or "",
            distractors=params.distractors,
            sample_seed=params.sample_seed,
            part=params.part or "",
        )

    def parameters(self, *, job: Job) -> dict[str, Any]:
        """The run's parameters as the API has always given them: the columns, with the engine and RUFF's
        distractor filters under `options` when set."""
        run = job.generation_run
        extra = {
            "engine": run.engine or None,
            "distractors": run.distractors,
            "sample_seed": run.sample_seed,
            "part": run.part or None,
        }
        return {
            "dataset": run.dataset.name,
            **{name: getattr(run, name) for name in RUN_PARAMETERS},
            "options": {key: value for key, value in extra.items() if value is not None},
        }

    def chunk_finished(self, *, job: Job, unit_ids: list[int]) -> None:
        for receiver, response in chunk_finished.send_robust(sender=Job, job_id=job.pk, instance_ids=unit_ids):
            if isinstance(response, Exception):
                logger.error("job %s: chunk_finished receiver %r failed: %r", job.pk, receiver, response)
