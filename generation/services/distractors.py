"""RUFF with distractors: read the task and context files, build the instances in RUFF's order, draw RUFF's sample,
and stream them into the database (docs/domain.md, 'RUFF with distractors').

The full set is 5.6 M rows, so nothing here holds it: `_walk` enumerates the construction order as small tuples, texts
are built from pre-filled sentences only for the rows that are written, and the rows go to the database in batches
(PostgreSQL's COPY, batched inserts elsewhere). The input data is RUFF's (AGPL-3.0; see the NOTICE beside it).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import NamedTuple

from django.db import connection, transaction

from common.safe_csv import SafeDictWriter
from generation.models import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.pronouns import BASES, FORMS, RUFF_MASKS, codebook_for
from generation.services.datasets import ImportFailed, _read_rows

TASK_COLUMNS = ("occupation", "participant", "sentence", "pronoun_type", "word")
CONTEXT_COLUMNS = ("pronoun_type", "polarity", "explicit_template", "implicit_template")
PERSON = "$OCCUPATION/PARTICIPANT"
POLARITIES = ("positive", "negative")
COUNTS = (0, 1, 2, 3, 4, 5)
SAMPLE_SEEDS = (13, 17, 19)
SAMPLE_SEED_CHOICES = [*(str(seed) for seed in SAMPLE_SEEDS), "none"]  # as the command, the form and the API take them
CONTEXT_ROWS = 10  # per pronoun type: 5 contents x 2 polarities
CONTENTS = 5
BATCH = 5000
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
        return RUFF_MASKS[self.marker]


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
    codebook = codebook_for(DatasetKind.RUFF)
    return tuple(codebook.surface(base, RUFF_MASKS[marker]) for base in BASES)


def _placeholders_ok(text: str, allowed: set[str]) -> list[str]:
    return sorted(set(_PLACEHOLDER.findall(text)) - allowed)


def _task_rows_read(task_path: Path, errors: list[str]) -> list[TaskRow]:
    tasks: list[TaskRow] = []
    for line, row in _read_rows(task_path, delimiter="\t", required=TASK_COLUMNS):
        where = f"{task_path}:{line}"
        marker, sentence = row["pronoun_type"].strip(), row["sentence"]
        values = {key: row[key].strip() for key in ("occupation", "participant", "word")}
        if marker not in RUFF_MASKS:
            errors.append(f"{where}: unknown pronoun_type {marker!r} (expected one of {', '.join(RUFF_MASKS)})")
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
    contexts: dict[str, list[ContextRow]] = {marker: [] for marker in RUFF_MASKS}
    for line, row in _read_rows(context_path, delimiter="\t", required=CONTEXT_COLUMNS):
        where = f"{context_path}:{line}"
        marker, polarity = row["pronoun_type"].strip(), row["polarity"].strip()
        explicit, implicit = row["explicit_template"], row["implicit_template"]
        if marker not in RUFF_MASKS:
            errors.append(f"{where}: unknown pronoun_type {marker!r} (expected one of {', '.join(RUFF_MASKS)})")
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


def _partners(rows: list[ContextRow], i: int) -> list[tuple[int, list[int]]]:
    """(j, S) for intro row i: explicit rows j of other content and other polarity, each with its 4 implicit rows k
    (k != i, k != j, polarity of j), all in file order."""
    pairs = []
    for j, row in enumerate(rows):
        if j % CONTENTS != i % CONTENTS and row.polarity != rows[i].polarity:
            others = [k for k, r in enumerate(rows) if k not in (i, j) and r.polarity == row.polarity]
            pairs.append((j, others))
    return pairs


def _orders(count: int, others: list[int]) -> list[tuple[int, ...]]:
    """The implicit sentences of each row with `count` distractors, in RUFF's order."""
    if count == 1:
        return [()]
    if count == 2:
        return [(k,) for k in others]
    if count == 3:
        return list(itertools.permutations(others, 2))
    return [order[: count - 1] for order in itertools.permutations(others)]


