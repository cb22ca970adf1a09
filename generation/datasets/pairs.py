"""Stereotype pair benchmarks (docs/domain.md, 'Stereotype pair benchmarks'): CrowS-Pairs' CSV and StereoSet's
intrasentence items, each stored as `Pair` rows (a stereotypical and an anti-stereotypical sentence) rather than as
templates and instances.

- CrowS-Pairs (`crows_pairs_anonymized.csv`): its first column is the row index, the pair's id; a row whose
  `stereo_antistereo` is `antistereo` is turned, so that the stereotypical sentence comes first (the seed's merged
  format): `sent_less` is then the stereotypical sentence and `sent_more` the anti-stereotypical one.
- StereoSet (`dev.json`): each intrasentence item is one pair, its id the item's; the sentence whose `gold_label` is
  `stereotype` and the one whose label is `anti-stereotype`; the `unrelated` option is kept, never scored.

`--bias-type` keeps the pairs of one bias type (`gender`); every row of the file is checked all the same, and a bad
file (a row without both sentences, an unknown `stereo_antistereo` or gold label, a pair id twice) is refused with
file:line, nothing written. Importing the same file and arguments again changes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.db import IntegrityError, transaction

from generation.datasets.base import DatasetKind, DatasetKindSpec
from generation.datasets.files import ImportFailed, read_text, signature
from generation.models import Dataset, Pair

CROWS_COLUMNS = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")
CROWS_DIRECTIONS = ("stereo", "antistereo")
STEREOSET_LABELS = {"stereotype": "stereotypical", "anti-stereotype": "anti_stereotypical", "unrelated": "unrelated"}
PAIR_EXPORT_COLUMNS = ("pair", "stereotypical", "anti_stereotypical", "unrelated", "bias_type")


@dataclass
class ParsedPair:
    source_id: str
    line: int
    stereotypical: str
    anti_stereotypical: str
    bias_type: str
    unrelated: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class PairImportResult:
    dataset: Dataset
    created: bool
    pairs: int
    skipped: dict[str, int] = field(default_factory=dict)  # --bias-type: rows of other bias types, per type

    def as_json(self) -> dict:
        summary: dict[str, Any] = {"dataset": self.dataset.name, "kind": self.dataset.kind, "pairs": self.pairs}
        if self.skipped:
            summary["skipped_bias_types"] = self.skipped
        return summary

    def lines(self) -> list[str]:
        verb = "imported" if self.created else "already imported, unchanged:"
        lines = [f"{verb} {self.dataset.name}: {self.pairs} pairs"]
        if self.skipped:
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.skipped.items()))
            lines.append(f"left out rows of other bias types: {kinds}")
        return lines


def _crows_rows(path: Path) -> Iterator[tuple[int, dict[str, str], str]]:
    """(line, row, pair id) of each row: the id is the first column, the row index (its header is empty); the row
    holds the other columns."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    header = next(reader, None) or []
    missing = [column for column in CROWS_COLUMNS if column not in header]
    if missing:
        raise ImportFailed(
            [f"{path}:1: missing column(s) {', '.join(missing)} (header has: {', '.join(header) or 'nothing'})"]
        )
    if header[0] in CROWS_COLUMNS:
        raise ImportFailed([f"{path}:1: the first column must be the row index (CrowS-Pairs' pair id)"])
    for cells in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise ImportFailed([f"{path}:{line}: {len(cells)} fields, the header has {len(header)} columns"])
        row = dict(zip(header, cells, strict=True))
        yield line, row, row.pop(header[0]).strip()


def _parse_crows(path: Path) -> list[ParsedPair]:
    errors: list[str] = []
    pairs: list[ParsedPair] = []
    seen: dict[str, int] = {}
    for line, row, pair_id in _crows_rows(path):
        where = f"{path}:{line}"
        problems = []
        if not pair_id:
            problems.append("empty row index (the pair's id)")
        elif pair_id in seen:
            problems.append(f"pair id {pair_id!r} already on line {seen[pair_id]}")
        seen.setdefault(pair_id, line)
        more, less = row["sent_more"].strip(), row["sent_less"].strip()
        for name, value in (("sent_more", more), ("sent_less", less)):
            if not value:
                problems.append(f"{name} is empty: a pair needs both sentences")
        direction = row["stereo_antistereo"].strip()
        if direction not in CROWS_DIRECTIONS:
            problems.append(f"stereo_antistereo {direction!r} is neither {' nor '.join(CROWS_DIRECTIONS)}")
        if not row["bias_type"].strip():
            problems.append("empty bias_type")
        if problems:
            errors.extend(f"{where}: {problem}" for problem in problems)
            continue
        stereotypical, anti = (more, less) if direction == "stereo" else (less, more)
        # The file's direction stays with the pair (annotations, anon_writer, anon_annotators too).
        extra = {key: value for key, value in row.items() if key not in ("sent_more", "sent_less", "bias_type")}
        pairs.append(ParsedPair(pair_id, line, stereotypical, anti, row["bias_type"].strip(), extra=extra))
    if errors:
        raise ImportFailed(errors)
    return pairs


