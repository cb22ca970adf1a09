"""RUFF with distractors, its two files (docs/domain.md, 'RUFF with distractors'): RUFF's task.tsv and context.tsv,
read and checked whole, every problem named as `file:line: ...`. The input data is RUFF's (AGPL-3.0; see the NOTICE
beside it).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from generation.datasets.files import ImportFailed, read_rows
from generation.datasets.ruff import CODEBOOK, MASKS
from generation.pronouns import BASES

TASK_COLUMNS = ("occupation", "participant", "sentence", "pronoun_type", "word")
CONTEXT_COLUMNS = ("pronoun_type", "polarity", "explicit_template", "implicit_template")
PERSON = "$OCCUPATION/PARTICIPANT"
POLARITIES = ("positive", "negative")
CONTEXT_ROWS = 10  # per pronoun type: 5 contents x 2 polarities
CONTENTS = 5
_PLACEHOLDER = re.compile(r"\$[A-Z_]+(?:/[A-Z_]+)?")


@dataclass(frozen=True)
class TaskRow:
    line: int
    occupation: str
    participant: str
    sentence: str
    marker: str
    word: str

    @property
    def form(self) -> str:
        return MASKS[self.marker]


@dataclass(frozen=True)
class ContextRow:
    line: int
    polarity: str
    explicit: str
    implicit: str


@dataclass(frozen=True)
class Sources:
    tasks: list[TaskRow]
    contexts: dict[str, list[ContextRow]]  # pronoun type -> its rows in file order
    signature: str
    source: str

    @staticmethod
    def surfaces(marker: str) -> tuple[str, ...]:
        return _surfaces(marker)


@cache
def _surfaces(marker: str) -> tuple[str, ...]:
    """The slot's forms in RUFF's order: he/she/they/xe, him/her/them/xem, his/her/their/xyr."""
    return tuple(CODEBOOK.surface(base, MASKS[marker]) for base in BASES)


def _placeholders_ok(text: str, allowed: set[str]) -> list[str]:
    return sorted(set(_PLACEHOLDER.findall(text)) - allowed)


def _task_rows_read(task_path: Path, errors: list[str]) -> list[TaskRow]:
    tasks: list[TaskRow] = []
    for line, row in read_rows(task_path, delimiter="\t", required=TASK_COLUMNS):
        where = f"{task_path}:{line}"
        marker, sentence = row["pronoun_type"].strip(), row["sentence"]
        values = {key: row[key].strip() for key in ("occupation", "participant", "word")}
        if marker not in MASKS:
            errors.append(f"{where}: unknown pronoun_type {marker!r} (expected one of {', '.join(MASKS)})")
            continue
        if sentence.count(marker) != 1:
            errors.append(
                f"{where}: sentence must hold its slot {marker} exactly once (found {sentence.count(marker)})"
            )
        unknown = _placeholders_ok(sentence, {marker})
        if unknown:
            errors.append(f"{where}: unknown placeholder(s) {', '.join(unknown)} (a task sentence has only {marker})")
        empty = [key for key, value in values.items() if not value]
        if empty:
            errors.append(f"{where}: empty {', '.join(empty)}")
        tasks.append(TaskRow(line, values["occupation"], values["participant"], sentence, marker, values["word"]))
    return tasks


def _context_rows_read(context_path: Path, errors: list[str]) -> dict[str, list[ContextRow]]:
    contexts: dict[str, list[ContextRow]] = {marker: [] for marker in MASKS}
    for line, row in read_rows(context_path, delimiter="\t", required=CONTEXT_COLUMNS):
        where = f"{context_path}:{line}"
        marker, polarity = row["pronoun_type"].strip(), row["polarity"].strip()
        explicit, implicit = row["explicit_template"], row["implicit_template"]
        if marker not in MASKS:
            errors.append(f"{where}: unknown pronoun_type {marker!r} (expected one of {', '.join(MASKS)})")
            continue
        if polarity not in POLARITIES:
            errors.append(f"{where}: polarity must be positive or negative (got {polarity!r})")
        if explicit.count(PERSON) != 1 or explicit.count(marker) != 1:
            errors.append(f"{where}: explicit_template must hold {PERSON} and {marker} once each")
        if implicit.count(marker) != 1:
            errors.append(f"{where}: implicit_template must hold {marker} exactly once")
        for column, text, allowed in (("explicit", explicit, {PERSON, marker}), ("implicit", implicit, {marker})):
            unknown = _placeholders_ok(text, allowed)
            if unknown:
                errors.append(f"{where}: unknown placeholder(s) {', '.join(unknown)} in {column}_template")
        contexts[marker].append(ContextRow(line, polarity, explicit, implicit))
    return contexts


def distractor_sources_read(*, task_path: Path, context_path: Path) -> Sources:
    """Both files, validated whole: every problem is reported with file:line and nothing is returned unless all is good."""
    errors: list[str] = []
    tasks = _task_rows_read(task_path, errors)
    contexts = _context_rows_read(context_path, errors)
    for marker in sorted({task.marker for task in tasks}):
        rows = contexts[marker]
        if len(rows) != CONTEXT_ROWS or any(
            sum(r.polarity == polarity for r in rows) != CONTENTS for polarity in POLARITIES
        ):
            errors.append(
                f"{context_path}: pronoun_type {marker} has {len(rows)} context rows; it needs {CONTEXT_ROWS} "
                f"({CONTENTS} positive, {CONTENTS} negative)"
            )
    if errors:
        raise ImportFailed(errors)
    digest = hashlib.sha256(task_path.read_bytes() + b"\0" + context_path.read_bytes()).hexdigest()
    return Sources(tasks, contexts, digest, f"{task_path} + {context_path}")
