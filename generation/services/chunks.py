"""Running one chunk of a job, of any kind (generation/services/kinds.py), and the generation kind's own steps.

The runner (`chunk_run`) is the same for every kind: it claims the chunk's lease (generation/services/leases.py), so
that it runs in one place at a time, keeps it with a heartbeat, hands the chunk to its kind's handler with a `stop`
that turns True once the job is cancelled or the lease lost (checked between batches), and marks the chunk finished.
A transient error (the database connection dropped, the broker out of reach) is retried here with a bounded backoff,
the chunk going on from its last written step; any other error fails the job, which `resume_jobs` can resume
(docs/domain.md, 'Crash recovery').

The generation kind (`GenerationKind`): probability scoring, then sampling per setting, each step written as it
finishes. Safe to run twice: a step whose rows all exist is skipped; a step with some rows is redone with the same
seed (so it reproduces the same text) and inserted with `ignore_conflicts`, the database's unique constraints keeping
one row per (job, instance) and per (job, instance, setting, sample index). A worker killed mid-chunk therefore loses
only the step it was in. A chunk is one batch (its size is at most the batch size), so a cancel stops it between
batches; with an engine that is `stoppable` (hf) a sampling call in progress also asks `stop` about once a second and
ends there, writing nothing; and `job_rows_write` writes no step once the job is cancelled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings as django_settings
from django.db import InterfaceError, OperationalError
from django.db.models import Count
from kombu.exceptions import OperationalError as BrokerError

from generation.contexts import ALL_SETTINGS, SETTINGS, build_context
from generation.datasets.registry import dataset_kind
from generation.engines import engine_sample
from generation.engines.hf.loading import LoadedModel, model_load
from generation.engines.hf.sampling import Decoding, Interrupted
from generation.engines.hf.scoring import ScoreItem, score_instances
from generation.heuristic import heuristic_verdicts
from generation.models import Generation, GenerationJob, Instance, JobChunk, ProbResult
from generation.parameters import JobParameters
from generation.pronouns import Codebook
from generation.seeds import seed_derive
from generation.selectors import dataset_codebook
from generation.services.kinds import JobKind, job_kind_handler
from generation.services.leases import (
    Heartbeat,
    chunk_claim,
    chunk_finish,
    chunk_release,
    connections_reset,
    lease_owner_new,
)
from generation.services.progress import ACTIVE, job_fail, job_progress_refresh, job_rows_write, job_start
from generation.services.tango import tango_instances_done, tango_templates_fill
from generation.signals import chunk_finished

logger = logging.getLogger(__name__)

# Errors that say nothing about the chunk itself: the same chunk is tried again after a pause.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, BrokerError, ConnectionError)

Progress = Callable[[GenerationJob], None]


def transient_delays() -> list[float]:
    """The pauses before each retry after a transient error: 1, 2, 4, 8, 16 s by default (bounded)."""
    retries = django_settings.CONCORD_TRANSIENT_RETRIES
    first = django_settings.CONCORD_TRANSIENT_BACKOFF_SECONDS
    return [min(first * 2**attempt, 60.0) for attempt in range(retries)]


def chunk_seed(*, job_seed: int, chunk_index: int, setting: str) -> int:
    """The seed of one chunk's sampling for one setting: a re-run chunk draws the same numbers."""
    # ALL_SETTINGS starts with SETTINGS, so pre/post seeds are unchanged; open (TANGO) jobs have no other setting.
    return seed_derive(seed=job_seed, offset=chunk_index * len(SETTINGS) + ALL_SETTINGS.index(setting))


def _still_active(job: GenerationJob) -> bool:
    return GenerationJob.objects.filter(pk=job.pk, status__in=ACTIVE).exists()


def _score(job: GenerationJob, loaded: LoadedModel, instances: list[Instance], codebook: Codebook) -> None:
    if job.dataset is None or dataset_kind(job.dataset.kind).scores_per_generation:
        return  # no mask: Prob-TANGO scores each generation once it is written (tango_templates_fill)
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
            prob_score=job.prob_score,
        )
        for instance in todo
    ]
    results = score_instances(loaded=loaded, items=items)
    rows = [
        ProbResult(
            job=job, instance=instance, losses=result.losses, prediction=result.prediction, correct=result.correct
        )
        for instance, result in zip(todo, results, strict=True)
    ]
    job_rows_write(job_id=job.pk, write=lambda: ProbResult.objects.bulk_create(rows, ignore_conflicts=True))


