"""Reads for the generation pages, API and exports."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Case, Count, F, IntegerField, Min, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from generation.datasets.registry import dataset_kind
from generation.jobs.kinds import job_kind_handler, job_kinds, job_kinds_unlisted
from generation.models import (
    Dataset,
    Generation,
    Instance,
    Job,
    JobChunk,
    JobStatus,
    LanguageModel,
    ProbResult,
    PronounForm,
    TangoTemplate,
)
from generation.pronouns import Codebook

# What a reader may not see of the jobs, one hook per higher app (judging: a judge run over another project's pool,
# docs/domain.md "Projects"): each returns the Q of the jobs hidden from that reader, or None.
JOBS_HIDDEN: list[Callable[[Any], Q | None]] = []


def jobs_hidden_register(hook: Callable[[Any], Q | None]) -> None:
    if hook not in JOBS_HIDDEN:
        JOBS_HIDDEN.append(hook)


def job_list(*, reader=None) -> QuerySet[Job]:
    """Every job, newest first; with `reader`, those the registered hooks do not hide from them."""
    # Each kind's own row is read with its job (`JobKind.rows_related`).
    related = [path for name in job_kinds() for path in job_kind_handler(name).rows_related]
    jobs = (
        Job.objects.exclude(kind__in=job_kinds_unlisted())  # uploads' imports: their own pages show them
        .select_related("model", "created_by", *related)
        .order_by("-created_at", "-id")
    )
    for hook in JOBS_HIDDEN if reader is not None else ():
        hidden = hook(reader)
        if hidden is not None:
            jobs = jobs.exclude(hidden)
    return jobs


def job_get(*, job_id: int, reader=None) -> Job | None:
    return job_list(reader=reader).filter(pk=job_id).first()


def dataset_codebook(*, dataset: Dataset) -> Codebook:
    """The codebook stored with the dataset when it was imported (its PronounForm rows): the spellings a job scores
    and checks against are those the dataset was imported with. Anything else the kind's codebook carries is kept."""
    table: dict[str, dict[str, str]] = {}
    # In the order they were written: a templates dataset's families keep its codebook file's order (the candidates').
    for base, form, surface in dataset.pronoun_forms.order_by("pk").values_list("base", "form", "surface"):
        table.setdefault(base, {})[form] = surface
    if not table:
        raise ValueError(f"dataset {dataset.name!r} has no stored codebook (pronoun forms); import it again")
    builtin = dataset_kind(dataset.kind).codebook
    if builtin is None:  # a templates dataset: its codebook is its own (docs/domain.md, 'Your own templates')
        return Codebook(dataset=dataset.name, table=table, clitics=True)
    return dataclasses.replace(builtin, table=table)


def dataset_rows() -> list[dict]:
    """Every dataset with its kind, instance count and families (the dataset page)."""
    counts = dict(Dataset.objects.annotate(n=Count("instances")).values_list("pk", "n"))
    families: dict[int, list[str]] = {}
    for dataset_id, base in PronounForm.objects.order_by("pk").values_list("dataset_id", "base"):
        if base not in families.setdefault(dataset_id, []):
            families[dataset_id].append(base)
    return [
        {"dataset": dataset, "instances": counts.get(dataset.pk, 0), "families": families.get(dataset.pk, [])}
        for dataset in Dataset.objects.order_by("name")
    ]


@dataclasses.dataclass(frozen=True)
class JobTiming:
    elapsed_seconds: float | None  # since the first chunk started (to the end, once it ended)
    eta_seconds: float | None  # time left; None until this run has a pace
    eta_low_seconds: float | None = None  # the range the recent pace allows
    eta_high_seconds: float | None = None


RECENT_CHUNKS = 8  # the pace is that of the last few chunks, so it follows a change of load but not one chunk's luck
ETA_FLOOR_SECONDS = 1.0


def model_seconds_per_row(
    *, model: LanguageModel, kind: str = "generation", exclude_job_id: int | None = None
) -> float | None:
    """The recent throughput of the runners on a model's jobs of one kind, as seconds per result row (a
    continuation): the last RECENT_CHUNKS finished chunks of its other jobs, their run time over their rows (model
    loading included, so it errs long). None when no such chunk has finished yet."""
    recent = JobChunk.objects.filter(
        job__model=model, job__kind=kind, finished_at__isnull=False, started_at__isnull=False, job__total_units__gt=0
    )
    if exclude_job_id is not None:
        recent = recent.exclude(job_id=exclude_job_id)
    chunks = (
        recent.order_by("-finished_at").values_list(
            "started_at", "finished_at", "unit_ids", "job__total_items", "job__total_units"
        )
    )[:RECENT_CHUNKS]
    seconds = rows = 0.0
    for started, finished, ids, items, units in chunks:
        assert started is not None and finished is not None  # filtered above
        seconds += max((finished - started).total_seconds(), 0.0)
        rows += len(ids) * items / units
    return seconds / rows if rows and seconds else None


