"""The `pair_score` job kind (generation/jobs/kinds.py): a model scores both sentences of every pair of a stereotype
pair dataset (docs/domain.md, 'Stereotype pair benchmarks') by a method of PAIR_METHODS (a causal LM's summed
log-probability, a masked LM's PLL or PLL-word-l2r), with the chunks, leases, progress, cancel and resume of every
job. The causal method runs on the model's engine (`score_texts`: hf, vLLM through hf, an endpoint that gives prompt
log-probs, refused at job creation where it gives none); the masked-LM methods load the model's local weights as a
masked LM (generation/engines/hf/pairs.py), which no engine but that loader does.

The units are the dataset's pairs (in file order), one `PairScore` row each, unique per (pair, model, method): a
chunk run again skips what is stored, and a second job over pairs already scored by the model and method finds them
done. The kind has no table of its own; its options (`method`, and the dataset's id and name) stay in the job's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from generation.datasets.registry import dataset_kind
from generation.jobs.kinds import JobKind
from generation.jobs.progress import job_rows_write
from generation.models import Job, JobChunk, Pair, PairScore
from generation.models.pairs import CAUSAL, PAIR_METHODS
from generation.parameters import JobParameters

PAIR_SCORE_KIND = "pair_score"


class PairScoreKind(JobKind[JobParameters]):
    # It has a dataset, but not a generation run's: the pages show its description (which names the dataset).
    needs_dataset = False
    unit_label = "pairs"
    item_label = "pairs scored"

    def options_validate(self, *, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        """`method` (default causal); the job's dataset must be a dataset of pairs."""
        method = options.get("method") or CAUSAL
        errors = {}
        if method not in PAIR_METHODS:
            errors["method"] = f"unknown method {method!r}; use {', '.join(PAIR_METHODS)}"
        dataset = values.get("dataset")
        if dataset is None:
            errors["dataset"] = "a pair_score job needs a dataset of stereotype pairs"
        elif not dataset_kind(dataset.kind).pairs:
            errors["dataset"] = f"dataset {dataset.name} is a {dataset.kind} dataset, not one of stereotype pairs"
        model = values.get("model")
        if model is not None and "method" not in errors:
            problem = _engine_problem(model=model, method=method)
            if problem:
                errors["method"] = problem
        if errors or dataset is None:
            raise serializers.ValidationError(errors)
        return {"method": method, "dataset_id": dataset.pk, "dataset": dataset.name}

    def units(self, *, params: JobParameters) -> list[int]:
        return list(Pair.objects.filter(dataset=params.dataset).order_by("ordinal").values_list("pk", flat=True))

    def run_chunk(self, *, job: Job, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]) -> bool:
        method, model = job.options["method"], job.model
        done = set(
            PairScore.objects.filter(pair_id__in=chunk.unit_ids, model=model.name, method=method).values_list(
                "pair_id", flat=True
            )
        )
        pairs = [p for p in Pair.objects.filter(pk__in=chunk.unit_ids).order_by("ordinal") if p.pk not in done]
        if stop():
            return False
        if pairs:
            scores = pair_scores(job=job, pairs=[(p.stereotypical, p.anti_stereotypical) for p in pairs])
            rows = [
                PairScore(pair=pair, model=model.name, method=method, job=job, score_stereotypical=stereo,
                          score_anti_stereotypical=anti)
                for pair, (stereo, anti) in zip(pairs, scores, strict=True)
            ]  # fmt: skip
            if not job_rows_write(job_id=job.pk, write=lambda: PairScore.objects.bulk_create(rows,
                                                                                             ignore_conflicts=True)):  # fmt: skip
                return False
        step_done()
        return not stop()

    def counts(self, *, job: Job) -> tuple[int, int]:
        done = PairScore.objects.filter(
            pair__dataset_id=job.options["dataset_id"], model=job.model.name, method=job.options["method"]
        ).count()
        return done, done

    def describe(self, *, job: Job) -> str:
        return f"pair scores of {job.options.get('dataset')} by {job.model.name} ({job.options.get('method')})"


def _engine_problem(*, model: Any, method: str) -> str | None:
    """Why this model cannot score pairs by this method, or None: the causal method asks the model's engine for text
    scores; a masked-LM method needs local weights."""
    from generation.engines import EngineUnavailable, engine_check

    if method != CAUSAL:
        if model.is_endpoint:
            return f"model {model.name} is an endpoint: {method} scores with a masked LM's local weights; use causal"
        return None
    try:
        engine_check(engine=None, language_model=model, text_scores=True)
    except EngineUnavailable as exc:
        return str(exc)
    return None


def pair_scores(*, job: Job, pairs: list[tuple[str, str]]) -> list[tuple[float, float]]:
    """(stereotypical, anti-stereotypical) scores of each pair by the job's model and method."""
    model, method = job.model, job.options["method"]
    if method == CAUSAL:
        from generation.engines import engine_for

        engine = engine_for(engine=None, language_model=model)
        loaded = engine.load(language_model=model, job_id=job.pk)
        sums = engine.score_texts(language_model=model, loaded=loaded, texts=[text for pair in pairs for text in pair])
        return [(sums[2 * i], sums[2 * i + 1]) for i in range(len(pairs))]
    from generation.engines.hf.pairs import pair_scores_compute

    return pair_scores_compute(language_model=model, method=method, pairs=pairs, batch_size=job.batch_size)