def _sample(
    job: GenerationJob,
    chunk: JobChunk,
    loaded: LoadedModel,
    instances: list[Instance],
    setting: str,
    codebook: Codebook,
    stop: Callable[[], bool],
) -> bool:
    """Sample and write one setting of the chunk; False, with nothing written, when `stop` interrupted the call."""
    existing = Generation.objects.filter(job=job, instance__in=instances, setting=setting).count()
    if existing == len(instances) * job.samples:
        return True
    contexts = [
        build_context(instance.text, instance.template.mask, instance.correct_form, setting) for instance in instances
    ]
    decoding = Decoding(
        samples=job.samples,
        max_new_tokens=job.max_new_tokens,
        top_k=job.top_k,
        top_p=job.top_p,
        num_beams=job.num_beams,
    )
    # The whole chunk is sampled again even when some rows exist: the same batch and seed reproduce the same text.
    seed = chunk_seed(job_seed=job.seed, chunk_index=chunk.index, setting=setting)
    try:
        continuations = engine_sample(
            engine=(job.options or {}).get("engine"),  # the job's, else this worker's (generation/engines/)
            language_model=job.model,
            loaded=loaded,
            contexts=contexts,
            decoding=decoding,
            seed=seed,
            stop=stop,
        )
    except Interrupted:
        return False  # a cancel (or a lost lease) inside the call: the step is redone, or never, from its seed
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
    return True


def chunk_run(*, chunk_id: int, progress: Progress | None = None) -> GenerationJob:
    """Run one chunk under its lease; skipped when its job is no longer queued or running, when it is finished, or
    when another live runner holds it. Transient errors are retried (`transient_delays`); a failure is recorded on
    the job and re-raised. `progress` is called with the job after each written step."""
    owner = lease_owner_new()
    delays = transient_delays()
    for attempt in range(len(delays) + 1):
        try:
            return _chunk_run_once(chunk_id=chunk_id, owner=owner, progress=progress)
        except TRANSIENT_ERRORS as exc:
            connections_reset()
            if attempt == len(delays):
                _give_up(chunk_id=chunk_id, owner=owner, error=exc)
                raise
            logger.warning(
                "chunk %s: transient error (%s: %s); retry %d of %d in %.0f s",
                chunk_id, type(exc).__name__, exc, attempt + 1, len(delays), delays[attempt],
            )  # fmt: skip
            _note_transient(chunk_id=chunk_id, error=exc)
            time.sleep(delays[attempt])
    raise AssertionError("unreachable")


def _chunk_run_once(*, chunk_id: int, owner: str, progress: Progress | None) -> GenerationJob:
    chunk = JobChunk.objects.select_related("job__model", "job__dataset").get(pk=chunk_id)
    job = chunk.job
    if job.status not in ACTIVE or chunk.finished_at is not None:
        return job
    if not chunk_claim(chunk_id=chunk.pk, owner=owner):
        logger.info("chunk %s is finished or held by another live runner; skipped", chunk.pk)
        return job
    job_start(job_id=job.pk)
    handler = job_kind_handler(job.kind)
    try:
        with Heartbeat(chunk_id=chunk.pk, owner=owner) as heartbeat:

            def stop() -> bool:
                return heartbeat.lost.is_set() or not _still_active(job)

            finished = handler.run_chunk(
                job=job, chunk=chunk, stop=stop, step_done=lambda: _step_done(job_id=job.pk, progress=progress)
            )
            if not finished:
                chunk_release(chunk_id=chunk.pk, owner=owner)
                return job_progress_refresh(job_id=job.pk)
    except TRANSIENT_ERRORS:
        raise  # retried by chunk_run, which keeps the lease (same owner)
    except Exception as exc:
        chunk_release(chunk_id=chunk.pk, owner=owner)
        job_fail(job_id=job.pk, error=exc)
        raise
    chunk_finish(chunk_id=chunk.pk)
    try:
        handler.chunk_finished(job=job, unit_ids=list(chunk.instance_ids))
    except Exception:
        logger.exception("chunk %s: the %s kind's chunk_finished failed", chunk.pk, job.kind)
    return job_progress_refresh(job_id=job.pk)  # `progress` heard of the last step already