ETA_MEMO_SECONDS = 24 * 3600


def _counting_down(*, job: Job, timing: JobTiming, now: datetime) -> JobTiming:
    """The estimate as a reader follows it: never above the last one given for this run less the time since
    (docs/domain.md, 'Jobs'). Each reading takes a new pace (a chunk that carried the model's loading, other jobs
    taking turns on the runner, this run's own pace replacing the model's pace on earlier jobs): alone, a new pace
    raised the time left between chunks. A faster pace shows at once; a slower one only once the counted-down
    estimate has run out with work left, when the estimate starts again from the current pace. The range moves with
    the estimate. Kept in Django's cache per job and run (shared by the web processes)."""
    if timing.eta_seconds is None or job.run_started_at is None:
        return timing
    key = f"concord:job-eta:{job.pk}:{job.run_started_at.timestamp():.6f}"
    eta = timing.eta_seconds
    last = cache.get(key)
    if last is not None:
        counted = last[0] - (now.timestamp() - last[1])
        if eta > counted > ETA_FLOOR_SECONDS:
            eta = counted
    cache.set(key, (eta, now.timestamp()), timeout=ETA_MEMO_SECONDS)
    if eta == timing.eta_seconds:
        return timing
    scale = eta / timing.eta_seconds
    return dataclasses.replace(
        timing,
        eta_seconds=eta,
        eta_low_seconds=None if timing.eta_low_seconds is None else timing.eta_low_seconds * scale,
        eta_high_seconds=None if timing.eta_high_seconds is None else timing.eta_high_seconds * scale,
    )


def job_timing(*, job: Job, now: datetime | None = None) -> JobTiming:
    """Elapsed time and the estimate of the time left, with a range (docs/domain.md, 'Jobs').

    Once chunks of this run (since its start or its last resume) have finished, the pace is their recent
    throughput (generations of the last RECENT_CHUNKS finished chunks over the time from the first one's start to
    the last one's end, which counts parallel workers); the estimate is the generations of the unfinished chunks at
    that pace, less the time since the last chunk ended, so it counts down between chunks instead of jumping. The
    range scales it by the fastest and slowest of those chunks' pace. Before any chunk of this run finished: the
    rows written so far in this run, with a wide range. Across readings it counts down (`_counting_down`)."""
    now = now or timezone.now()
    return _counting_down(job=job, timing=_job_timing_now(job=job, now=now), now=now)


def _job_timing_now(*, job: Job, now: datetime) -> JobTiming:
    """The estimate from this reading alone."""
    if job.started_at is None:
        return JobTiming(elapsed_seconds=None, eta_seconds=None)
    end = job.finished_at if job.status not in (JobStatus.QUEUED, JobStatus.RUNNING) and job.finished_at else now
    elapsed = max((end - job.started_at).total_seconds(), 0.0)
    if job.status != JobStatus.RUNNING or job.run_started_at is None:
        return JobTiming(elapsed_seconds=elapsed, eta_seconds=None)
    left = max(job.total_items - job.done_items, 0)
    if left == 0:
        return JobTiming(elapsed_seconds=elapsed, eta_seconds=0.0, eta_low_seconds=0.0, eta_high_seconds=0.0)
    per_unit = job.total_items / job.total_units if job.total_units else 0.0
    recent: list[tuple[datetime, datetime, list[int]]] = list(
        JobChunk.objects.filter(job=job, finished_at__gte=job.run_started_at, started_at__isnull=False)
        .order_by("-finished_at")
        .values_list("started_at", "finished_at", "unit_ids")[:RECENT_CHUNKS]  # type: ignore[arg-type]
    )
    if recent and per_unit:
        work = [len(ids) * per_unit for _, _, ids in recent]
        span = (recent[0][1] - min(started for started, _, _ in recent)).total_seconds()
        paces = [max((fin - st).total_seconds(), 1e-3) / w for (st, fin, _), w in zip(recent, work, strict=True) if w]
        if span > 0 and paces:
            rate = sum(work) / span
            unfinished = JobChunk.objects.filter(job=job, finished_at__isnull=True).values_list("unit_ids", flat=True)
            left_work = sum(len(ids) for ids in unfinished) * per_unit
            since_last = max((now - recent[0][1]).total_seconds(), 0.0)
            eta = max(left_work / rate - since_last, ETA_FLOOR_SECONDS)
            mean = sum(paces) / len(paces)
            low = min(max(min(paces) / mean, 0.5), 0.9) if len(paces) > 1 else 0.75
            high = max(min(max(paces) / mean, 2.0), 1.1) if len(paces) > 1 else 1.25
            return JobTiming(elapsed, eta, eta_low_seconds=eta * low, eta_high_seconds=eta * high)
    done_in_run = job.done_items - job.run_done_at_start
    run_seconds = (now - job.run_started_at).total_seconds()
    if done_in_run <= 0 or run_seconds <= 0:
        # Nothing of this run finished yet: the model's recent pace on other jobs, with a wide range; with none,
        # the estimate comes with the first finished batch.
        per_row = model_seconds_per_row(model=job.model, kind=job.kind, exclude_job_id=job.pk)
        if per_row is None:
            return JobTiming(elapsed_seconds=elapsed, eta_seconds=None)
        eta = max(left * per_row - max(run_seconds, 0.0), ETA_FLOOR_SECONDS)
        return JobTiming(elapsed, eta, eta_low_seconds=eta * 0.5, eta_high_seconds=eta * 2)
    eta = left * run_seconds / done_in_run
    return JobTiming(elapsed, eta, eta_low_seconds=eta * 0.5, eta_high_seconds=eta * 2)


