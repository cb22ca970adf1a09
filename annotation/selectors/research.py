"""Reads for the researchers' pool pages: progress and time per annotator, the lists the forms pick from, and the
disagreements to adjudicate. (What annotators can load is built in selectors.py; the raw export's rows in
services/export.py.)"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Prefetch, QuerySet

from accounts.roles import ANNOTATOR
from annotation.models import (
    GOLD,
    STUDY,
    TRAINING,
    Adjudication,
    Annotation,
    Assignment,
    ExtraneousSpan,
    Pool,
    PoolItem,
)
from annotation.selectors import qualification_statuses
from annotation.selectors.export import item_batches
from generation.models import Job, JobStatus

# Progress ------------------------------------------------------------------------------------------------------------


@dataclass
class AnnotatorProgress:
    username: str
    assigned: int
    done: int
    median_seconds: float | None = None  # per annotated item, over every item of the pool they annotated
    total_seconds: float = 0.0
    qualification: dict | None = None  # selectors.qualification_status in this pool

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assigned) if self.assigned else 0


@dataclass
class CellProgress:
    model: str
    dataset: str
    setting: str
    pronoun: str
    items: int
    assignments: int
    done: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assignments) if self.assignments else 0


def _seconds_per_annotator(pool: Pool) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = defaultdict(list)
    for username, value in Annotation.objects.filter(item__pool=pool).values_list("annotator__username", "seconds"):
        seconds[username].append(value)
    return seconds


def pool_progress(*, pool: Pool) -> tuple[list[AnnotatorProgress], list[CellProgress]]:
    """Progress per annotator (with the median and total seconds they spent per item) and per cell."""
    per_user: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_cell: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    # Done means an annotation exists: whoever wrote it (the API, an import, the admin), not a cached flag.
    annotated = Annotation.objects.filter(item_id=OuterRef("item_id"), annotator_id=OuterRef("annotator_id"))
    for username, done, model, dataset, setting, pronoun in (
        Assignment.objects.filter(pool=pool)
        .annotate(has_annotation=Exists(annotated))
        .values_list(
            "annotator__username",
            "has_annotation",
            "item__model_name",
            "item__dataset",
            "item__setting",
            "item__pronoun",
        )
    ):
        cell = (model, dataset, setting, pronoun)
        per_user[username][0] += 1
        per_user[username][1] += done
        per_cell[cell][0] += 1
        per_cell[cell][1] += done
    seconds = _seconds_per_annotator(pool)
    qualifications = qualification_statuses(pool=pool)
    items_per_cell: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for cell in PoolItem.objects.filter(pool=pool).values_list("model_name", "dataset", "setting", "pronoun"):
        items_per_cell[cell] += 1
    annotators = [
        AnnotatorProgress(
            username=name,
            assigned=counts[0],
            done=counts[1],
            median_seconds=statistics.median(seconds[name]) if seconds.get(name) else None,
            total_seconds=sum(seconds.get(name, [])),
            qualification=qualifications.get(name),
        )
        for name, counts in sorted(per_user.items())
    ]
    cells = [
        CellProgress(
            model=cell[0],
            dataset=cell[1],
            setting=cell[2],
            pronoun=cell[3],
            items=count,
            assignments=per_cell[cell][0],
            done=per_cell[cell][1],
        )
        for cell, count in sorted(items_per_cell.items())
    ]
    return annotators, cells


def pool_kind_counts(*, pool: Pool) -> dict[str, int]:
    counts = dict(PoolItem.objects.filter(pool=pool).values("kind").annotate(n=Count("id")).values_list("kind", "n"))
    return {kind: counts.get(kind, 0) for kind in (STUDY, GOLD, TRAINING)}


def pool_summaries() -> QuerySet[Pool]:
    return (
        Pool.objects.select_related("project")
        .annotate(
            n_items=Count("items", distinct=True),
            n_assignments=Count("assignments", distinct=True),
        )
        .order_by("-created_at")
    )


def finished_jobs() -> QuerySet[Job]:
    """The jobs a pool can be drawn from, for the pool form's list."""
    # Generation jobs only: other job kinds (judge runs, generation/jobs/kinds.py) have no generations to draw.
    return (
        Job.objects.filter(status=JobStatus.DONE, kind="generation")
        .select_related("model", "generation_run__dataset")
        .order_by("pk")
    )


