"""The cell explorer (docs/domain.md, 'Aggregates'): a cell's instances side by side, a page at a time.

For each instance of a cell of the pool's jobs: the probability result (prediction, m_prob and the loss of each of the
4 candidates), every sample with its heuristic verdict and first pronoun (and, for TANGO, the verdict of the
Prob-TANGO template made from it), and, where the pool holds that sample as a study item, its annotations,
adjudication and human label. A page is one SQL statement (the instances of the page are a LIMIT subquery inside
it), plus one to count the cell's instances.

Imported generations (docs/domain.md, 'The annotation pool': researchers can import generations produced elsewhere)
have no job: the cell's imported study items follow its job instances, one "instance" per template, so that every
cell of every pool opens, imported pools included (one more statement on the pages that show them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.db.models import Count, Exists, F, FilteredRelation, Func, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from analysis.cells import CELL
from analysis.metrics.multirater import majority
from annotation.labelset import positive_label
from annotation.models import STUDY, Pool, PoolItem
from annotation.schema import MISGENDERING, human_binary
from generation.datasets.labels import dataset_label_expression, dataset_label_q
from generation.models import Generation, Instance, Job
from generation.pronouns import BASES

PAGE_SIZE = 20


@dataclass
class ExplorerSample:
    sample_index: int
    context: str
    continuation: str
    heuristic_correct: bool | None  # None: no heuristic verdict (a free-text item without a stated pronoun)
    first_pronoun: str
    item: str | None = None  # the pool item's public id
    # TANGO only: the verdict of the Prob-TANGO template made from this generation (None: failed or not scored).
    template_correct: bool | None = None
    template_failed: bool | None = None
    annotations: list[dict] = field(default_factory=list)  # {"annotator", "label", "extraneous"} in order
    adjudicated_label: str = ""
    human_label: str | None = None
    positive: str = MISGENDERING  # the pool's positive label ("Bring your own study": a pool may name its own)

    @property
    def human_binary(self) -> int | None:
        return None if self.human_label is None else human_binary(self.human_label, self.positive)

    @property
    def disagrees(self) -> bool:
        """Human and heuristic differ (only where there are both: a free-text item without a stated pronoun has no
        heuristic verdict)."""
        return (
            self.human_binary is not None
            and self.heuristic_correct is not None
            and self.human_binary != int(self.heuristic_correct)
        )


@dataclass
class ExplorerInstance:
    job_id: int | None  # None: imported generations, grouped by their template
    instance_id: int | None
    ordinal: int
    text: str
    name: str
    correct_form: str
    prediction: str | None
    m_prob: bool | None
    losses: list[tuple[str, float | None]]  # (base, mean token loss) in codebook order
    samples: list[ExplorerSample] = field(default_factory=list)

    @property
    def imported(self) -> bool:
        return self.job_id is None

    @property
    def m_gen(self) -> float | None:
        """The share of samples the heuristic calls correct, over those it gave a verdict on."""
        verdicts = [s.heuristic_correct for s in self.samples if s.heuristic_correct is not None]
        return sum(verdicts) / len(verdicts) if verdicts else None

    @property
    def first_conflicts(self) -> bool | None:
        """m_prob differs from the first sample's m_gen (a conflict in the conflict rate)."""
        first = next((s for s in self.samples if s.sample_index == 0), None)
        if first is None or self.m_prob is None or first.heuristic_correct is None:
            return None
        return bool(self.m_prob) != first.heuristic_correct


@dataclass
class ExplorerPage:
    cell: dict
    number: int
    pages: int
    total: int
    instances: list[ExplorerInstance]

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages


def _cell_jobs(*, pool: Pool, cell: dict):
    return Job.objects.filter(
        dataset_label_q("generation_run__dataset", cell["dataset"]), pools=pool, model__name=cell["model"]
    )


def _scalar_count(queryset, column: str = "id", *, distinct: bool = False) -> Coalesce:
    """COUNT([DISTINCT] column) of a queryset as a scalar subquery (Func is no aggregate to Django: no GROUP BY)."""
    template = "%(function)s(DISTINCT %(expressions)s)" if distinct else "%(function)s(%(expressions)s)"
    counted = queryset.order_by().annotate(n=Func(F(column), function="COUNT", template=template)).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def _imported_items(*, pool: Pool, cell: dict):
    return PoolItem.objects.filter(
        pool=pool,
        kind=STUDY,
        generation__isnull=True,
        model_name=cell["model"],
        dataset=cell["dataset"],
        setting=cell["setting"],
        pronoun=cell["pronoun"],
    )


