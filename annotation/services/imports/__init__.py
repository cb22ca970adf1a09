"""Importing generations produced elsewhere, in the released sample format (docs/domain.md, 'The annotation pool').

A file is a CSV with the columns `template`, `random_pre_gen` or `random_post_gen`, `correct`, `pronoun`, `model`.
The generation column holds context + continuation as one string; the context is rebuilt from the template with
generation/contexts.py and cut off the front. Gold and training items (`kind="gold"` / `"training"`) come in the
same format plus `gold_label` and the optional `gold_extraneous` and `explanation` (required for training items,
whose explanation is shown to the annotator after they answer).

A row is recognised by what it says, not by the bytes of its file: re-saving a file with CRLF line endings or a
byte-order mark, or reordering its rows, imports nothing new. Identical rows in one file stay separate items (the
first, second, ... occurrence); the same row in two files is one item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from accounts.models import Project
from annotation.labelset import LabelSetError, labels_check
from annotation.models import GOLD, NOMINAL, STUDY, TRAINING, Annotation, Pool, PoolItem
from annotation.schema import DEFAULT_LABELS
from annotation.services.imports.free_text import Datasets
from annotation.services.imports.reading import Source, Stored, Upload, file_rows
from annotation.services.imports.rows import Row
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from generation.datasets.registry import codebook_for
from generation.heuristic import Verdict, heuristic_verdicts
from generation.pronouns import Codebook
from generation.textfiles import InputErrors

__all__ = ["KINDS", "GenerationImportError", "GenerationsImportResult", "Stored", "Upload", "generations_import"]

KINDS = (STUDY, GOLD, TRAINING)


class GenerationImportError(InputErrors):
    """One or more rows could not be read; nothing was written."""

    heading = "import failed, nothing was written:\n"
    indent = "  "


@dataclass
class GenerationsImportResult:
    pool: Pool
    rows: int
    items: int  # new items created by this import
    heuristic_mismatches: int  # rows where the recomputed heuristic differs from the file's `correct`
    kind: str = STUDY


def _verdicts(rows: list[Row]) -> dict[str, Verdict | None]:
    """The heuristic's verdict per row; None where the row states no pronoun (docs/domain.md, "Bring your own
    study": no verdict, never "correct")."""
    verdicts: dict[str, Verdict | None] = {row.key: None for row in rows if not row.pronoun}
    by_codebook: dict[int, tuple[Codebook, list[Row]]] = {}
    for row in rows:
        if row.pronoun:
            codebook = row.codebook or codebook_for(row.dataset)
            by_codebook.setdefault(id(codebook), (codebook, []))[1].append(row)
    for codebook, subset in by_codebook.values():
        results = heuristic_verdicts(((r.continuation, r.pronoun) for r in subset), codebook=codebook)
        for row, verdict in zip(subset, results, strict=True):
            verdicts[row.key] = verdict
    return verdicts


def _item(pool: Pool, row: Row, verdict: Verdict | None, kind: str) -> PoolItem:
    return PoolItem(
        pool=pool,
        model_name=row.model,
        dataset=row.dataset,
        setting=row.setting,
        pronoun=row.pronoun,
        sample_index=row.sample_index,
        template=row.template,
        context=row.context,
        continuation=row.continuation,
        heuristic_correct=verdict.correct if verdict is not None else None,
        first_pronoun=(verdict.first_pronoun if verdict is not None else None) or "",
        source_file=row.file[-300:],
        source_line=row.line,
        source_key=row.key,
        source_correct=row.correct,
        external_id=row.external_id,
        kind=kind,
        gold_label=row.gold_label,
        gold_extraneous=row.gold_extraneous,
        explanation=row.explanation,
    )