def annotators() -> QuerySet:
    """Everyone holding the annotator role, for the assignment form's list; not study participants (their study link
    gives them their work)."""
    return (
        get_user_model()
        .objects.filter(groups__name=ANNOTATOR, is_active=True, participant__isnull=True)
        .order_by("username")
        .distinct()
    )


# Disagreements -------------------------------------------------------------------------------------------------------

LABEL = "label"
EXTRANEOUS = "extraneous"
SPANS = "spans"
DISAGREEMENT_KINDS = {LABEL: "pronoun label", EXTRANEOUS: "extraneous flag", SPANS: "marked words"}
SORTS = {
    "item": "item order",
    "cell": "model, dataset, setting, pronoun",
    "kinds": "most kinds of disagreement first",
    "open": "not yet adjudicated first",
}


@dataclass
class MarkedWord:
    start: int
    end: int
    word: str
    annotators: list[str] = field(default_factory=list)

    @property
    def value(self) -> str:
        return f"{self.start}-{self.end}"


@dataclass
class Disagreement:
    item: PoolItem
    kinds: list[str]
    annotations: list[tuple[Annotation, list[MarkedWord]]]
    adjudication: Adjudication | None
    marked_words: list[MarkedWord]  # every word any annotator marked, with who marked it (the adjudicator's choices)
    # Set where the annotations are summarised rather than listed (`pool_disagreements_page`): `annotations` is then
    # empty, and these count them: (label, annotations) most given first, and how many said extraneous yes / no.
    label_counts: list[tuple[str, int]] | None = None
    extraneous_counts: tuple[int, int] | None = None
    n_annotations: int = 0

    @property
    def cell(self) -> tuple[str, str, str, str]:
        return (self.item.model_name, self.item.dataset, self.item.setting, self.item.pronoun)


def _span_words(item: PoolItem, annotation: Annotation) -> list[MarkedWord]:
    return [
        MarkedWord(span.start, span.end, item.continuation[span.start : span.end], [annotation.annotator.username])
        for span in annotation.spans.all()
    ]


def _kinds_of(annotations: list[Annotation]) -> list[str]:
    kinds = []
    if len({a.label for a in annotations}) > 1:
        kinds.append(LABEL)
    if len({a.extraneous for a in annotations}) > 1:
        kinds.append(EXTRANEOUS)
    if len({frozenset((s.start, s.end) for s in a.spans.all()) for a in annotations}) > 1:
        kinds.append(SPANS)
    return kinds


def pool_disagreements(
    *, pool: Pool, kind: str | None = None, status: str | None = None, model: str | None = None, sort: str = "item"
) -> list[Disagreement]:
    """Study items annotated by two or more people who differ on the label, the extraneous flag or the marked words
    (the sets of spans differ), each with every annotation. Gold and training items have a known answer and are never
    adjudicated. `kind` keeps one kind of disagreement, `status` "open" or "adjudicated", `model` one model."""
    rows = []
    for item in _disagreement_candidates(pool=pool, model=model):
        item_annotations = list(item.annotations.all())
        kinds = _kinds_of(item_annotations)
        if not kinds or (kind and kind not in kinds):
            continue
        adjudication = getattr(item, "adjudication", None)
        if (status == "open" and adjudication is not None) or (status == "adjudicated" and adjudication is None):
            continue
        with_words = [(annotation, _span_words(item, annotation)) for annotation in item_annotations]
        union: dict[tuple[int, int], MarkedWord] = {}
        for _, words in with_words:
            for word in words:
                union.setdefault(
                    (word.start, word.end), MarkedWord(word.start, word.end, word.word)
                ).annotators += word.annotators
        rows.append(Disagreement(item, kinds, with_words, adjudication, [union[key] for key in sorted(union)]))
    if sort == "cell":
        rows.sort(key=lambda row: (row.cell, row.item.pk))
    elif sort == "kinds":
        rows.sort(key=lambda row: (-len(row.kinds), row.item.pk))
    elif sort == "open":
        rows.sort(key=lambda row: (row.adjudication is not None, row.item.pk))
    return rows


