"""A model's scores of stereotype pairs (docs/domain.md, 'Stereotype pair benchmarks'): imported from a file made
elsewhere (`import_pair_scores`) and written out (`export_pair_scores`). The `pair_score` job kind
(generation/jobs/pair_kind.py) writes the same rows.

The import file is a CSV with `model, dataset, pair, score_stereotypical, score_anti_stereotypical` (and optionally
`method`, default `imported`): `pair` is the benchmark's own id. The whole file is checked first; every problem is
named by file:line and nothing is written unless every row is good. A row that is already stored with the same
scores changes nothing; other scores for a stored (model, dataset, pair, method) are an error.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from common.safe_csv import SafeDictWriter
from generation.datasets.files import ImportFailed, read_text
from generation.models import Dataset, Pair, PairScore
from generation.models.pairs import IMPORTED_SCORES, PAIR_METHOD_CHOICES
from generation.selectors import pair_datasets

SCORE_COLUMNS = ("model", "dataset", "pair", "score_stereotypical", "score_anti_stereotypical")
EXPORT_COLUMNS = ("pair", "dataset", "stereotypical", "anti_stereotypical", "score_stereotypical",
                  "score_anti_stereotypical")  # fmt: skip
METHODS = tuple(value for value, _ in PAIR_METHOD_CHOICES)


class PairScoresError(ImportFailed):
    """A scores file that cannot be imported; nothing was written."""


@dataclass
class PairScoresImported:
    rows: int
    created: int
    unchanged: int


def _number(value: str, column: str, problems: list[str]) -> float | None:
    try:
        number = float(value)
    except ValueError:
        problems.append(f"{column} {value!r} is not a number")
        return None
    if not math.isfinite(number):
        problems.append(f"{column} {value!r} is not a finite number")
        return None
    return number


def _score_row(
    row: dict[str, str], datasets: dict[str, Dataset], pairs: dict[str, dict[str, int]], problems: list[str]
) -> tuple[str, str, str, int | None, float, float]:
    """One row's model, dataset name, method, pair's row id and scores; what is wrong goes into `problems`. `pairs`
    caches each dataset's pair ids."""
    model = (row["model"] or "").strip()
    if not model or len(model) > 200:
        problems.append("model must be a name of 1 to 200 characters")
    method = (row.get("method") or "").strip() or IMPORTED_SCORES
    if method not in METHODS:
        problems.append(f"method {method!r} is not one of {', '.join(METHODS)}")
    name = (row["dataset"] or "").strip()
    dataset = datasets.get(name)
    pair_id = None
    if dataset is None:
        known = ", ".join(datasets) or "none (import_dataset crows-pairs|stereoset first)"
        problems.append(f"dataset {name!r} is not a dataset of pairs; known: {known}")
    else:
        if name not in pairs:
            pairs[name] = dict(Pair.objects.filter(dataset=dataset).values_list("source_id", "pk"))
        pair_id = pairs[name].get((row["pair"] or "").strip())
        if pair_id is None:
            problems.append(f"dataset {name} has no pair {row['pair']!r}")
    stereo = _number((row["score_stereotypical"] or "").strip(), "score_stereotypical", problems)
    anti = _number((row["score_anti_stereotypical"] or "").strip(), "score_anti_stereotypical", problems)
    return model, name, method, pair_id, stereo if stereo is not None else 0.0, anti if anti is not None else 0.0


def pair_scores_import(*, path: Path) -> PairScoresImported:
    """Import a model's scores of pairs from a CSV (see the module docstring)."""
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    header = reader.fieldnames or []
    missing = [column for column in SCORE_COLUMNS if column not in header]
    if missing:
        raise PairScoresError([f"{path}:1: missing column(s) {', '.join(missing)} (header: {', '.join(header)})"])
    datasets = pair_datasets()
    pairs: dict[str, dict[str, int]] = {}
    errors: list[str] = []
    wanted: dict[tuple[int, str, str], tuple[int, float, float]] = {}
    for row in reader:
        line = reader.line_num
        if None in row:
            errors.append(f"{path}:{line}: more fields than the header has columns")
            continue
        if all(not (value or "").strip() for value in row.values()):
            continue
        problems: list[str] = []
        model, name, method, pair_id, stereo, anti = _score_row(row, datasets, pairs, problems)
        if problems or pair_id is None:
            errors.extend(f"{path}:{line}: {problem}" for problem in problems)
            continue
        key = (pair_id, model, method)
        if key in wanted:
            errors.append(f"{path}:{line}: model {model}, dataset {name}, pair {row['pair']} already on line "
                          f"{wanted[key][0]}")  # fmt: skip
            continue
        wanted[key] = (line, stereo, anti)
    if not wanted and not errors:
        errors.append(f"{path}: no score rows")
    stored = {
        (s.pair_id, s.model, s.method): s
        for s in PairScore.objects.filter(pair_id__in={key[0] for key in wanted}, model__in={k[1] for k in wanted})
    }
    for key, (line, stereo, anti) in wanted.items():
        old = stored.get(key)
        if old is not None and (old.score_stereotypical, old.score_anti_stereotypical) != (stereo, anti):
            errors.append(
                f"{path}:{line}: model {key[1]} has other scores stored for this pair "
                f"({old.score_stereotypical}, {old.score_anti_stereotypical})"
            )
    if errors:
        raise PairScoresError(errors)
    new = [
        PairScore(
            pair_id=key[0], model=key[1], method=key[2], score_stereotypical=stereo, score_anti_stereotypical=anti,
            source_file=str(path)[:300],
        )
        for key, (line, stereo, anti) in wanted.items()
        if key not in stored
    ]  # fmt: skip
    with transaction.atomic():
        PairScore.objects.bulk_create(new, batch_size=2000)
    return PairScoresImported(rows=len(wanted), created=len(new), unchanged=len(wanted) - len(new))


def pair_scores_export(*, dataset: Dataset, model: str, method: str | None, out: Path) -> int:
    """Write a model's scores of a dataset's pairs as CSV (EXPORT_COLUMNS), in the dataset's order; a model scored
    by several methods needs `method`. The file appears whole or not at all."""
    scores = PairScore.objects.filter(pair__dataset=dataset, model=model)
    methods = sorted(set(scores.values_list("method", flat=True)))
    if not methods:
        raise ValueError(f"model {model!r} has no scores of dataset {dataset.name}")
    if method is None and len(methods) > 1:
        raise ValueError(f"model {model!r} scored {dataset.name} by {', '.join(methods)}: choose one with --method")
    if method is not None and method not in methods:
        raise ValueError(f"model {model!r} has no {method} scores of {dataset.name} (it has {', '.join(methods)})")
    chosen = method or methods[0]
    partial = out.with_name(out.name + ".part")
    written = 0
    with partial.open("w", newline="", encoding="utf-8") as handle:
        writer = SafeDictWriter(handle, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        for score in scores.filter(method=chosen).select_related("pair").order_by("pair__ordinal"):
            writer.writerow(
                {
                    "pair": score.pair.source_id,
                    "dataset": dataset.name,
                    "stereotypical": score.pair.stereotypical,
                    "anti_stereotypical": score.pair.anti_stereotypical,
                    "score_stereotypical": repr(score.score_stereotypical),
                    "score_anti_stereotypical": repr(score.score_anti_stereotypical),
                }
            )
            written += 1
    partial.replace(out)
    return written