class Step(NamedTuple):
    """One row of the construction, before its text is built."""

    at: int  # place within its distractor count
    task: int
    i: int
    p1: int  # position in the slot's forms
    j: int | None = None
    p2: int | None = None
    ks: tuple[int, ...] = ()


def _walk(sources: Sources, count: int) -> Iterator[Step]:
    """The construction order of docs/domain.md, 'RUFF with distractors', for one distractor count."""
    index = 0
    for t, task in enumerate(sources.tasks):
        rows = sources.contexts[task.marker]
        for i in range(len(rows)):
            partners = _partners(rows, i)
            for p1 in range(len(BASES)):
                if count == 0:
                    yield Step(index, t, i, p1)
                    index += 1
                    continue
                for j, others in partners:
                    orders = _orders(count, others)
                    for p2 in range(len(BASES)):
                        if p2 == p1:
                            continue
                        for ks in orders:
                            yield Step(index, t, i, p1, j, p2, ks)
                            index += 1


def _block(sources: Sources, marker: str, count: int, i: int) -> int:
    """Rows per (task, intro row i, form) with `count` distractors."""
    if count == 0:
        return 1
    return sum(len(_orders(count, others)) * (len(BASES) - 1) for _, others in _partners(sources.contexts[marker], i))


def distractor_counts(sources: Sources) -> dict[int, int]:
    """The number of rows per distractor count (7,200 / 86,400 / 345,600 / 1,036,800 / 2,073,600 / 2,073,600 for
    RUFF's files), without building them."""
    return {
        count: sum(
            _block(sources, task.marker, count, i) * len(BASES)
            for task in sources.tasks
            for i in range(len(sources.contexts[task.marker]))
        )
        for count in COUNTS
    }


class Built(NamedTuple):
    """One instance row as the import writes it."""

    ordinal: int
    draw: int
    task: int
    pronoun: str
    text: str
    correct_form: str
    distractors: int
    confuse_pronoun: str
    uid: str


class _Builder:
    """The rows of `_walk`'s order, fast: texts are joined from sentences filled and capitalised once, and the
    ordinals and draws are positions in the full construction, whatever part of it an import keeps."""

    def __init__(self, sources: Sources):
        self.sources = sources
        counts = distractor_counts(sources)
        self.count_offset = {c: sum(counts[d] for d in COUNTS if d < c) for c in COUNTS}
        # draw = position among the rows of one (task, form): counts in order, then intro rows in order.
        self.draw_offset: dict[tuple[str, int, int], int] = {}
        for marker, rows in sources.contexts.items():
            position = 0
            for count in COUNTS:
                for i in range(len(rows)):
                    self.draw_offset[marker, count, i] = position
                    position += _block(sources, marker, count, i)

    def _explicit(self, marker: str, row: int, person: str, surface: str) -> str:
        template = self.sources.contexts[marker][row].explicit
        return template.replace(PERSON, person).replace(marker, surface).capitalize()

    def _implicit(self, marker: str, row: int, surface: str) -> str:
        return self.sources.contexts[marker][row].implicit.replace(marker, surface).capitalize()

    def rows(self, count: int, keep: set[int] | None = None) -> Iterator[Built]:
        """The rows of one count in construction order (only the indexes in `keep`, when given)."""
        index = 0
        offset = self.count_offset[count]
        for t, task in enumerate(self.sources.tasks):
            marker = task.marker
            contexts = self.sources.contexts[marker]
            surfaces = _surfaces(marker)
            tail = " " + task.sentence
            implicit = {
                p2: [" " + self._implicit(marker, k, s2) for k in range(len(contexts))]
                for p2, s2 in enumerate(surfaces)
            }
            for i in range(len(contexts)):
                draw_offset = self.draw_offset[marker, count, i]
                partners = [
                    (j, [(ks, f"eo{i}_ep{j}" + "".join(f"_ip{k}" for k in ks)) for ks in _orders(count, others)])
                    for j, others in (_partners(contexts, i) if count else [])
                ]
                for p1, s1 in enumerate(surfaces):
                    intro = self._explicit(marker, i, task.occupation, s1)
                    base = BASES[p1]
                    if count == 0:
                        if keep is None or index in keep:
                            yield Built(offset + index, draw_offset, t, base, intro + tail, s1, 0, "", f"eo{i}")
                        index += 1
                        continue
                    local = 0
                    for j, orders in partners:
                        for p2, s2 in enumerate(surfaces):
                            if p2 == p1:
                                continue
                            head = intro + " " + self._explicit(marker, j, task.participant, s2)
                            filled = implicit[p2]
                            for ks, uid in orders:
                                if keep is None or index in keep:
                                    text = head + "".join([filled[k] for k in ks]) + tail
                                    yield Built(offset + index, draw_offset + local, t, base, text, s1, count, s2, uid)
                                index += 1
                                local += 1