def _disagreement_candidates(*, pool: Pool, model: str | None, ids: list[int] | None = None) -> Iterator[PoolItem]:
    """The pool's study items with two or more annotations (of `model` only, if given), in id order, each with its
    annotations (oldest first) and their spans. Read a run of items at a time (`item_batches`): a crowd-sized
    pool's spans would otherwise be asked for by one list of 240,000 annotation ids, past PostgreSQL's 65,535
    parameters."""
    candidates = (
        PoolItem.objects.filter(pool=pool, kind=STUDY)
        .annotate(n_annotations=Count("annotations"))
        .filter(n_annotations__gte=2)
        .order_by("pk")
    )
    if model:
        candidates = candidates.filter(model_name=model)
    if ids is not None:
        candidates = candidates.filter(pk__in=ids)
    annotations = Annotation.objects.select_related("annotator").prefetch_related("spans").order_by("created_at", "pk")
    for batch in item_batches(candidates.values_list("pk", "n_annotations")):
        yield from (
            PoolItem.objects.filter(pk__in=list(batch))
            .annotate(n_annotations=Count("annotations"))
            .select_related("adjudication__adjudicator")
            .prefetch_related(Prefetch("annotations", queryset=annotations))
            .order_by("pk")
        )


ANNOTATIONS_LISTED = 20  # an item with more annotations is summarised on the adjudication page (a crowd study: 600)


@dataclass
class DisagreementPage:
    rows: list[Disagreement]
    count: int  # items matching the filters, over every page
    number: int  # this page, from 1
    pages: int