def _batches(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    batch: list[Row] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# (phase, rows so far, rows in all or 0): "reading" while checking, "checked" once, then "writing" per batch.
Progress = Callable[[str, int, int], None]
BATCH_ROWS = 1000


def _check_every_row(rows: Iterator[Row], *, errors: list[str], progress: Progress | None, pool: Pool | None) -> int:
    """The first reading: every row checked (the problems gathered in `errors`), none kept but the item ids of
    free-text rows, each once in the import and in the pool; returns the row count."""
    total = 0
    items: dict[str, tuple[str, str, int]] = {}  # item id -> (key, file, line)
    for total, row in enumerate(rows, start=1):
        if row.external_id:
            first = items.get(row.external_id)
            if first is not None and first[0] != row.key:
                errors.append(
                    f"{row.file}:{row.line}: item: {row.external_id!r} is already the item of {first[1]}:{first[2]}"
                )
            items.setdefault(row.external_id, (row.key, row.file, row.line))
        if progress is not None and total % BATCH_ROWS == 0:
            progress("reading", total, 0)
    if pool is not None and items:
        _check_items_in_pool(pool, items, errors)
    if errors:
        raise GenerationImportError(errors)
    if progress is not None:
        progress("checked", total, total)
    return total


def _check_items_in_pool(pool: Pool, items: dict[str, tuple[str, str, int]], errors: list[str]) -> None:
    """An item id the pool holds already must be the same row (a re-import), not another generation."""
    ids = list(items)
    for start in range(0, len(ids), BATCH_ROWS):
        stored = PoolItem.objects.filter(pool=pool, external_id__in=ids[start : start + BATCH_ROWS])
        for external_id, key in stored.values_list("external_id", "source_key"):
            own_key, file, line = items[external_id]
            if key != own_key:
                errors.append(
                    f"{file}:{line}: item: pool {pool.name!r} already holds item {external_id!r} with other content"
                )


def _keys_in_pool(pool: Pool, batch: list[Row]) -> set[str]:
    """Which of the batch's keys (and the older identities of its rows) the pool already holds."""
    keys = {key for row in batch for key in (row.key, row.legacy_key) if key}
    return set(PoolItem.objects.filter(pool=pool, source_key__in=keys).values_list("source_key", flat=True))


def _new_items(pool: Pool, batch: list[Row], verdicts: dict, *, existing: set[str], kind: str) -> list[PoolItem]:
    """The batch's rows not yet in the pool, as items; `existing` gains their keys."""
    items = []
    for row in batch:
        if row.key in existing or row.legacy_key in existing:
            continue
        # The same row in two files of one import is one item, as it would be in two imports.
        existing.add(row.key)
        items.append(_item(pool, row, verdicts[row.key], kind))
    return items


@dataclass(frozen=True)
class LabelSet:
    """What a pool declares about its labels (docs/domain.md, "Bring your own study" and "Scales")."""

    labels: list[str]
    positive: str = ""
    scale: str = NOMINAL
    positive_at_least: str = ""

    @classmethod
    def of(cls, pool: Pool | None) -> LabelSet:
        if pool is None:
            return cls(list(DEFAULT_LABELS))
        return cls(list(pool.labels), pool.positive_label, pool.scale, pool.positive_at_least)

    def fields(self) -> dict:
        """The pool's columns that hold it."""
        return {
            "labels": self.labels, "positive_label": self.positive, "scale": self.scale,
            "positive_at_least": self.positive_at_least,
        }  # fmt: skip


def _label_set(
    pool: Pool | None, labels: Sequence[str] | None, positive: str, scale: str | None, positive_at_least: str | None
) -> LabelSet:
    """The pool's label set, scale and positive label after this import: the declared ones (checked), else the
    pool's own, else the schema's three (nominal). A pool whose set differs from the declared one takes it only
    while nobody has labelled any of its items."""
    current = LabelSet.of(pool)
    if labels is None and not positive and scale is None and positive_at_least is None:
        return current
    wanted = LabelSet(
        list(labels) if labels is not None else current.labels,
        positive,
        current.scale if scale is None else scale,
        current.positive_at_least if positive_at_least is None else positive_at_least,
    )
    try:
        labels_check(wanted.labels, wanted.positive, scale=wanted.scale, positive_at_least=wanted.positive_at_least)
    except LabelSetError as exc:
        raise GenerationImportError([f"--labels: {exc}"]) from None
    if pool is not None and wanted != current and Annotation.objects.filter(item__pool=pool).exists():
        raise GenerationImportError(
            [
                f"--labels: pool {pool.name!r} has labels {', '.join(current.labels)} ({current.scale}) and people "
                "have labelled its items; its label set can no longer change"
            ]
        )
    return wanted


def generations_import(
    *,
    paths: Sequence[str | Path | Source],
    pool_name: str,
    kind: str = STUDY,
    labels: Sequence[str] | None = None,
    positive: str = "",
    codebook: Codebook | None = None,
    created_by=None,
    progress: Progress | None = None,
    project: Project | None = None,
    scale: str | None = None,
    positive_at_least: str | None = None,
) -> GenerationsImportResult:
    """Import every row of every file as a pool item of `kind` (study, gold or training).

    All files are read and checked before anything is written; one bad row fails the whole import. Rows already in
    the pool (recognised by content, see the module docstring) are skipped, so importing the same files again adds
    nothing. `paths` may hold `Upload`s (files in memory) and `Stored` files (an import job's).

    Memory stays bounded whatever the files' size: they are read as streams twice, once to check every row and
    once to write them in batches of BATCH_ROWS; only the rows' keys are held in between. Each batch is written in a
    short transaction of its own (its heuristic computed before it), so that other writers (an annotator's save, on
    SQLite where writers take turns) wait for one batch at most, never for the whole import. An import stopped
    between batches keeps what it wrote; run again, it skips those rows and writes the rest, each once. `progress`
    is told the phase and the rows done after each batch.

    The files may also hold free-text generations (docs/domain.md, "Bring your own study"; free_text.py), read with
    `codebook` (a free-text dataset's families; MISGENDERED's when None). `labels` (and `positive`, `scale`,
    `positive_at_least`; None: the pool's own) declare the pool's label set, written onto the pool with its first
    batch. A new pool goes to `project` (None: the default project); an existing pool stays in its own, which
    `project`, when given, must be.
    """
    if kind not in KINDS:
        raise GenerationImportError([f"unknown item kind {kind!r}: use one of {', '.join(KINDS)}"])
    sources = [path if isinstance(path, Upload | Stored) else Path(path) for path in paths]
    existing_pool = Pool.objects.filter(name=pool_name).first()
    if existing_pool is not None and project is not None and existing_pool.project_id != project.pk:
        raise GenerationImportError([f"--project: pool {pool_name!r} belongs to another project"])
    declared = _label_set(existing_pool, labels, positive, scale, positive_at_least)
    pool_labels = declared.labels
    errors: list[str] = []
    datasets = Datasets(codebook)

    def every_row() -> Iterator[Row]:
        for source in sources:
            yield from file_rows(source, kind=kind, labels=pool_labels, errors=errors, datasets=datasets)

    total = _check_every_row(every_row(), errors=errors, progress=progress, pool=existing_pool)

    mismatches = created = done = 0
    pool, pool_created = Pool.objects.get_or_create(
        name=pool_name,
        defaults={
            "created_by": created_by,
            **declared.fields(),
            **({} if project is None else {"project": project}),
        },  # fmt: skip
    )
    if pool_created:
        audit_record(event="pool.create", obj=pool, actor=created_by, action=CREATE, data={"by": "import"})
        pool_changed(pools=[pool])
    elif LabelSet.of(pool) != declared:
        Pool.objects.filter(pk=pool.pk).update(**declared.fields())
        pool_changed(pools=[pool])
        audit_record(
            event="pool.labels", obj=pool, actor=created_by,
            data={"labels": pool_labels, "positive": declared.positive, "scale": declared.scale,
                  "positive_at_least": declared.positive_at_least},
        )  # fmt: skip
    for batch in _batches(every_row(), BATCH_ROWS):
        verdicts = _verdicts(batch)  # the slow part, outside the transaction
        mismatches += sum(
            row.correct is not None and (verdict := verdicts[row.key]) is not None and verdict.correct != row.correct
            for row in batch
        )
        with transaction.atomic():
            # Serialise concurrent imports into one pool so that the existence check stays true until the insert.
            Pool.objects.select_for_update().get(pk=pool.pk)
            # Earlier batches are committed: the same row in two files (or two batches) is one item.
            known = _keys_in_pool(pool, batch)
            items = _new_items(pool, batch, verdicts, existing=known, kind=kind)
            PoolItem.objects.bulk_create(items)
            pool_changed(pools=[pool])
        created += len(items)
        done += len(batch)
        if progress is not None:
            progress("writing", done, total)
    if errors:  # a file changed between the two readings: what was written stays, and a rerun completes it
        raise GenerationImportError(errors)
    audit_record(
        event="import.run",
        obj=pool,
        actor=created_by,
        data={
            "files": [getattr(source, "name", str(source)) for source in sources],
            "kind": kind,
            "rows": total,
            "items": created,
        },
    )
    return GenerationsImportResult(pool=pool, rows=total, items=created, heuristic_mismatches=mismatches, kind=kind)
