"""A study for the judge's verdict, built from a seed: one finished generation job (model m1, MISGENDERED, pre-[MASK],
pronouns xe and he, 2 samples per instance), a pool drawn from part of it, three annotators who label every pool item
(a fourth who labels a few), two adjudications, and a judge run over the whole job whose labels are written as its
job would write them (likelihood mode: mean log-probabilities per option).

The tests work out every expected figure from `Study`'s plain records, not from the report's code.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import Adjudication, Annotation, Pool, PoolItem
from annotation.schema import DEFAULT_LABELS
from annotation.services.stamp import pool_changed
from generation.models import Generation, Job, JobChunk
from judging.models import JudgeRun, MachineLabel
from judging.scoring import likelihood_verdict
from judging.selectors import generation_prompt
from tests.factories import (
    AnnotationFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    pool_item_unsaved,
)

PRONOUNS = ["xe", "he"]
SAMPLES = 2
JOB_INSTANCES = 20  # per pronoun
POOL_INSTANCES = 16  # per pronoun: the pool's contexts (with both samples)
ANNOTATORS = ["vera", "wim", "xan"]
FEW = "yul"  # annotates only a few items: skipped by the Alt-Test


@dataclass
class Study:
    job: Job
    pool: Pool
    run: JudgeRun
    generations: list[Generation]
    truth: dict[int, str] = field(default_factory=dict)  # generation id -> the label people lean to
    scores: dict[int, dict[str, float]] = field(default_factory=dict)  # generation id -> option scores
    confidence: dict[int, float] = field(default_factory=dict)  # generation id -> the judge's confidence
    items: dict[int, int] = field(default_factory=dict)  # pool item id -> generation id
    annotations: dict[int, dict[str, str]] = field(default_factory=dict)  # item id -> annotator -> label
    adjudicated: dict[int, str] = field(default_factory=dict)  # item id -> label


def _other(rng: random.Random, label: str) -> str:
    return rng.choice([other for other in DEFAULT_LABELS if other != label])


def build_study(*, judge, seed: int = 7, name: str = "verdict") -> Study:
    rng = random.Random(seed)
    users = {username: get_user_model().objects.create_user(username=username) for username in [*ANNOTATORS, FEW]}
    model = LanguageModelFactory(name="m1")
    job = GenerationJobFactory(model=model, pronouns=PRONOUNS, settings=["pre"], samples=SAMPLES)
    # The generations, the judge's labels, the pool's items, the annotations and the adjudications are written in one
    # bulk insert each (the factories only build them), and the pool's change stamp is bumped once at the end, as the
    # services do after a bulk write.
    generations = []
    in_pool = []
    for pronoun in PRONOUNS:
        for ordinal in range(JOB_INSTANCES):
            instance = InstanceFactory(pronoun=pronoun)
            for sample in range(SAMPLES):
                generation = GenerationFactory.build(job=job, instance=instance, sample_index=sample)
                generations.append(generation)
                if ordinal < POOL_INSTANCES:
                    in_pool.append(generation)
    Generation.objects.bulk_create(generations)
    pool = PoolFactory(name=name)
    pool.jobs.set([job])
    from judging.services.runs import judge_run_create

    run, _ = judge_run_create(job=job.pk, judge=judge.name, queue=False)
    study = Study(job=job, pool=pool, run=run, generations=generations)
    options = judge.option_map
    labels = []
    for generation in generations:
        truth = rng.choices(DEFAULT_LABELS, weights=[0.6, 0.3, 0.1])[0]
        # a few distinct scores, so that many generations share a confidence (as a coarse judge's do)
        scores = {label: rng.choice([-4.0, -3.0]) for label in options}
        scores[truth] += rng.choice([0.0, 3.0, 3.0])
        verdict = likelihood_verdict(options=options, scores=[scores[label] for label in options])
        labels.append(
            MachineLabel(
                run=run, generation=generation, label=verdict.label, confidence=verdict.confidence,
                scores=verdict.scores, prompt=generation_prompt(judge=judge, generation=generation),
            )
        )  # fmt: skip
        study.truth[generation.pk] = truth
        study.scores[generation.pk] = verdict.scores
        study.confidence[generation.pk] = verdict.confidence
    MachineLabel.objects.bulk_create(labels)
    items = PoolItem.objects.bulk_create(
        pool_item_unsaved(
            pool=pool,
            generation=generation,
            model_name=model.name,
            dataset=job.dataset.kind,
            setting="pre",
            pronoun=generation.instance.pronoun,
            sample_index=generation.sample_index,
            context=generation.context,
            continuation=generation.continuation,
        )
        for generation in in_pool
    )
    annotations, adjudications = [], []
    for number, (item, generation) in enumerate(zip(items, in_pool, strict=True)):
        study.items[item.pk] = generation.pk
        given = {}
        annotators = [*ANNOTATORS, FEW] if number < 10 else ANNOTATORS
        for username in annotators:
            truth = study.truth[generation.pk]
            label = truth if rng.random() < 0.9 else _other(rng, truth)
            annotations.append(AnnotationFactory.build(item=item, annotator=users[username], label=label))
            given[username] = label
        study.annotations[item.pk] = given
        if number in (3, 17):
            adjudications.append(Adjudication(item=item, label="no_pronoun", adjudicator=users["vera"]))
            study.adjudicated[item.pk] = "no_pronoun"
    Annotation.objects.bulk_create(annotations)
    Adjudication.objects.bulk_create(adjudications)
    pool_changed(pools=[pool])
    JobChunk.objects.filter(job_id=run.job_id).update(finished_at=timezone.now())
    Job.objects.filter(pk=run.job_id).update(status="done", finished_at=timezone.now())
    study.run = JudgeRun.objects.select_related("judge", "job", "source_job").get(pk=run.pk)
    return study