def pool_disagreements_page(
    *,
    pool: Pool,
    kind: str | None = None,
    status: str | None = None,
    model: str | None = None,
    sort: str = "item",
    page: int = 1,
    per_page: int = 50,
    listed: int | None = None,
) -> DisagreementPage:
    """One page of `pool_disagreements` (the same items in the same order; `page` past the last gives the last).
    Which items disagree is found from the annotations' labels, flags and spans alone; only the page's items are read
    whole, and an item with more than `listed` annotations is summarised as counts per label (`label_counts`) with
    no annotation listed (None: ANNOTATIONS_LISTED): a crowd study's 400 items of 600 annotations each took minutes
    to read and render."""
    listed = ANNOTATIONS_LISTED if listed is None else listed
    index = _disagreement_index(pool=pool, kind=kind, status=status, model=model, sort=sort)
    pages = max(1, -(-len(index) // per_page))
    number = min(max(page, 1), pages)
    chosen = index[(number - 1) * per_page : number * per_page]
    kinds = {pk: found for pk, found, _ in chosen}
    counts = {pk: n for pk, _, n in chosen}
    listed_ids = [pk for pk, _, n in chosen if n <= listed]
    summarised_ids = [pk for pk, _, n in chosen if n > listed]
    rows: dict[int, Disagreement] = {}
    for item in _disagreement_candidates(pool=pool, model=None, ids=listed_ids):
        rows[item.pk] = _disagreement_row(item, kinds[item.pk])
    for pk, row in _summarised(ids=summarised_ids, kinds=kinds).items():
        rows[pk] = row
    for pk, row in rows.items():
        row.n_annotations = counts[pk]
    return DisagreementPage([rows[pk] for pk, _, _ in chosen], len(index), number, pages)


def _disagreement_index(
    *, pool: Pool, kind: str | None, status: str | None, model: str | None, sort: str
) -> list[tuple[int, list[str], int]]:
    """(item id, kinds, annotations) of `pool_disagreements`' items, in its order, from three reads of plain values
    (no object per annotation)."""
    items = PoolItem.objects.filter(pool=pool, kind=STUDY)
    if model:
        items = items.filter(model_name=model)
    cells = {
        pk: ((model_name, dataset, setting, pronoun), adjudication is not None)
        for pk, model_name, dataset, setting, pronoun, adjudication in items.values_list(
            "pk", "model_name", "dataset", "setting", "pronoun", "adjudication"
        )
    }
    annotations = Annotation.objects.filter(item__pool=pool, item__kind=STUDY)
    spans: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for annotation, start, end in ExtraneousSpan.objects.filter(annotation__in=annotations).values_list(
        "annotation_id", "start", "end"
    ):
        spans[annotation].add((start, end))
    labels: dict[int, set[str]] = defaultdict(set)
    flags: dict[int, set[bool]] = defaultdict(set)
    marked: dict[int, set[frozenset]] = defaultdict(set)
    n: dict[int, int] = defaultdict(int)
    for item, pk, label, extraneous in annotations.values_list("item_id", "pk", "label", "extraneous"):
        if item in cells:
            labels[item].add(label)
            flags[item].add(extraneous)
            marked[item].add(frozenset(spans.get(pk, ())))
            n[item] += 1
    index = []
    for pk in sorted(n):
        if n[pk] < 2:
            continue
        found = [name for name, sets in ((LABEL, labels), (EXTRANEOUS, flags), (SPANS, marked)) if len(sets[pk]) > 1]
        adjudicated = cells[pk][1]
        if not found or (kind and kind not in found):
            continue
        if (status == "open" and adjudicated) or (status == "adjudicated" and not adjudicated):
            continue
        index.append((pk, found, n[pk]))
    if sort == "cell":
        index.sort(key=lambda row: (cells[row[0]][0], row[0]))
    elif sort == "kinds":
        index.sort(key=lambda row: (-len(row[1]), row[0]))
    elif sort == "open":
        index.sort(key=lambda row: (cells[row[0]][1], row[0]))
    return index


def _disagreement_row(item: PoolItem, kinds: list[str]) -> Disagreement:
    """An item's disagreement with every annotation listed, as `pool_disagreements` makes it."""
    with_words = [(annotation, _span_words(item, annotation)) for annotation in item.annotations.all()]
    union: dict[tuple[int, int], MarkedWord] = {}
    for _, words in with_words:
        for word in words:
            union.setdefault(
                (word.start, word.end), MarkedWord(word.start, word.end, word.word)
            ).annotators += word.annotators
    return Disagreement(item, kinds, with_words, getattr(item, "adjudication", None), [union[k] for k in sorted(union)])


def _summarised(*, ids: list[int], kinds: dict[int, list[str]]) -> dict[int, Disagreement]:
    """The items' disagreements with their annotations counted (per label, per extraneous flag) and their marked
    words gathered, none of the annotations read as an object."""
    if not ids:
        return {}
    items = {item.pk: item for item in PoolItem.objects.filter(pk__in=ids).select_related("adjudication__adjudicator")}
    annotations = Annotation.objects.filter(item_id__in=ids)
    labels: dict[int, dict[str, int]] = defaultdict(dict)
    flags: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for item_id, label, extraneous, count in (
        annotations.values("item_id", "label", "extraneous")
        .annotate(n=Count("pk"))
        .values_list("item_id", "label", "extraneous", "n")
    ):
        labels[item_id][label] = labels[item_id].get(label, 0) + count
        flags[item_id][0 if extraneous else 1] += count
    words: dict[int, dict[tuple[int, int], MarkedWord]] = defaultdict(dict)
    for item_id, start, end, username in (
        ExtraneousSpan.objects.filter(annotation__item_id__in=ids)
        .order_by("annotation__created_at", "annotation_id", "start")
        .values_list("annotation__item_id", "start", "end", "annotation__annotator__username")
    ):
        text = items[item_id].continuation[start:end]
        words[item_id].setdefault((start, end), MarkedWord(start, end, text)).annotators.append(username)
    rows = {}
    for pk, item in items.items():
        union = words.get(pk, {})
        row = Disagreement(item, kinds[pk], [], getattr(item, "adjudication", None), [union[k] for k in sorted(union)])
        row.label_counts = sorted(labels[pk].items(), key=lambda pair: (-pair[1], pair[0]))
        row.extraneous_counts = (flags[pk][0], flags[pk][1])
        rows[pk] = row
    return rows


def pool_models(*, pool: Pool) -> list[str]:
    return list(
        PoolItem.objects.filter(pool=pool).values_list("model_name", flat=True).distinct().order_by("model_name")
    )
