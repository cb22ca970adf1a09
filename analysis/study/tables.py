"""The tables of a study bundle, declared once (docs/domain.md, 'A study others can check'): each is a model, the
rows of it that a pool's study reads, and the file they go to. The export writes them in this order; the import
reads them in the same order, so every reference points to a row already written.

A row is the model's concrete columns by attribute name (`job_id`, not `job`), with the row's own id under `id`.
References to other tables keep the exported ids, and the import maps each to the row it wrote. References to
people never leave the database: an annotator or adjudicator becomes a pseudonym column (`annotator`,
`adjudicator`), and every other person (who created a job, a judge, a pool) is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import models
from django.db.models import Q, QuerySet

from annotation.models import Adjudication, Annotation, Assignment, Pool, PoolGuideline, PoolItem
from generation.models import Dataset, Generation, GenerationRun, Instance, Job, LanguageModel, ProbResult
from generation.models.datasets import PronounForm, Template
from generation.models.tango import TangoTemplate
from judging.models import CheckLabel, CheckRun, Judge, JudgeRun, MachineLabel

FORMAT = "concord-study"
# 2: a generation job's parameters in generation_runs.jsonl and a judge run's in its own row (version 1 kept both in
# jobs.jsonl; analysis.study.load reads it still).
FORMAT_VERSION = 3


@dataclass(frozen=True)
class Scope:
    """The rows a pool's study reads: the pool, its generation jobs and every judge run whose labels reach it (runs
    over the pool and runs over one of its jobs, `judge --job`), with the runs' own jobs."""

    pool: Pool
    job_ids: list[int]  # the pool's generation jobs and its judge runs' jobs
    dataset_ids: list[int]
    model_ids: list[int]
    judge_names: list[str]

    @classmethod
    def of(cls, pool: Pool) -> Scope:
        runs = judge_runs(pool)
        checks = CheckRun.objects.filter(pool=pool)  # the checks of judges over the pool (judging/checks.py)
        job_ids = sorted(
            {*pool.jobs.values_list("pk", flat=True), *runs.exclude(job=None).values_list("job_id", flat=True),
             *checks.values_list("job_id", flat=True)}
        )  # fmt: skip
        jobs = Job.objects.filter(pk__in=job_ids)
        judge_names = sorted(
            {*runs.values_list("judge__name", flat=True), *checks.values_list("judge__name", flat=True)}
        )
        judges = Judge.objects.filter(name__in=judge_names)
        return cls(
            pool=pool,
            job_ids=job_ids,
            dataset_ids=sorted(
                set(GenerationRun.objects.filter(job_id__in=job_ids).values_list("dataset_id", flat=True))
            ),
            model_ids=sorted({*jobs.values_list("model_id", flat=True), *judges.values_list("model_id", flat=True)}),
            judge_names=judge_names,
        )


def judge_runs(pool: Pool) -> QuerySet:
    """The judge runs whose labels the pool's report may read: over the pool, or over one of its generation jobs."""
    return JudgeRun.objects.filter(Q(pool=pool) | Q(source_job__in=pool.jobs.all()))


@dataclass(frozen=True)
class Table:
    name: str  # the file is `<name>.jsonl`
    model: type[models.Model]
    rows: Callable[[Scope], QuerySet]
    # Columns that never leave the database (besides references to people, always dropped or pseudonymised).
    drop: tuple[str, ...] = ()
    # A reference to a person that the bundle keeps, as a pseudonym column: attribute name -> column.
    people: dict[str, str] = field(default_factory=dict)
    # Free text people wrote for the team (notes): left out unless the export is told to include it.
    private: tuple[str, ...] = ()
    # Columns that may hold a path on the server: written as the file's name only.
    paths: tuple[str, ...] = ()
    # The first format version with the table's file (an older bundle's rows are read from its other files).
    since: int = 1