def _item_lines(text: str, ids: list[str]) -> list[int]:
    """The line each item's id stands on, found in order (json does not tell where a value was)."""
    lines, position, line = [], 0, 1
    for item_id in ids:
        match = re.compile(r'"id"\s*:\s*' + re.escape(json.dumps(item_id))).search(text, position)
        if match is not None:
            line += text.count("\n", position, match.start())
            position = match.start()
        lines.append(line)
    return lines


def _stereoset_sentences(sentences: object, problems: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """An item's sentences by their role (stereotypical, anti_stereotypical, unrelated), and their ids by gold
    label; what is wrong goes into `problems`."""
    chosen: dict[str, str] = {}
    sentence_ids: dict[str, str] = {}
    if not isinstance(sentences, list):
        problems.append("no list of sentences")
        sentences = []
    for sentence in sentences:
        label = sentence.get("gold_label") if isinstance(sentence, dict) else None
        if label not in STEREOSET_LABELS:
            problems.append(f"gold_label {label!r} is not one of {', '.join(STEREOSET_LABELS)}")
            continue
        if STEREOSET_LABELS[label] in chosen:
            problems.append(f"two sentences have gold_label {label!r}")
            continue
        chosen[STEREOSET_LABELS[label]] = str(sentence.get("sentence") or "").strip()
        sentence_ids[label] = str(sentence.get("id", ""))
    for role, label in (("stereotypical", "stereotype"), ("anti_stereotypical", "anti-stereotype")):
        if not chosen.get(role):
            problems.append(f"no {label} sentence: a pair needs both sentences")
    return chosen, sentence_ids


def _parse_stereoset(path: Path) -> list[ParsedPair]:
    text = read_text(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFailed([f"{path}:{exc.lineno}: not JSON ({exc.msg} at column {exc.colno})"]) from None
    data = document.get("data") if isinstance(document, dict) else None
    items = data.get("intrasentence") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ImportFailed([f"{path}:1: expected StereoSet's format, {{'data': {{'intrasentence': [...]}}}}"])
    ids = [str(item.get("id", "")) if isinstance(item, dict) else "" for item in items]
    lines = _item_lines(text, ids)
    errors: list[str] = []
    pairs: list[ParsedPair] = []
    seen: dict[str, int] = {}
    for number, (item, item_id, line) in enumerate(zip(items, ids, lines, strict=True), start=1):
        where = f"{path}:{line}: intrasentence item {number}"
        if not isinstance(item, dict):
            errors.append(f"{where}: not an object")
            continue
        problems = []
        if not item_id.strip():
            problems.append("no id")
        elif item_id in seen:
            problems.append(f"pair id {item_id!r} already on line {seen[item_id]}")
        seen.setdefault(item_id, line)
        chosen, sentence_ids = _stereoset_sentences(item.get("sentences"), problems)
        bias_type = str(item.get("bias_type") or "").strip()
        if not bias_type:
            problems.append("empty bias_type")
        if problems:
            errors.extend(f"{where}: {problem}" for problem in problems)
            continue
        extra = {"target": item.get("target", ""), "context": item.get("context", ""), "sentence_ids": sentence_ids}
        pairs.append(
            ParsedPair(
                item_id,
                line,
                chosen["stereotypical"],
                chosen["anti_stereotypical"],
                bias_type,
                unrelated=chosen.get("unrelated", ""),
                extra=extra,
            )
        )
    if errors:
        raise ImportFailed(errors)
    return pairs


@transaction.atomic
def pairs_write(*, name: str, kind: str, source: Path, stored_signature: str, pairs: list[ParsedPair]) -> bool:
    """Write the dataset and its pairs in one transaction; True when it was created, False when the same import
    was there already. Another import under the name is refused."""
    existing = Dataset.objects.select_for_update().filter(name=name).first()
    if existing is None:
        try:
            with transaction.atomic():
                existing = Dataset.objects.create(
                    name=name, kind=kind, source=str(source), import_signature=stored_signature
                )
        except IntegrityError:
            existing = Dataset.objects.get(name=name)  # a concurrent import of the same name came first
        else:
            Pair.objects.bulk_create(
                (
                    Pair(
                        dataset=existing,
                        source_id=p.source_id,
                        line=p.line,
                        ordinal=ordinal,
                        stereotypical=p.stereotypical,
                        anti_stereotypical=p.anti_stereotypical,
                        unrelated=p.unrelated,
                        bias_type=p.bias_type,
                        extra=p.extra,
                    )
                    for ordinal, p in enumerate(pairs)
                ),
                batch_size=2000,
            )
            return True
    if existing.import_signature != stored_signature:
        raise ImportFailed(
            [f"dataset {name!r} was already imported from other files or arguments; import this one under another "
             "name (--name)"]
        )  # fmt: skip
    return False


def dataset_import_pairs(*, kind: DatasetKind, path: Path, name: str, bias_type: str | None = None) -> PairImportResult:
    """Import a CrowS-Pairs CSV or a StereoSet JSON file as one dataset of pairs (of one bias type, if given)."""
    parsed = _parse_crows(path) if kind == DatasetKind.CROWS_PAIRS else _parse_stereoset(path)
    kept = [p for p in parsed if bias_type is None or p.bias_type == bias_type]
    skipped: dict[str, int] = {}
    for p in parsed:
        if bias_type is not None and p.bias_type != bias_type:
            skipped[p.bias_type] = skipped.get(p.bias_type, 0) + 1
    if not kept:
        found = ", ".join(sorted({p.bias_type for p in parsed})) or "none"
        what = f"of bias type {bias_type!r} " if bias_type is not None else ""
        raise ImportFailed([f"{path}: no pairs {what}(bias types in the file: {found})"])
    stored_signature = signature(kind, path.read_bytes(), bias_type)
    created = pairs_write(name=name, kind=kind, source=path, stored_signature=stored_signature, pairs=kept)
    dataset = Dataset.objects.get(name=name)
    return PairImportResult(dataset=dataset, created=created, pairs=dataset.pairs.count(), skipped=skipped)


def _command(kind: DatasetKind):
    def command_import(name: str, options: dict[str, Any]) -> PairImportResult:
        """`import_dataset crows-pairs|stereoset --file F [--bias-type gender]`."""
        for option in ("templates", "names_dir", "codebook", "names"):
            if options.get(option) is not None:
                raise CommandError(f"{kind.value} reads --file only (not --{option.replace('_', '-')})")
        if options.get("file") is None:
            raise CommandError(f"{kind.value} needs --file PATH")
        bias_type = (options.get("bias_type") or "").strip() or None
        return dataset_import_pairs(kind=kind, path=options["file"], name=name, bias_type=bias_type)

    return command_import


def pair_export_rows(dataset: Any, codebook: Any = None) -> Iterator[dict]:
    """`export_instances` of a pair dataset: its pairs in file order."""
    for pair in Pair.objects.filter(dataset=dataset).order_by("ordinal").iterator(chunk_size=2000):
        yield {
            "pair": pair.source_id,
            "stereotypical": pair.stereotypical,
            "anti_stereotypical": pair.anti_stereotypical,
            "unrelated": pair.unrelated,
            "bias_type": pair.bias_type,
        }


CROWS_PAIRS = DatasetKindSpec(
    name=DatasetKind.CROWS_PAIRS.value,
    kind=DatasetKind.CROWS_PAIRS,
    codebook=None,
    command_import=_command(DatasetKind.CROWS_PAIRS),
    export_columns=PAIR_EXPORT_COLUMNS,
    export_rows=pair_export_rows,
    reads_template_file=False,
    pairs=True,
)
STEREOSET = DatasetKindSpec(
    name=DatasetKind.STEREOSET.value,
    kind=DatasetKind.STEREOSET,
    codebook=None,
    command_import=_command(DatasetKind.STEREOSET),
    export_columns=PAIR_EXPORT_COLUMNS,
    export_rows=pair_export_rows,
    reads_template_file=False,
    pairs=True,
)