def _step_done(*, job_id: int, progress: Progress | None) -> None:
    _report(job_id=job_id, progress=progress)


def _report(*, job_id: int, progress: Progress | None) -> GenerationJob:
    job = job_progress_refresh(job_id=job_id)
    if progress is not None:
        progress(job)
    return job


def _note_transient(*, chunk_id: int, error: BaseException) -> None:
    try:
        JobChunk.objects.filter(pk=chunk_id).update(last_error=f"{type(error).__name__}: {error}"[:2000])
    except TRANSIENT_ERRORS:
        connections_reset()


def _give_up(*, chunk_id: int, owner: str, error: BaseException) -> None:
    """The retries are spent: fail the job (resumable). If the database is still away, the lease expires and the
    chunk is taken over or resumed later."""
    logger.error("chunk %s: giving up after %d retries: %s", chunk_id, len(transient_delays()), error)
    try:
        job_id = JobChunk.objects.values_list("job_id", flat=True).get(pk=chunk_id)
        chunk_release(chunk_id=chunk_id, owner=owner)
        job_fail(job_id=job_id, error=error)
    except TRANSIENT_ERRORS:
        connections_reset()


class GenerationKind(JobKind[JobParameters]):
    """The generation kind: a job's units are instances of its dataset; each gives settings x samples generations
    and, on the masked datasets, one probability result (TANGO: one Prob-TANGO template per generation)."""

    def units(self, *, params: JobParameters) -> list[int]:
        assert params.dataset is not None  # the parameters say a generation job needs one
        rows = Instance.objects.filter(dataset=params.dataset, pronoun__in=params.pronouns).order_by("ordinal")
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

    def items_per_unit(self, *, params: JobParameters) -> int:
        return len(params.settings) * params.samples

    def run_chunk(
        self, *, job: GenerationJob, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]
    ) -> bool:
        loaded = model_load(language_model=job.model)
        assert job.dataset is not None
        codebook = dataset_codebook(dataset=job.dataset)
        by_id = Instance.objects.select_related("template").in_bulk(chunk.instance_ids)
        instances = [by_id[instance_id] for instance_id in chunk.instance_ids]
        if stop():
            return False
        _score(job, loaded, instances, codebook)
        step_done()
        for setting in job.settings:
            if stop():
                return False
            if not _sample(job, chunk, loaded, instances, setting, codebook, stop):
                return False
            step_done()
        if stop():
            return False
        tango_templates_fill(job=job, loaded=loaded, instance_ids=chunk.instance_ids)  # TANGO only
        return True

    def counts(self, *, job: GenerationJob) -> tuple[int, int]:
        per_instance = len(job.settings) * job.samples
        generations = Generation.objects.filter(job=job)
        complete = generations.values("instance").annotate(n=Count("id")).filter(n=per_instance).values("instance")
        assert job.dataset is not None
        if dataset_kind(job.dataset.kind).scores_per_generation:  # Prob-TANGO is per generation
            done_instances = tango_instances_done(job=job, complete=complete)
        else:
            done_instances = ProbResult.objects.filter(job=job, instance__in=complete).count()
        return done_instances, generations.count()

    def describe(self, *, job: GenerationJob) -> str:
        return f"{job.model.name} on {job.dataset.name if job.dataset else '(no dataset)'}"

    def chunk_finished(self, *, job: GenerationJob, unit_ids: list[int]) -> None:
        for receiver, response in chunk_finished.send_robust(
            sender=GenerationJob, job_id=job.pk, instance_ids=unit_ids
        ):
            if isinstance(response, Exception):
                logger.error("job %s: chunk_finished receiver %r failed: %r", job.pk, receiver, response)