TABLES: list[Table] = [
    # A local model's `source` is a folder on the server (source kind `path`): the bundle keeps its name only.
    Table("language_models", LanguageModel, lambda s: LanguageModel.objects.filter(pk__in=s.model_ids)),
    Table("datasets", Dataset, lambda s: Dataset.objects.filter(pk__in=s.dataset_ids), paths=("source",)),
    Table("pronoun_forms", PronounForm, lambda s: PronounForm.objects.filter(dataset_id__in=s.dataset_ids)),
    Table("templates", Template, lambda s: Template.objects.filter(dataset_id__in=s.dataset_ids)),
    Table("instances", Instance, lambda s: Instance.objects.filter(dataset_id__in=s.dataset_ids)),
    Table("judges", Judge, lambda s: Judge.objects.filter(name__in=s.judge_names)),
    # The pool's row carries its jobs' ids too (`jobs`), and the guidelines every version of their text.
    # Its project is this site's team (docs/domain.md, "Projects"): an importing site puts the pool in one of its own.
    Table("pools", Pool, lambda s: Pool.objects.filter(pk=s.pool.pk), drop=("project",)),
    Table("guidelines", PoolGuideline, lambda s: PoolGuideline.objects.filter(pool=s.pool)),
    # The jobs (kind, model, status, progress) and what each generation job ran: its dataset, decoding and seed.
    Table("jobs", Job, lambda s: Job.objects.filter(pk__in=s.job_ids), drop=("error",)),
    Table("generation_runs", GenerationRun, lambda s: GenerationRun.objects.filter(job_id__in=s.job_ids), since=2),
    Table("generations", Generation, lambda s: Generation.objects.filter(job_id__in=s.job_ids)),
    Table("prob_results", ProbResult, lambda s: ProbResult.objects.filter(job_id__in=s.job_ids)),
    Table("tango_templates", TangoTemplate, lambda s: TangoTemplate.objects.filter(job_id__in=s.job_ids)),
    Table("pool_items", PoolItem, lambda s: PoolItem.objects.filter(pool=s.pool), paths=("source_file",)),
    Table(
        "assignments",
        Assignment,
        lambda s: Assignment.objects.filter(pool=s.pool),
        people={"annotator_id": "annotator"},
    ),
    # Spans and referents ride along on their annotation's row (`spans`, `referents`); the idempotency key is a
    # browser's retry token, nothing a reader needs.
    Table(
        "annotations",
        Annotation,
        lambda s: Annotation.objects.filter(item__pool=s.pool),
        drop=("idempotency_key",),
        people={"annotator_id": "annotator"},
        private=("notes",),
    ),
    Table(
        "adjudications",
        Adjudication,
        lambda s: Adjudication.objects.filter(item__pool=s.pool),
        people={"adjudicator_id": "adjudicator"},
        private=("notes",),
    ),
    # Runs over the pool and over one of its jobs (their labels name generations); an imported run's file by name.
    Table("judge_runs", JudgeRun, lambda s: judge_runs(s.pool), paths=("source_file",)),
    Table("machine_labels", MachineLabel, lambda s: MachineLabel.objects.filter(run__in=judge_runs(s.pool))),
    # The checks of judges over the pool and their labels (the report's judge_checks follow from them).
    Table("check_runs", CheckRun, lambda s: CheckRun.objects.filter(pool=s.pool), since=3),
    Table("check_labels", CheckLabel, lambda s: CheckLabel.objects.filter(run__pool=s.pool), since=3),
]
TABLE_OF_MODEL: dict[type[models.Model], str] = {table.model: table.name for table in TABLES}


def columns(table: Table, *, private: bool = False) -> list[models.Field]:
    """The table's exported columns: concrete, not the id, not dropped, not private (unless `private`), and no
    reference to a person that the table does not keep as a pseudonym."""
    kept = []
    for column in table.model._meta.concrete_fields:
        if column.primary_key or column.name in table.drop or (column.name in table.private and not private):
            continue
        if column.is_relation and column.related_model is _user_model() and column.attname not in table.people:
            continue
        kept.append(column)
    return kept


def references(table: Table) -> dict[str, str]:
    """The table's references to other bundle tables: attribute name -> table name."""
    found = {}
    for column in columns(table):
        if column.is_relation and column.related_model in TABLE_OF_MODEL:
            found[column.attname] = TABLE_OF_MODEL[column.related_model]  # type: ignore[index]
    return found


def _user_model():
    from django.apps import apps

    return apps.get_model(settings.AUTH_USER_MODEL)