def job_run_order(*, job_ids=None) -> list[int]:
    """The queued and running jobs of every kind (generation, judge, ...) in the order they run: running jobs first,
    then each queued job by when its chunks were handed to a runner (the broker's queue is first in, first out; the
    embedded runner takes its jobs in this same order, generation/jobs/runner.py), then by creation."""
    active = Job.objects.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exclude(kind__in=job_kinds_unlisted())
    if job_ids is not None:
        active = active.filter(pk__in=job_ids)
    ordered = active.annotate(
        running=Case(When(status=JobStatus.RUNNING, then=Value(0)), default=Value(1), output_field=IntegerField()),
        handed=Coalesce(Min("chunks__sent_at", filter=Q(chunks__finished_at__isnull=True)), F("created_at")),
    ).order_by("running", "handed", "created_at", "id")
    return list(ordered.values_list("id", flat=True))


def job_sizing() -> dict:
    """What the job form's script needs to show a job's size and time as it is filled in: each dataset's instances
    per pronoun (before the distractor filters), and each model's recent seconds per continuation (None before it ran
    anything). The server's "Show size and time" counts exactly (generation/jobs/services.py, job_size)."""
    # A dataset's instances never change once imported (a new import is a new dataset), and counting a distractor
    # set's millions of rows takes a while: the counts are kept per set of imported datasets.
    signature = "|".join(
        f"{pk}:{sig}" for pk, sig in Dataset.objects.order_by("pk").values_list("pk", "import_signature")
    )
    key = "job-sizing:" + hashlib.sha256(signature.encode()).hexdigest()
    instances: dict[str, dict[str, int]] | None = cache.get(key)
    if instances is None:
        instances = {}
        counted = Instance.objects.values_list("dataset__name", "pronoun").annotate(n=Count("id")).order_by()
        for dataset, pronoun, n in counted:
            instances.setdefault(dataset, {})[pronoun] = n
        cache.set(key, instances, timeout=24 * 3600)
    paces = {model.name: model_seconds_per_row(model=model) for model in model_list()}
    return {"instances": instances, "seconds_per_row": paces}


@dataclasses.dataclass(frozen=True)
class QueuePlace:
    position: int  # 1 = next to run
    after: int | None  # the job just ahead of it (queued or running), None when none is


def job_queue_place(*, job: Job) -> QueuePlace | None:
    """A queued job's place in the run order of every kind's unfinished jobs (`job_run_order`); None unless queued."""
    if job.status != JobStatus.QUEUED:
        return None
    order = job_run_order()
    if job.pk not in order:
        return None
    ahead = order[: order.index(job.pk)]
    return QueuePlace(position=len(ahead) + 1, after=ahead[-1] if ahead else None)


def ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def job_status_text(*, job: Job) -> str:
    """The status as the jobs page shows it: "queued, 2nd after job 1" for a queued job, else the status."""
    place = job_queue_place(job=job)
    if place is None:
        return str(job.status)
    if place.after is None:
        return "queued, next"
    return f"queued, {ordinal(place.position)} after job {place.after}"


