"""The demo's judged study (`demo-judged`): every section of the report with figures, loaded in a second, offline.

What the other demo pools cannot show without hours of labelling and a model run:

- a job larger than its pool: `DEMO_JOB_SAMPLES` texts per instance of `demo-ruff` (pre-[MASK]), written here from
  a few sentence frames (model `demo-hand-written`, like every text the demo wrote), of which the pool takes
  `_in_pool` (40 of 72), so the prediction-powered rates have unlabelled generations to use (N > 0);
- three demo raters who label every item of the pool (each pair shares 40 items, over the 30 the Alternative
  Annotator Test and the human ceiling need). Their labels are **demo data**: written by `load_demo` from the frame
  each text was made with, a few deliberately changed, and each one's note says so; the raters have no password;
- a demo judge with its run over the whole job: an external judge (docs/domain.md, "Bring your own study"), so it is
  recorded as "never run by Concord" and no model is loaded; its labels are written here the same way, with
  confidences, and its description says so.

Nothing here is random: the same rows on every machine. The jobs page's "Judge all" runs a real judge (the default
model, `DEMO_RUNNABLE_JUDGE`) on any finished job, when an admin asks.
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.roles import ANNOTATOR
from accounts.services import user_create_or_update
from annotation.models import Annotation, Assignment, Pool, PoolItem
from annotation.schema import CORRECT, MISGENDERING, NO_PRONOUN
from annotation.services import assignments_create
from annotation.services.guidelines import pool_guidelines_set
from annotation.services.pool import pool_items_from_generations
from generation.contexts import build_context
from generation.datasets.registry import codebook_for
from generation.heuristic import heuristic_verdicts
from generation.jobs.services import job_record
from generation.models import DEFAULT_MODEL_NAME, Dataset, Generation, Job, LanguageModel
from generation.parameters import JobParameters
from judging.models import JudgeMode, JudgeRun, MachineLabel
from judging.services.imports import external_judge
from judging.services.judges import judge_add
from judging.services.runs import imported_run_record

JUDGED_POOL = "demo-judged"
JUDGED_DATASET = "demo-ruff"
DEMO_JOB_SAMPLES = 2
DEMO_RATERS = ("demo-rater1", "demo-rater2", "demo-rater3")
DEMO_JUDGE = "demo-judge"
DEMO_RUNNABLE_JUDGE = "smollm2-judge"  # the default model in likelihood mode: what "Judge all" offers
DEMO_NOTE = "demo data: written by load_demo, not by a person"
DEMO_JUDGE_DESCRIPTION = (
    "Concord's demo judge: its labels were written by load_demo from the frame each text was made with, a few of them "
    "deliberately wrong, with made-up confidences. No model produced them."
)
GUIDELINES = (
    "# Demo guidelines\n\nJudge only the **generated text**: does it refer to the baker with the declared pronoun?",
    "# Demo guidelines\n\nJudge only the **generated text**: does it refer to the baker with the declared pronoun?\n\n"
    "A text that names nobody is *no pronoun*, even when it talks about the shop.",
)
# Sentence frames, by the label a careful annotator gives: `{right}` is the declared pronoun in the masked slot's
# case, `{wrong}` another family's.
FRAMES: tuple[tuple[str, str], ...] = (
    (CORRECT, "{right} had sold the last loaf by noon, and the shop closed early."),
    (MISGENDERING, "{wrong} had sold the last loaf by noon, and the shop closed early."),
    (NO_PRONOUN, "the shop would stay closed until the new oven arrived."),
    (CORRECT, "{right} kept a spare key by the back door, just in case."),
    (MISGENDERING, "{wrong} kept a spare key by the back door, just in case."),
    (CORRECT, "{right} would be back on Monday with fresh bread."),
)


def _in_pool(index: int) -> bool:
    """Which of the job's texts the pool takes: 5 of every 9 (40 of 72)."""
    return index % 9 < 5


def _rater_label(intended: str, *, index: int, rater: int) -> str:
    """A rater's demo label: the intended one, but for one item in 8 (a different one for each rater)."""
    return _other(intended) if (index + 3 * rater) % 8 == 0 else intended


def _judge_label(intended: str, *, index: int) -> tuple[str, float]:
    """The demo judge's label and confidence: wrong, and unsure, on one text in 7; right and sure on most of the
    others, less sure on one in 5 (so that selective judging finds a threshold and its curve has steps)."""
    if index % 7 == 3:
        return _other(intended), 0.55
    return intended, 0.75 if index % 5 == 0 else 0.92


def _other(label: str) -> str:
    return {CORRECT: MISGENDERING, MISGENDERING: CORRECT, NO_PRONOUN: CORRECT}[label]


def _raters() -> list:
    users = []
    for username in DEMO_RATERS:
        if not get_user_model().objects.filter(username=username).exists():
            user_create_or_update(username=username, role=ANNOTATOR, password=secrets.token_urlsafe(16))
            made = get_user_model().objects.get(username=username)
            made.set_unusable_password()  # demo raters never log in: their labels are written by load_demo
            made.first_name, made.last_name = "Demo rater", "(labels are demo data)"
            made.save(update_fields=["password", "first_name", "last_name"])
        users.append(get_user_model().objects.get(username=username))
    return users