def distractor_sample(sources: Sources, *, count: int, seed: int) -> set[int]:
    """RUFF's evaluation sample (its `sample_templates.py`), as indexes within the count: the rows whose word is the
    occupation, grouped by word, pronoun_type and pronoun (and confuse_pronoun when there are distractors); 3 rows per
    group without distractors, 1 with. pandas itself draws, on a frame of only those columns in construction order, so
    the groups, their order and the random state's sequence are RUFF's."""
    import pandas as pd  # only the sample needs it

    index: list[int] = []
    columns: dict[str, list[str]] = {"word": [], "pronoun_type": [], "pronoun": [], "confuse_pronoun": []}
    for step in _walk(sources, count):
        task = sources.tasks[step.task]
        if task.word != task.occupation:
            continue
        surfaces = sources.surfaces(task.marker)
        index.append(step.at)
        columns["word"].append(task.word)
        columns["pronoun_type"].append(task.marker)
        columns["pronoun"].append(surfaces[step.p1])
        columns["confuse_pronoun"].append("" if step.p2 is None else surfaces[step.p2])
    frame = pd.DataFrame(columns, index=index)
    if count == 0:
        picked = frame.groupby(["word", "pronoun_type", "pronoun"]).sample(3, random_state=seed)
    else:
        picked = frame.groupby(["word", "pronoun_type", "pronoun", "confuse_pronoun"]).sample(1, random_state=seed)
    return {int(i) for i in picked.index}


@dataclass
class DistractorImport:
    dataset: Dataset
    by_distractors: dict[str, int]
    written: int = 0
    seconds: float = 0.0
    sample_seed: int | None = None
    counts: dict[int, int] = field(default_factory=dict)

    @property
    def instances(self) -> int:
        return sum(self.by_distractors.values())

    @property
    def rows_per_second(self) -> float:
        return self.written / self.seconds if self.seconds else 0.0

    def as_json(self) -> dict:
        return {
            "dataset": self.dataset.name,
            "instances": self.instances,
            "by_distractors": self.by_distractors,
            "sample_seed": self.sample_seed,
            "written": self.written,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
        }


_COLUMNS = (
    "dataset_id",
    "template_id",
    "pronoun",
    "draw",
    "name",
    "text",
    "correct_form",
    "ordinal",
    "distractors",
    "other_person",
    "confuse_pronoun",
    "ruff_uid",
    "word",
    "sample_13",
    "sample_17",
    "sample_19",
)


_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: str) -> str:
    """A value in PostgreSQL's COPY text format."""
    return value.translate(_ESCAPES)


