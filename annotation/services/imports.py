"""Importing generations produced elsewhere, in the released sample format (DOMAIN section 4).

A file is a CSV with the columns `template`, `random_pre_gen` or `random_post_gen`, `correct`, `pronoun`, `model`.
The generation column holds context + continuation as one string; the context is rebuilt from the template with
generation/contexts.py and cut off the front.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.models import Pool, PoolItem
from generation.contexts import fill_mask, pre_context
from generation.heuristic import heuristic_verdicts
from generation.pronouns import BASES, MISGENDERED_MASK, RUFF_MASKS, codebook_for
from generation.textfiles import InputErrors, UnreadableFile, read_utf8

GENERATION_COLUMNS = {"random_pre_gen": "pre", "random_post_gen": "post"}
REQUIRED_COLUMNS = ("template", "correct", "pronoun", "model")
MISGENDERED_MASKS = (MISGENDERED_MASK, "[MASK]")


class GenerationImportError(InputErrors):
    """One or more rows could not be read; nothing was written."""

    heading = "import failed, nothing was written:\n"
    indent = "  "


@dataclass
class ImportResult:
    pool: Pool
    rows: int
    items: int  # new items created by this import
    heuristic_mismatches: int  # rows where the recomputed heuristic differs from the file's `correct`


@dataclass
class _Row:
    file: str
    line: int
    key: str
    model: str
    dataset: str
    setting: str
    pronoun: str
    template: str
    context: str
    continuation: str
    correct: bool


def _mask_of(template: str) -> tuple[str, str, str | None] | None:
    """(dataset kind, mask marker, case form or None when the marker does not tell it)."""
    for mask in MISGENDERED_MASKS:
        if mask in template:
            return "misgendered", mask, None
    for mask, form in RUFF_MASKS.items():
        if mask in template:
            return "ruff", mask, form
    return None


def _post_context(
    template: str, mask: str, dataset: str, form: str | None, pronoun: str, generation: str
) -> str | None:
    """The template with the mask filled by the form of `pronoun` that the generation actually starts with.

    The file does not say the mask's case for MISGENDERED, so every form of the base is tried; when several fit
    (a template ending in the mask: "her" and "herself") the longest one wins.
    """
    codebook = codebook_for(dataset)
    forms = [form] if form else list(codebook.forms)
    fitting = [
        context
        for surface in {codebook.surface(pronoun, f) for f in forms}
        if generation.startswith(context := fill_mask(template, mask, surface))
    ]
    return max(fitting, key=len) if fitting else None


def _parse_correct(value: str) -> bool | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return {1.0: True, 0.0: False}.get(number)


def _read_file(path: Path, errors: list[str]) -> list[_Row]:
    name = str(path)
    try:
        raw, text = read_utf8(path)
    except UnreadableFile as exc:
        errors.append(str(exc))
        return []
    file_hash = hashlib.sha256(raw).hexdigest()

    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        errors.append(f"{name}:1: the file is empty")
        return []
    except csv.Error as exc:
        errors.append(f"{name}:1: not a CSV file ({exc})")
        return []
    header = [column.strip() for column in header]
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    generation_columns = [column for column in GENERATION_COLUMNS if column in header]
    if not generation_columns:
        missing.append("random_pre_gen or random_post_gen")
    if missing:
        errors.append(f"{name}:1: missing column(s): {', '.join(missing)}")
        return []
    if len(generation_columns) > 1:
        errors.append(f"{name}:1: both random_pre_gen and random_post_gen; a file holds one setting")
        return []
    generation_column = generation_columns[0]
    setting = GENERATION_COLUMNS[generation_column]
    index = {column: i for i, column in enumerate(header)}

    rows: list[_Row] = []
    row_number = 0
    while True:
        line = reader.line_num + 1  # the line the next record starts on
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.append(f"{name}:{line}: malformed CSV ({exc})")
            break
        if not any(cell.strip() for cell in record):
            continue
        row_number += 1
        if len(record) < len(header):
            errors.append(f"{name}:{line}: {len(record)} fields where the header has {len(header)}")
            continue
        value = {column: record[i] for column, i in index.items()}
        template, generation = value["template"], value[generation_column]
        pronoun, model = value["pronoun"].strip().lower(), value["model"].strip()
        problems = []
        if pronoun not in BASES:
            problems.append(f"unknown pronoun {value['pronoun']!r} (known: {', '.join(BASES)})")
        if not model:
            problems.append("empty model")
        correct = _parse_correct(value["correct"].strip())
        if correct is None:
            problems.append(f"correct must be 1.0 or 0.0, not {value['correct']!r}")
        mask = _mask_of(template)
        if mask is None:
            problems.append(
                "template has no mask marker ({mask_token}, [MASK], $NOM_PRONOUN, $ACC_PRONOUN or $POSS_PRONOUN)"
            )
        if problems:
            errors.append(f"{name}:{line}: " + "; ".join(problems))
            continue
        dataset, marker, form = mask
        if setting == "pre":
            context = pre_context(template, marker)
            if not generation.startswith(context):
                errors.append(
                    f"{name}:{line}: {generation_column} does not start with the pre-[MASK] context {context!r}"
                )
                continue
        else:
            context = _post_context(template, marker, dataset, form, pronoun, generation)
            if context is None:
                errors.append(
                    f"{name}:{line}: {generation_column} does not start with the template filled with any form of {pronoun!r}"
                )
                continue
        rows.append(
            _Row(
                file=name,
                line=line,
                key=hashlib.sha256(f"{file_hash}:{row_number}".encode()).hexdigest(),
                model=model,
                dataset=dataset,
                setting=setting,
                pronoun=pronoun,
                template=template,
                context=context,
                continuation=generation[len(context) :],
                correct=correct,
            )
        )
    if row_number == 0 and not any(e.startswith(f"{name}:") for e in errors):
        errors.append(f"{name}:2: the file has a header but no rows")
    return rows


def generations_import(*, paths: list[str | Path], pool_name: str, created_by=None) -> ImportResult:
    """Import every row of every file as its own pool item (two rows with the same text are two items).

    A row is identified by the sha256 of its file's bytes and its row number, so importing the same files again
    adds nothing. All files are read and checked before anything is written; one bad row fails the whole import.
    """
    errors: list[str] = []
    rows = [row for path in paths for row in _read_file(Path(path), errors)]
    if errors:
        raise GenerationImportError(errors)

    mismatches = 0
    verdicts = {}
    for dataset in {row.dataset for row in rows}:
        subset = [row for row in rows if row.dataset == dataset]
        results = heuristic_verdicts(((r.continuation, r.pronoun) for r in subset), codebook=codebook_for(dataset))
        for row, verdict in zip(subset, results, strict=True):
            verdicts[row.key] = verdict
            mismatches += verdict.correct != row.correct

    with transaction.atomic():
        pool, _ = Pool.objects.get_or_create(name=pool_name, defaults={"created_by": created_by})
        # Serialise concurrent imports into one pool so that the existence check below stays true.
        Pool.objects.select_for_update().get(pk=pool.pk)
        existing = set(PoolItem.objects.filter(pool=pool).exclude(source_key="").values_list("source_key", flat=True))
        new_items = []
        for row in rows:
            if row.key in existing:
                continue
            existing.add(row.key)
            verdict = verdicts[row.key]
            new_items.append(
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
                )
            )
        PoolItem.objects.bulk_create(new_items)
    return ImportResult(pool=pool, rows=len(rows), items=len(new_items), heuristic_mismatches=mismatches)
