"""Annotation-specific test data: finished jobs with full grids of generations, pools with assignments."""

from __future__ import annotations

from accounts.roles import ANNOTATOR
from accounts.services import user_create_or_update
from annotation.models import Assignment
from generation.models import Generation
from tests.conftest import PASSWORD
from tests.factories import (
    DatasetFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    TemplateFactory,
)


def job_with_generations(
    *,
    model: str = "test-model",
    instances_per_pronoun: int = 6,
    samples: int = 5,
    pronouns: tuple[str, ...] = ("he", "xe"),
    settings: tuple[str, ...] = ("pre", "post"),
    status: str = "done",
):
    """A finished job over its own instances: every instance x setting x sample index has a generation."""
    dataset = DatasetFactory()
    job = GenerationJobFactory(
        model=LanguageModelFactory(name=model),
        dataset=dataset,
        pronouns=list(pronouns),
        settings=list(settings),
        samples=samples,
        status=status,
    )
    generations = []  # built here, written with one INSERT (as a job's chunk writes its rows)
    for pronoun in pronouns:
        for n in range(instances_per_pronoun):
            instance = InstanceFactory(template=TemplateFactory(dataset=dataset), pronoun=pronoun, name=f"P{n}")
            for setting in settings:
                for index in range(samples):
                    generations.append(
                        GenerationFactory.build(
                            job=job,
                            instance=instance,
                            setting=setting,
                            sample_index=index,
                            continuation=f" {pronoun} went home, sample {index}.",
                        )
                    )
    Generation.objects.bulk_create(generations)
    return job


def annotator_named(username: str):
    user, _ = user_create_or_update(username=username, role=ANNOTATOR, password=PASSWORD)
    return user


def pool_for(*annotators, items: int = 3, pool=None, continuation: str = "The man said xe was late."):
    """A pool whose items are all assigned, in order, to each given annotator."""
    pool = pool or PoolFactory()
    made = [PoolItemFactory(pool=pool, continuation=continuation) for _ in range(items)]
    for annotator in annotators:
        for position, item in enumerate(made):
            Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=position)
    return pool, made