def job_chunks_live(*, job: Job) -> bool:
    """Whether a runner holds one of the job's chunks now (a live lease): then a Resume has nothing to take over."""
    from generation.jobs.leases import chunk_lease_live  # the lease rule lives with the leases

    now = timezone.now()
    chunks = JobChunk.objects.filter(job=job, finished_at__isnull=True).exclude(lease_owner="")
    return any(chunk_lease_live(chunk, now=now) for chunk in chunks)


def job_resumable(*, job: Job) -> bool:
    """Whether Resume has something to do: a failed job, or a running one that no runner works on (its runner is
    gone). A queued job waits for a runner; `resume_jobs` and the embedded server's start pick it up. A cancelled
    job is never resumed (cancel is final)."""
    if job.status == JobStatus.FAILED:
        return True
    return job.status == JobStatus.RUNNING and not job_chunks_live(job=job)


def model_list() -> QuerySet[LanguageModel]:
    """The models a job can run: every registered model but those without weights (hand-written texts, an external
    judge's API model)."""
    unrunnable = [LanguageModel.SourceKind.NONE, LanguageModel.SourceKind.EXTERNAL]
    return LanguageModel.objects.exclude(source_kind__in=unrunnable).order_by("name")


def job_generations(*, job: Job, setting: str | None = None) -> QuerySet[Generation]:
    """A job's generations in dataset order, with their instances (for the results page and the export)."""
    rows = Generation.objects.filter(job=job).select_related("instance__template", "instance__dataset")
    if setting:
        rows = rows.filter(setting=setting)
    return rows.order_by("instance__ordinal", "-setting", "sample_index")  # pre before post


def job_prob_results(*, job: Job, instance_ids) -> dict[int, ProbResult]:
    return {row.instance_id: row for row in ProbResult.objects.filter(job=job, instance_id__in=instance_ids)}


def job_tango_results(*, job: Job, generation_ids) -> dict[int, TangoTemplate]:
    """Prob-TANGO per generation (TANGO jobs): the rewrite, its template, or that it failed, and the verdict."""
    return {row.generation_id: row for row in TangoTemplate.objects.filter(job=job, generation_id__in=generation_ids)}


def job_prob_summary(*, job: Job) -> dict:
    """The probability-based result: per instance (ProbResult) on the masked datasets; per generation on TANGO
    (Prob-TANGO, docs/domain.md, 'TANGO and Prob-TANGO'), where failed templates are counted apart and left out."""
    tango = job.dataset is not None and dataset_kind(job.dataset.kind).scores_per_generation
    rows = TangoTemplate.objects.filter(job=job, failed=False) if tango else ProbResult.objects.filter(job=job)
    scored = rows.count()
    correct = rows.filter(correct=True).count()
    summary = {"tango": tango, "scored": scored, "correct": correct, "accuracy": correct / scored if scored else None}
    if tango:
        templates = TangoTemplate.objects.filter(job=job).count()
        failed = templates - scored
        summary |= {"templates": templates, "failed": failed, "failed_share": failed / templates if templates else None}
    return summary


EXPORT_COLUMNS = (
    "dataset",
    "model",
    "instance_id",
    "template",
    "pronoun",
    "form",
    "correct_form",
    "setting",
    "sample_index",
    "context",
    "continuation",
    "heuristic_correct",
    "first_pronoun",
    "prob_prediction",
    "prob_correct",
    "tango_template",  # TANGO: the Prob-TANGO template of the generation (empty when it failed)
    "tango_failed",
    # RUFF with distractors (docs/domain.md, 'RUFF with distractors'): empty elsewhere.
    "distractors",
    "ruff_uid",
    "confuse_pronoun",
    "heuristic_validity",
    "prob_score",  # how prob_prediction was scored: mean (token loss) or sum (log-probability), the job's choice
)
HEURISTIC_NOT_VALID = "not valid with distractors"