def cell_instance_page(*, pool: Pool, cell: dict, page: int = 1, page_size: int = PAGE_SIZE) -> ExplorerPage:
    """One page of a cell's instances (ordered by job, then dataset order; then the imported items, by template);
    `page` is clamped to the pages there are."""
    jobs = _cell_jobs(pool=pool, cell=cell).values("id")
    in_cell = Generation.objects.filter(instance=OuterRef("pk"), job__in=jobs, setting=cell["setting"])
    instances = Instance.objects.filter(
        Exists(in_cell), dataset_label_q("dataset", cell["dataset"]), pronoun=cell["pronoun"]
    ).order_by("ordinal", "id")
    in_jobs, imported_count = (
        Pool.objects.filter(pk=pool.pk)
        .values_list(
            _scalar_count(instances), _scalar_count(_imported_items(pool=pool, cell=cell), "template", distinct=True)
        )
        .get()
    )
    total = in_jobs + imported_count
    pages = max(1, -(-total // page_size))
    number = min(max(1, page), pages)
    start, stop = (number - 1) * page_size, number * page_size
    result = ExplorerPage(cell=dict(cell), number=number, pages=pages, total=total, instances=[])
    if start < in_jobs:
        result.instances = _job_instances(pool=pool, cell=cell, jobs=jobs, page_ids=instances.values("id")[start:stop])
    if stop > in_jobs and imported_count:
        groups = _imported_instances(pool=pool, cell=cell)
        result.instances += groups[max(0, start - in_jobs) : stop - in_jobs]
    positive = positive_label(pool) or MISGENDERING
    for instance in result.instances:
        for sample in instance.samples:
            sample.positive = positive
    return result


def _job_instances(*, pool: Pool, cell: dict, jobs, page_ids) -> list[ExplorerInstance]:
    rows = (
        Generation.objects.filter(job__in=jobs, setting=cell["setting"], instance_id__in=page_ids)
        .annotate(
            prob=FilteredRelation("instance__prob_results", condition=Q(instance__prob_results__job=F("job"))),
            item=FilteredRelation("pool_items", condition=Q(pool_items__pool=pool, pool_items__kind=STUDY)),
        )
        .order_by("job_id", "instance__ordinal", "instance_id", "sample_index", "item__annotations__created_at")
        .values_list(
            "job_id",
            "instance_id",
            "instance__ordinal",
            "instance__text",
            "instance__name",
            "instance__correct_form",
            "prob__prediction",
            "prob__correct",
            "prob__losses",
            "id",
            "sample_index",
            "context",
            "continuation",
            "heuristic_correct",
            "first_pronoun",
            "item__public_id",
            "item__annotations__annotator__username",
            "item__annotations__label",
            "item__annotations__extraneous",
            "item__adjudication__label",
            "tango_template__correct",
            "tango_template__failed",
        )
    )
    by_instance: dict[tuple[int, int], ExplorerInstance] = {}
    by_sample: dict[int, ExplorerSample] = {}
    for (
        job_id,
        instance_id,
        ordinal,
        text,
        name,
        correct_form,
        prediction,
        prob_correct,
        losses,
        generation_id,
        sample_index,
        context,
        continuation,
        heuristic_correct,
        first_pronoun,
        item,
        annotator,
        label,
        extraneous,
        adjudicated,
        template_correct,
        template_failed,
    ) in rows:
        instance = by_instance.get((job_id, instance_id))
        if instance is None:
            losses = _losses(losses)
            instance = by_instance[(job_id, instance_id)] = ExplorerInstance(
                job_id=job_id,
                instance_id=instance_id,
                ordinal=ordinal,
                text=text,
                name=name,
                correct_form=correct_form,
                prediction=prediction,
                m_prob=prob_correct,
                losses=losses,
            )
        sample = by_sample.get(generation_id)
        if sample is None:
            sample = by_sample[generation_id] = ExplorerSample(
                sample_index=sample_index,
                context=context,
                continuation=continuation,
                heuristic_correct=heuristic_correct,
                first_pronoun=first_pronoun,
                item=item,
                adjudicated_label=adjudicated or "",
                template_correct=template_correct,
                template_failed=template_failed,
            )
            instance.samples.append(sample)
        if label is not None:
            sample.annotations.append({"annotator": annotator, "label": label, "extraneous": extraneous})
    _human_labels(by_sample.values())
    return list(by_instance.values())


def _imported_instances(*, pool: Pool, cell: dict) -> list[ExplorerInstance]:
    """The cell's imported study items, one instance per template (in template order), samples in index order."""
    rows = (
        _imported_items(pool=pool, cell=cell)
        .order_by("template", "sample_index", "id", "annotations__created_at")
        .values_list(
            "id",
            "template",
            "sample_index",
            "context",
            "continuation",
            "heuristic_correct",
            "first_pronoun",
            "public_id",
            "annotations__annotator__username",
            "annotations__label",
            "annotations__extraneous",
            "adjudication__label",
        )
    )
    by_template: dict[str, ExplorerInstance] = {}
    by_item: dict[int, ExplorerSample] = {}
    for (
        item_id,
        template,
        index,
        context,
        continuation,
        correct,
        first,
        public_id,
        annotator,
        label,
        extra,
        adj,
    ) in rows:
        instance = by_template.get(template)
        if instance is None:
            instance = by_template[template] = ExplorerInstance(
                job_id=None,
                instance_id=None,
                ordinal=len(by_template),
                text=template,
                name="",
                correct_form="",
                prediction=None,
                m_prob=None,
                losses=[],
            )
        sample = by_item.get(item_id)
        if sample is None:
            sample = by_item[item_id] = ExplorerSample(
                sample_index=index if index is not None else len(instance.samples),
                context=context,
                continuation=continuation,
                heuristic_correct=correct,
                first_pronoun=first,
                item=public_id,
                adjudicated_label=adj or "",
            )
            instance.samples.append(sample)
        if label is not None:
            sample.annotations.append({"annotator": annotator, "label": label, "extraneous": extra})
    _human_labels(by_item.values())
    return list(by_template.values())


def _human_labels(samples) -> None:
    for sample in samples:
        # The report's rule (docs/domain.md, 'The human label of an item'): the adjudicated label, else the majority.
        voted = majority([a["label"] for a in sample.annotations])
        sample.human_label = sample.adjudicated_label or (None if voted is None else str(voted))


def _losses(losses) -> list[tuple[str, float | None]]:
    if not losses:
        return []
    if isinstance(losses, str):  # a JSON column read through a FilteredRelation on some backends
        losses = json.loads(losses)
    order = [base for base in BASES if base in losses] + sorted(set(losses) - set(BASES))
    return [(base, losses[base]) for base in order]


def pool_cells(*, pool: Pool, **filters: str) -> list[dict]:
    """The cells of a pool (a model view when `model` is given): each with its instances (in the pool's jobs, plus one
    per template of its imported items) and its annotated study items, filtered by any of the cell fields."""
    unknown = set(filters) - set(CELL)
    if unknown:
        raise ValueError(f"Unknown cell fields: {', '.join(sorted(unknown))}")
    automatic = (
        Generation.objects.filter(job__pools=pool)
        .values(
            "setting",
            model=F("job__model__name"),
            dataset=dataset_label_expression("job__generation_run__dataset"),
            pronoun=F("instance__pronoun"),
        )
        .annotate(instances=Count("instance", distinct=True))
        .order_by()
    )
    human = (
        PoolItem.objects.filter(pool=pool, kind=STUDY)
        .values("dataset", "setting", "pronoun", model=F("model_name"))
        .annotate(
            items=Count("id", distinct=True),
            annotated=Count("id", filter=Q(annotations__isnull=False), distinct=True),
            imported=Count("template", filter=Q(generation__isnull=True), distinct=True),
        )
        .order_by()
    )
    cells: dict[tuple, dict] = {}
    for row in automatic:
        key = tuple(row[c] for c in CELL)
        cells.setdefault(key, {**dict(zip(CELL, key, strict=True)), "instances": 0, "items": 0, "annotated": 0})
        cells[key]["instances"] = row["instances"]
    for row in human:
        key = tuple(row[c] for c in CELL)
        cells.setdefault(key, {**dict(zip(CELL, key, strict=True)), "instances": 0, "items": 0, "annotated": 0})
        cells[key]["items"], cells[key]["annotated"] = row["items"], row["annotated"]
        cells[key]["instances"] += row["imported"]  # imported generations: one instance per template
    rows = [row for row in cells.values() if all(row[k] == v for k, v in filters.items())]
    return sorted(rows, key=lambda row: tuple(str(row[c]) for c in CELL))
