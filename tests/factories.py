"""factory_boy factories for the shared data model. App-specific ones live beside their tests."""

from __future__ import annotations

import factory

from annotation.models import Annotation, Assignment, Pool, PoolItem
from generation.contexts import build_context
from generation.datasets.misgendered import MASK as MISGENDERED_MASK
from generation.datasets.registry import codebook_for
from generation.heuristic import heuristic_verdict
from generation.models import (
    Dataset,
    Generation,
    GenerationRun,
    Instance,
    Job,
    JobStatus,
    LanguageModel,
    ProbResult,
    Template,
)


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset
        django_get_or_create = ("name",)

    name = "misgendered"
    kind = "misgendered"
    source = "factory"
    import_signature = "factory"


class TemplateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Template

    dataset = factory.SubFactory(DatasetFactory)
    source_id = factory.Sequence(lambda n: f"t{n}")
    line = factory.Sequence(lambda n: n + 2)
    text = "{name}/'s pronouns are {nom}/{acc}/{pos_ind}. {name} baked bread. {mask_token} sold it at the market."
    mask = MISGENDERED_MASK
    form = "nom"


class InstanceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Instance

    template = factory.SubFactory(TemplateFactory)
    dataset = factory.SelfAttribute("template.dataset")
    pronoun = "xe"
    draw = 0
    name = "Robin"
    text = factory.LazyAttribute(
        lambda o: (
            f"{o.name}/'s pronouns are xe/xem/xyrs. {o.name} baked bread. {MISGENDERED_MASK} sold it at the market."
        )
    )
    correct_form = factory.LazyAttribute(lambda o: codebook_for(o.dataset.kind).surface(o.pronoun, o.template.form))
    ordinal = factory.Sequence(lambda n: n)


class LanguageModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LanguageModel
        django_get_or_create = ("name",)

    name = "test-model"
    source_kind = LanguageModel.SourceKind.HUB
    source = "example/test-model"


# The generation kind's own row's parameters, which the factory takes as the job's.
RUN_FIELDS = {field.name for field in GenerationRun._meta.concrete_fields} - {"id", "job"}


class GenerationJobFactory(factory.django.DjangoModelFactory):
    """A generation job with its `GenerationRun`: the run's parameters (dataset, pronouns, settings, samples, seed,
    ...) are given as the job's keywords."""

    class Meta:
        model = Job

    model = factory.SubFactory(LanguageModelFactory)
    dataset = factory.SubFactory(DatasetFactory)
    pronouns = factory.LazyFunction(lambda: ["he", "she", "they", "xe"])
    settings = factory.LazyFunction(lambda: ["pre", "post"])
    status = JobStatus.DONE

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        run = {name: kwargs.pop(name) for name in list(kwargs) if name in RUN_FIELDS}
        job = super()._create(model_class, *args, **kwargs)
        GenerationRun.objects.create(job=job, **run)
        return job


class ProbResultFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProbResult

    job = factory.SubFactory(GenerationJobFactory)
    instance = factory.SubFactory(InstanceFactory)
    losses = factory.LazyFunction(lambda: {"he": 3.0, "she": 3.1, "they": 3.2, "xe": 2.9})
    prediction = "xe"
    correct = factory.LazyAttribute(lambda o: o.prediction == o.instance.pronoun)


def _verdict(obj):
    return heuristic_verdict(
        continuation=obj.continuation, codebook=codebook_for(obj.instance.dataset.kind), pronoun=obj.instance.pronoun
    )


class GenerationFactory(factory.django.DjangoModelFactory):
    """A generation whose heuristic fields are computed from its continuation, as the workers do."""

    class Meta:
        model = Generation

    job = factory.SubFactory(GenerationJobFactory)
    instance = factory.SubFactory(InstanceFactory)
    setting = "pre"
    sample_index = 0
    context = factory.LazyAttribute(
        lambda o: build_context(o.instance.text, o.instance.template.mask, o.instance.correct_form, o.setting)
    )
    continuation = " Xe smiled at the crowd."

    heuristic_correct = factory.LazyAttribute(lambda o: o.verdict.correct)
    first_pronoun = factory.LazyAttribute(lambda o: o.verdict.first_pronoun or "")
    first_pronoun_offset = factory.LazyAttribute(lambda o: o.verdict.offset)

    class Params:
        verdict = factory.LazyAttribute(_verdict)  # the heuristic run once per generation, read by the three fields


class _PoolWrite(factory.django.DjangoModelFactory):
    """A row of a pool, made as the services make it: the pool's change stamp is bumped (annotation/services/stamp.py),
    so a report cached before it is built again."""

    class Meta:
        abstract = True

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        from annotation.services.stamp import pool_changed

        row = super()._create(model_class, *args, **kwargs)
        pool_changed(pools=[row.pool_id if hasattr(row, "pool_id") else row.item.pool_id])
        return row


class PoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Pool

    name = factory.Sequence(lambda n: f"pool-{n}")


class PoolItemFactory(_PoolWrite):
    class Meta:
        model = PoolItem

    pool = factory.SubFactory(PoolFactory)
    model_name = "test-model"
    dataset = "misgendered"
    setting = "pre"
    pronoun = "xe"
    sample_index = 0
    template = f"Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {MISGENDERED_MASK} sold it."
    context = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "
    continuation = "Xe smiled at the crowd."
    heuristic_correct = True
    first_pronoun = "Xe"


# PoolItemFactory's plain values (every declaration but the pool's SubFactory).
_POOL_ITEM_VALUES = {
    name: value
    for name, value in PoolItemFactory._meta.pre_declarations.as_dict().items()
    if not isinstance(value, factory.declarations.BaseDeclaration)
}


def pool_item_unsaved(*, pool, **fields) -> PoolItem:
    """The item `PoolItemFactory.build(pool=pool, **fields)` gives, without factory_boy resolving its declarations for
    each object (five times the cost): for helpers that build hundreds of items and write them with one INSERT."""
    return PoolItem(pool=pool, **{**_POOL_ITEM_VALUES, **fields})


class AssignmentFactory(_PoolWrite):
    class Meta:
        model = Assignment

    item = factory.SubFactory(PoolItemFactory)
    pool = factory.SelfAttribute("item.pool")
    annotator = None
    position = factory.Sequence(lambda n: n)


class AnnotationFactory(_PoolWrite):
    class Meta:
        model = Annotation

    item = factory.SubFactory(PoolItemFactory)
    annotator = None
    label = "correct"
    extraneous = False
