"""A small hand-built study for the report tests; every expected number is worked out in the tests themselves.

Human side (pool "study", model m1, MISGENDERED, pre-[MASK]); `first`/`second` is who annotated first:

    item  cell  heuristic  first                  second                 adjudication
    1     xe    correct    ana correct            bo  correct
    2     xe    correct    ana misgendering, ext  bo  correct            misgendering (extraneous not set)
    3     xe    wrong      ana misgendering       bo  misgendering, ext
    4     xe    correct    ana no_pronoun         -
    5     he    wrong      bo  no_pronoun         ana correct
    6     he    correct    ana correct, ext       -
    7     he    correct    -                      -

Automatic side (one job of m1 on MISGENDERED, pre-[MASK], 5 samples): see XE_INSTANCES and HE_INSTANCES.
"""

from __future__ import annotations

from annotation.models import Adjudication
from generation.models import Generation, ProbResult
from tests.factories import (
    AnnotationFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    ProbResultFactory,
)

# (m_prob, the five samples' heuristic verdicts)
XE_INSTANCES = [
    (1, [1, 1, 1, 1, 1]),
    (1, [0, 1, 1, 1, 1]),
    (0, [0, 0, 1, 1, 0]),
    (0, [1, 0, 0, 0, 0]),
    (1, [1, 1, 0, 0, 0]),
    (1, [1, 1, 1, 1, 1]),
]
HE_INSTANCES = [
    (1, [1, 1, 1, 1, 1]),
    (1, [0, 0, 0, 0, 0]),
]
# Continuations cycle through these so that the repetition rates differ.
CONTINUATIONS = [
    " Xe went home. Xe went home.",
    " a b a b a b",
    " They sold bread at the market and smiled.",
    " ok",
]


def study_build(*, ana, bo, name: str = "study"):
    pool = PoolFactory(name=name)
    cells = ["xe"] * 4 + ["he"] * 3
    heuristic = [True, True, False, True, False, True, True]
    items = [
        PoolItemFactory(pool=pool, model_name="m1", pronoun=pronoun, heuristic_correct=correct)
        for pronoun, correct in zip(cells, heuristic, strict=True)
    ]
    AnnotationFactory(item=items[0], annotator=ana, label="correct")
    AnnotationFactory(item=items[0], annotator=bo, label="correct")
    AnnotationFactory(item=items[1], annotator=ana, label="misgendering", extraneous=True)
    AnnotationFactory(item=items[1], annotator=bo, label="correct")
    AnnotationFactory(item=items[2], annotator=ana, label="misgendering")
    AnnotationFactory(item=items[2], annotator=bo, label="misgendering", extraneous=True)
    AnnotationFactory(item=items[3], annotator=ana, label="no_pronoun")
    AnnotationFactory(item=items[4], annotator=bo, label="no_pronoun")
    AnnotationFactory(item=items[4], annotator=ana, label="correct")
    AnnotationFactory(item=items[5], annotator=ana, label="correct", extraneous=True)
    Adjudication.objects.create(item=items[1], label="misgendering", extraneous=None)

    job = GenerationJobFactory(model=LanguageModelFactory(name="m1"), settings=["pre"])
    pool.jobs.add(job)
    # The automatic side's rows are built, then written in one statement per table (ids in the same order).
    prob_results, generations = [], []
    for pronoun, instances in (("xe", XE_INSTANCES), ("he", HE_INSTANCES)):
        for m_prob, samples in instances:
            instance = InstanceFactory(pronoun=pronoun)
            prediction = pronoun if m_prob else "she"
            prob_results.append(
                ProbResultFactory.build(job=job, instance=instance, correct=bool(m_prob), prediction=prediction)
            )
            for index, verdict in enumerate(samples):
                generations.append(
                    GenerationFactory.build(
                        job=job,
                        instance=instance,
                        setting="pre",
                        sample_index=index,
                        continuation=CONTINUATIONS[len(generations) % len(CONTINUATIONS)],
                        heuristic_correct=bool(verdict),
                    )
                )
    ProbResult.objects.bulk_create(prob_results)
    Generation.objects.bulk_create(generations)
    return pool
