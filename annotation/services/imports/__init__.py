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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.models import GOLD, STUDY, TRAINING, Pool, PoolItem
from annotation.schema import DEFAULT_LABELS
from annotation.services.imports.reading import Upload, file_rows
from annotation.services.imports.rows import Row
from generation.heuristic import Verdict, heuristic_verdicts
from generation.pronouns import codebook_for
from generation.textfiles import InputErrors

__all__ = ["KINDS", "GenerationImportError", "GenerationsImportResult", "Upload", "generations_import"]

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


def _new_items(pool: Pool, rows: list[Row], verdicts: dict[str, Verdict], kind: str) -> list[PoolItem]:
    existing = set(PoolItem.objects.filter(pool=pool).exclude(source_key="").values_list("source_key", flat=True))
    items = []
    for row in rows:
        if row.key in existing or row.legacy_key in existing:
            continue
        # The same row in two files of one import is one item, as it would be in two imports.
        existing.add(row.key)
        verdict = verdicts[row.key]
        items.append(
            PoolItem(
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
        )
    return items


def generations_import(
    *,
    paths: Sequence[str | Path | Upload],
    pool_name: str,
    kind: str = STUDY,
    created_by=None,
) -> GenerationsImportResult:
    """Import every row of every file as a pool item of `kind` (study, gold or training).

    All files are read and checked before anything is written; one bad row fails the whole import. Rows already in
    the pool (recognised by content, see the module docstring) are skipped, so importing the same files again adds
    nothing. `paths` may hold `Upload`s, files already in memory.
    """
    if kind not in KINDS:
        raise GenerationImportError([f"unknown item kind {kind!r}: use one of {', '.join(KINDS)}"])
    existing_pool = Pool.objects.filter(name=pool_name).first()
    labels = list(existing_pool.labels) if existing_pool else list(DEFAULT_LABELS)
    errors: list[str] = []
    rows = [
        row
        for path in paths
        for row in file_rows(path if isinstance(path, Upload) else Path(path), kind=kind, labels=labels, errors=errors)
    ]
    if errors:
        raise GenerationImportError(errors)

    verdicts = _verdicts(rows)
    mismatches = sum(verdicts[row.key].correct != row.correct for row in rows)
    with transaction.atomic():
        pool, _ = Pool.objects.get_or_create(name=pool_name, defaults={"created_by": created_by})
        # Serialise concurrent imports into one pool so that the existence check stays true.
        Pool.objects.select_for_update().get(pk=pool.pk)
        items = _new_items(pool, rows, verdicts, kind)
        PoolItem.objects.bulk_create(items)
    return GenerationsImportResult(
        pool=pool, rows=len(rows), items=len(items), heuristic_mismatches=mismatches, kind=kind
    )