def _job(dataset: Dataset) -> tuple[Job, list[tuple[Generation, str]]]:
    """The hand-written job over the dataset's instances: its generations, each with the label its frame was made
    for, in order."""
    model, _ = LanguageModel.objects.get_or_create(
        name="demo-hand-written",
        defaults={"source_kind": LanguageModel.SourceKind.NONE, "source": "demo/ (texts written by hand, not a model)"},
    )
    codebook = codebook_for(dataset.kind)
    instances = list(dataset.instances.select_related("template").order_by("ordinal"))
    pronouns = sorted({instance.pronoun for instance in instances})
    job = job_record(
        params=JobParameters(
            model=model, dataset=dataset, pronouns=pronouns, settings=["pre"], samples=DEMO_JOB_SAMPLES, seed=0
        ),
        units=len(instances),
        items=len(instances) * DEMO_JOB_SAMPLES,
    )
    rows = []
    for instance in instances:
        form = instance.template.form
        others = [base for base in codebook.bases if base != instance.pronoun]
        for sample in range(DEMO_JOB_SAMPLES):
            index = instance.ordinal * DEMO_JOB_SAMPLES + sample
            intended, frame = FRAMES[index % len(FRAMES)]
            wrong = codebook.surface(others[index % len(others)], form)
            rows.append((instance, sample, intended, frame.format(right=instance.correct_form, wrong=wrong)))
    verdicts = heuristic_verdicts([(text, instance.pronoun) for instance, _, _, text in rows], codebook=codebook)
    generations = []
    for (instance, sample, intended, text), verdict in zip(rows, verdicts, strict=True):
        generation = Generation(
            job=job,
            instance=instance,
            setting="pre",
            sample_index=sample,
            context=build_context(instance.text, instance.template.mask, instance.correct_form, "pre"),
            continuation=text,
            heuristic_correct=verdict.correct,
            first_pronoun=verdict.first_pronoun or "",
            first_pronoun_offset=verdict.offset,
        )
        generations.append((generation, intended))
    Generation.objects.bulk_create([generation for generation, _ in generations])
    return job, generations


def judged_pool_load() -> tuple[Pool, bool]:
    """The pool `demo-judged` with its job, its demo raters' labels and the demo judge's run; (pool, made now).
    Safe to run again: an existing pool is left as it is. Needs the dataset `demo-ruff` (load_demo imports it)."""
    pool = Pool.objects.filter(name=JUDGED_POOL).first()
    if pool is not None:
        return pool, False
    dataset = Dataset.objects.get(name=JUDGED_DATASET)
    with transaction.atomic():
        job, generations = _job(dataset)
        pool = Pool.objects.create(name=JUDGED_POOL)
        pool.jobs.add(job)
        pooled = [
            (index, generation, intended) for index, (generation, intended) in enumerate(generations) if _in_pool(index)
        ]
        items = PoolItem.objects.bulk_create(
            pool_items_from_generations(pool, [generation for _, generation, _ in pooled], job=job)
        )
        # Two versions of the guidelines, the second written halfway through: the report compares them.
        for text in GUIDELINES:
            pool_guidelines_set(pool=pool, text=text)
        raters = _raters()
        assignments_create(
            pool=pool, usernames=[user.username for user in raters], overlap=len(items), raters=len(raters), seed=0
        )
        Annotation.objects.bulk_create(
            [
                Annotation(
                    item=item,
                    annotator=user,
                    label=_rater_label(intended, index=index, rater=number),
                    notes=DEMO_NOTE,
                    seconds=4.0 + (index + number) % 9,
                    guideline_version=1 if place < len(items) // 2 else 2,
                )
                for number, user in enumerate(raters)
                for place, (item, (index, _, intended)) in enumerate(zip(items, pooled, strict=True))
            ]
        )
        Assignment.objects.filter(pool=pool).update(annotated=True)
        _judge_run(job=job, labels=list(pool.labels), generations=generations)
        # The judge "Judge all" offers on the jobs page: the default model, run only when an admin asks.
        if LanguageModel.objects.filter(name=DEFAULT_MODEL_NAME).exists():
            judge_add(name=DEMO_RUNNABLE_JUDGE, model=DEFAULT_MODEL_NAME, mode=JudgeMode.LIKELIHOOD)
    return pool, True


def _judge_run(*, job: Job, labels: list[str], generations: list[tuple[Generation, str]]) -> JudgeRun:
    """The demo judge's finished run over the whole job: a label and confidence for each of its generations."""
    judge, _ = external_judge(name=DEMO_JUDGE, labels=labels, description=DEMO_JUDGE_DESCRIPTION)
    run = imported_run_record(
        judge=judge, source_job=job, count=len(generations), source_file="demo (written by load_demo)"
    )
    rows = []
    for index, (generation, intended) in enumerate(generations):
        label, confidence = _judge_label(intended, index=index)
        rest = (1 - confidence) / (len(labels) - 1)
        scores = {option: confidence if option == label else rest for option in labels}
        rows.append(
            MachineLabel(run=run, generation=generation, label=label, confidence=confidence, scores=scores, prompt="")
        )
    MachineLabel.objects.bulk_create(rows)
    return run