def _write_rows(dataset_id: int, templates: list[int], sources: Sources, rows: Iterable[Built]) -> int:
    """Stream rows into the instance table: COPY on PostgreSQL, batched inserts elsewhere. Memory stays one batch."""
    written = 0
    tasks = sources.tasks
    if connection.vendor == "postgresql":
        # A measured reason for vendor SQL (benchmarks/bench_distractors.py): 5.6 M rows through the ORM take far
        # longer than COPY, and this is a machine-driven bulk load, not a path a person waits on row by row.
        table = connection.ops.quote_name(Instance._meta.db_table)
        sql = f"COPY {table} ({', '.join(_COLUMNS)}) FROM STDIN"
        pieces = [t.sentence for t in tasks] + [
            text for rows_ in sources.contexts.values() for r in rows_ for text in (r.explicit, r.implicit)
        ]
        people = [(_copy_text(task.participant), _copy_text(task.word)) for task in tasks]
        escape = any(char in piece for piece in pieces for char in "\\\t\n\r")
        with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
            lines: list[str] = []
            for row in rows:
                participant, word = people[row.task]
                text = _copy_text(row.text) if escape else row.text
                lines.append(
                    f"{dataset_id}\t{templates[row.task]}\t{row.pronoun}\t{row.draw}\t\t{text}\t{row.correct_form}\t"
                    f"{row.ordinal}\t{row.distractors}\t{participant}\t{row.confuse_pronoun}\t{row.uid}\t{word}\tf\tf\tf\n"
                )
                if len(lines) >= BATCH:
                    copy.write("".join(lines))
                    written += len(lines)
                    lines = []
            copy.write("".join(lines))
        return written + len(lines)
    batch: list[Instance] = []
    for row in rows:
        task = tasks[row.task]
        batch.append(
            Instance(
                dataset_id=dataset_id,
                template_id=templates[row.task],
                pronoun=row.pronoun,
                draw=row.draw,
                text=row.text,
                correct_form=row.correct_form,
                ordinal=row.ordinal,
                distractors=row.distractors,
                other_person=task.participant,
                confuse_pronoun=row.confuse_pronoun,
                ruff_uid=row.uid,
                word=task.word,
            )
        )
        if len(batch) >= BATCH:
            Instance.objects.bulk_create(batch)
            written += len(batch)
            batch = []
    Instance.objects.bulk_create(batch)
    return written + len(batch)


def _dataset_for(sources: Sources, name: str) -> tuple[Dataset, list[int]]:
    dataset = Dataset.objects.select_for_update().filter(name=name).first()
    if dataset is not None:
        if dataset.import_signature != sources.signature:
            raise ImportFailed(
                [f"dataset {name!r} was imported from other files; import these under another name (--name)"]
            )
    else:
        dataset = Dataset.objects.create(
            name=name, kind=DatasetKind.RUFF, source=sources.source[:500], import_signature=sources.signature
        )
        codebook = codebook_for(DatasetKind.RUFF)
        PronounForm.objects.bulk_create(
            PronounForm(dataset=dataset, base=base, form=form, surface=codebook.surface(base, form))
            for base in BASES
            for form in FORMS
            if form in codebook.forms
        )
        Template.objects.bulk_create(
            Template(
                dataset=dataset,
                source_id=f"{t}/{task.occupation}/{task.participant}/{task.form}",
                line=task.line,
                text=task.sentence,
                mask=task.marker,
                form=task.form,
                meta={"occupation": task.occupation, "participant": task.participant, "word": task.word},
            )
            for t, task in enumerate(sources.tasks)
        )
    templates = list(dataset.templates.order_by("line").values_list("pk", flat=True))
    return dataset, templates