def job_export_rows(*, job: Job, batch: int = 2000) -> Iterator[dict]:
    """One dict per generation with EXPORT_COLUMNS; prob columns are empty where the instance was not scored."""
    probs = {row.instance_id: row for row in ProbResult.objects.filter(job=job)}
    # TANGO's probability verdict is per generation (Prob-TANGO), not per instance.
    tangos = {row.generation_id: row for row in TangoTemplate.objects.filter(job=job)}
    for generation in job_generations(job=job).iterator(chunk_size=batch):
        instance = generation.instance
        tango = tangos.get(generation.pk)
        prob: ProbResult | TangoTemplate | None = probs.get(instance.pk)
        if tango is not None and not tango.failed:
            prob = tango  # the same prediction and correct fields
        yield {
            "dataset": job.dataset.name if job.dataset else "",
            "model": job.model.name,
            "instance_id": instance.pk,
            "template": instance.text,
            "pronoun": instance.pronoun,
            "form": instance.template.form,
            "correct_form": instance.correct_form,
            "setting": generation.setting,
            "sample_index": generation.sample_index,
            "context": generation.context,
            "continuation": generation.continuation,
            "heuristic_correct": int(generation.heuristic_correct),
            "first_pronoun": generation.first_pronoun,
            "prob_prediction": prob.prediction if prob else "",
            "prob_correct": int(bool(prob.correct)) if prob else "",
            "tango_template": (tango.template or "") if tango else "",
            "tango_failed": int(tango.failed) if tango else "",
            "distractors": "" if instance.distractors is None else instance.distractors,
            "ruff_uid": instance.ruff_uid,
            "confuse_pronoun": instance.confuse_pronoun,
            "heuristic_validity": "" if instance.distractors is None else HEURISTIC_NOT_VALID,
            "prob_score": job.generation_run.prob_score,
        }


def pair_datasets() -> dict[str, Dataset]:
    """The datasets of stereotype pairs (docs/domain.md, 'Stereotype pair benchmarks'), by name."""
    return {d.name: d for d in Dataset.objects.order_by("name") if dataset_kind(d.kind).pairs}


def job_spent(*, job: Job) -> dict:
    """What a job's requests to an endpoint cost (docs/domain.md, 'Models behind an endpoint'): the requests its chunks
    sent (a reply another run had stored costs nothing), their tokens from the endpoint's `usage`, and the cost where
    the model declares prices per million tokens (else None). A job on local weights sent none."""
    from django.db.models import Count, Sum

    from generation.models import EndpointReply, ModelEndpoint

    totals = EndpointReply.objects.filter(job=job).aggregate(
        requests=Count("id"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")
    )
    tokens_in, tokens_out = totals["tokens_in"] or 0, totals["tokens_out"] or 0
    endpoint = ModelEndpoint.objects.filter(model_id=job.model_id).first()
    cost = _cost_usd(endpoint, tokens_in=tokens_in, tokens_out=tokens_out)
    return {"requests": totals["requests"], "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost}


def _cost_usd(endpoint, *, tokens_in: int, tokens_out: int) -> float | None:
    """The cost of these tokens at the endpoint's declared prices per million tokens; None without both prices."""
    if endpoint is None or endpoint.price_in is None or endpoint.price_out is None:
        return None
    return round((tokens_in * float(endpoint.price_in) + tokens_out * float(endpoint.price_out)) / 1e6, 6)


def spend_estimate(*, model: LanguageModel, requests: int, chars_in: int, tokens_out: int) -> dict:
    """A run's requests, tokens and cost before it is sent (docs/domain.md, 'Models behind an endpoint'): prompt
    tokens counted as characters / 4 (an endpoint's tokenizer is not known here), the reply tokens at their most,
    the cost where the model declares prices (else None)."""
    from generation.models import ModelEndpoint

    tokens_in = -(-chars_in // 4)
    endpoint = ModelEndpoint.objects.filter(model=model).first() if model.is_endpoint else None
    cost = _cost_usd(endpoint, tokens_in=tokens_in, tokens_out=tokens_out)
    return {
        "requests": requests if model.is_endpoint else 0,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": cost,
        "tokens_counted_by": "characters / 4",
    }


def job_estimate(*, params) -> dict:
    """What a generation job (validated `JobParameters`) would send: a request per context, setting and sample, and
    one per candidate of each instance it scores on an endpoint with prompt log-probs."""
    from generation.contexts import build_context
    from generation.engines.base import NO_PROB_SCORE
    from generation.jobs.kinds import job_kind_handler

    units = job_kind_handler(params.kind).units(params=params)
    instances = Instance.objects.select_related("template").in_bulk(units)
    chars = requests = 0
    for instance_id in units:
        instance = instances[instance_id]
        for setting in params.settings:
            context = build_context(instance.text, instance.template.mask, instance.correct_form, setting)
            chars += len(context) * params.samples
            requests += params.samples
    tokens_out = requests * params.max_new_tokens
    if params.prob_score != NO_PROB_SCORE and params.dataset is not None:
        if not dataset_kind(params.dataset.kind).scores_per_generation:
            candidates = len(dataset_codebook(dataset=params.dataset).bases)
            scored = sum(len(instances[i].text) for i in units) * candidates
            chars += scored
            requests += len(units) * candidates
            tokens_out += len(units) * candidates
    return spend_estimate(model=params.model, requests=requests, chars_in=chars, tokens_out=tokens_out)
