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

from annotation.models import GOLD, STUDY, TRAINING, Pool, PoolItem
from annotation.schema import DEFAULT_LABELS
from annotation.services.imports.reading import Source, Stored, Upload, file_rows
from annotation.services.imports.rows import Row
from common.audit import CREATE, audit_record
from generation.datasets.registry import codebook_for
from generation.heuristic import Verdict, heuristic_verdicts
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


def _verdicts(rows: list[Row]) -> dict[str, Verdict]:
    verdicts: dict[str, Verdict] = {}
    for dataset in {row.dataset for row in rows}:
        subset = [row for row in rows if row.dataset == dataset]
        results = heuristic_verdicts(((r.continuation, r.pronoun) for r in subset), codebook=codebook_for(dataset))
        for row, verdict in zip(subset, results, strict=True):
            verdicts[row.key] = verdict
    return verdicts


def _item(pool: Pool, row: Row, verdict: Verdict, kind: str) -> PoolItem:
    return PoolItem(
        pool=pool,
        model_name=row.model,
        dataset=row.dataset,
        setting=row.setting,
        pronoun=row.pronoun,
        template=row.template,
        context=row.context,
        continuation=row.continuation,
        heuristic_correct=verdict.correct,
        first_pronoun=verdict.first_pronoun or "",
        source_file=row.file[-300:],
        source_line=row.line,
        source_key=row.key,
        source_correct=row.correct,
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


def _check_every_row(rows: Iterator[Row], *, errors: list[str], progress: Progress | None) -> int:
    """The first reading: every row checked (the problems gathered in `errors`), none kept; returns the row count."""
    total = 0
    for total, _ in enumerate(rows, start=1):
        if progress is not None and total % BATCH_ROWS == 0:
            progress("reading", total, 0)
    if errors:
        raise GenerationImportError(errors)
    if progress is not None:
        progress("checked", total, total)
    return total


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


def generations_import(
    *,
    paths: Sequence[str | Path | Source],
    pool_name: str,
    kind: str = STUDY,
    created_by=None,
    progress: Progress | None = None,
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
    """
    if kind not in KINDS:
        raise GenerationImportError([f"unknown item kind {kind!r}: use one of {', '.join(KINDS)}"])
    sources = [path if isinstance(path, Upload | Stored) else Path(path) for path in paths]
    existing_pool = Pool.objects.filter(name=pool_name).first()
    labels = list(existing_pool.labels) if existing_pool else list(DEFAULT_LABELS)
    errors: list[str] = []

    def every_row() -> Iterator[Row]:
        for source in sources:
            yield from file_rows(source, kind=kind, labels=labels, errors=errors)

    total = _check_every_row(every_row(), errors=errors, progress=progress)

    mismatches = created = done = 0
    pool, pool_created = Pool.objects.get_or_create(name=pool_name, defaults={"created_by": created_by})
    if pool_created:
        audit_record(event="pool.create", obj=pool, actor=created_by, action=CREATE, data={"by": "import"})
    for batch in _batches(every_row(), BATCH_ROWS):
        verdicts = _verdicts(batch)  # the slow part, outside the transaction
        mismatches += sum(verdicts[row.key].correct != row.correct for row in batch)
        with transaction.atomic():
            # Serialise concurrent imports into one pool so that the existence check stays true until the insert.
            Pool.objects.select_for_update().get(pk=pool.pk)
            # Earlier batches are committed: the same row in two files (or two batches) is one item.
            known = _keys_in_pool(pool, batch)
            items = _new_items(pool, batch, verdicts, existing=known, kind=kind)
            PoolItem.objects.bulk_create(items)
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