@transaction.atomic
def dataset_import_ruff_distractors(
    *,
    task_path: Path,
    context_path: Path,
    distractors: Iterable[int] = COUNTS,
    sample_seed: int | None = None,
    name: str = "ruff-distractors",
) -> DistractorImport:
    """Import RUFF's distractor sets (all counts, or the ones asked for), whole or as RUFF's sample for one seed.

    A dataset gathers what its imports bring: importing another count or seed adds the rows it lacks (same ordinals:
    an instance's ordinal is its place in the full construction order) and marks the sample's members, so a second
    run of the same import writes nothing."""
    counts_asked = sorted(set(distractors))
    bad = [c for c in counts_asked if c not in COUNTS]
    if bad or not counts_asked:
        raise ImportFailed([f"--distractors must be among 0-5 (got {', '.join(map(str, bad)) or 'nothing'})"])
    if sample_seed is not None and sample_seed not in SAMPLE_SEEDS:
        seeds = ", ".join(map(str, SAMPLE_SEEDS))
        raise ImportFailed([f"--sample-seed must be one of {seeds} or none (got {sample_seed})"])
    sources = distractor_sources_read(task_path=task_path, context_path=context_path)
    full = distractor_counts(sources)
    dataset, templates = _dataset_for(sources, name)
    builder = _Builder(sources)
    started = time.perf_counter()
    result = DistractorImport(dataset=dataset, by_distractors={}, sample_seed=sample_seed, counts=full)
    for count in counts_asked:
        keep = None if sample_seed is None else distractor_sample(sources, count=count, seed=sample_seed)
        stored = Instance.objects.filter(dataset=dataset, distractors=count)
        present: set[int] = set()
        if stored.count() == full[count]:
            present = set(range(full[count]))
        elif stored.exists():
            offset = builder.count_offset[count]
            present = {o - offset for o in stored.values_list("ordinal", flat=True).iterator(chunk_size=10000)}
        wanted = set(range(full[count])) if keep is None else keep
        missing = None if keep is None and not present else (wanted - present)
        if missing is None or missing:
            result.written += _write_rows(dataset.pk, templates, sources, builder.rows(count, missing))
        if keep is not None:
            ordinals = sorted(builder.count_offset[count] + i for i in keep)
            for start in range(0, len(ordinals), 1000):
                Instance.objects.filter(dataset=dataset, ordinal__in=ordinals[start : start + 1000]).update(
                    **{f"sample_{sample_seed}": True}
                )
        result.by_distractors[str(count)] = len(wanted)
    result.seconds = time.perf_counter() - started
    return result


RUFF_EXPORT_COLUMNS = (
    "uid",
    "occupation",
    "participant",
    "word",
    "pronoun_type",
    "pronoun",
    "confuse_pronoun",
    "distractors",
    "text",
)
OTHER_EXPORT_COLUMNS = ("ordinal", "template", "form", "pronoun", "name", "correct_form", "text")


def instances_export(*, dataset: Dataset, path: Path) -> int:
    """One CSV row per instance in dataset order, streamed (a distractor set has 5.6 M rows). RUFF's datasets get
    RUFF's own columns, `text` with its slot marker still in place as RUFF writes it; others get the stored fields.
    The file appears complete or not at all."""
    ruff = dataset.kind == DatasetKind.RUFF
    instances = Instance.objects.filter(dataset=dataset).order_by("ordinal")
    templates = {t.pk: t for t in dataset.templates.all()}
    partial = path.with_name(path.name + ".part")
    written = 0
    with partial.open("w", newline="", encoding="utf-8") as handle:
        writer = SafeDictWriter(handle, fieldnames=RUFF_EXPORT_COLUMNS if ruff else OTHER_EXPORT_COLUMNS)
        writer.writeheader()
        fields: tuple[str, ...] = ("template_id", "pronoun", "name", "text", "correct_form", "ordinal")
        fields += ("distractors", "other_person", "confuse_pronoun", "ruff_uid", "word")
        for values in instances.values_list(*fields).iterator(chunk_size=5000):
            row = dict(zip(fields, values, strict=True))
            template = templates[row["template_id"]]
            if ruff:
                meta = template.meta
                writer.writerow(
                    {
                        "uid": row["ruff_uid"] or meta.get("uid", ""),
                        "occupation": meta.get("occupation", ""),
                        "participant": row["other_person"] or meta.get("participant", ""),
                        "word": row["word"] or meta.get("word", ""),
                        "pronoun_type": template.mask,
                        "pronoun": row["correct_form"],
                        "confuse_pronoun": row["confuse_pronoun"],
                        "distractors": row["distractors"] or 0,
                        "text": row["text"],
                    }
                )
            else:
                writer.writerow(
                    {
                        "ordinal": row["ordinal"],
                        "template": template.source_id,
                        "form": template.form,
                        "pronoun": row["pronoun"],
                        "name": row["name"],
                        "correct_form": row["correct_form"],
                        "text": row["text"],
                    }
                )
            written += 1
    partial.replace(path)
    return written
