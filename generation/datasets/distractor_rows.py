"""RUFF with distractors, its rows (docs/domain.md, 'RUFF with distractors'): the construction order, RUFF's
sample, and streaming the rows into the database.

The full set is 5.6 M rows, so nothing here holds its texts: the sample is drawn on a frame of only the columns RUFF
groups by, built block by block as integer codes, texts are built from pre-filled sentences only for the rows that are
written (blocks without a kept row are stepped over whole), and the rows go to the database in batches (PostgreSQL's
COPY, batched inserts elsewhere).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from django.db import connection

from common.rows import rows_write as plain_rows_write
from generation.datasets.distractor_sources import CONTENTS, PERSON, ContextRow, Sources
from generation.models import Instance
from generation.pronouns import BASES

COUNTS = (0, 1, 2, 3, 4, 5)
BATCH = 5000


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


def _confusions(rows: list[ContextRow], count: int, i: int, p1: int) -> list[int | None]:
    """The other person's form (its position in the slot's forms) of each row of one (task, intro row i, form p1), in
    construction order: per partner j, per form p2 other than p1, one row per order of its implicit sentences; None
    without distractors (one row)."""
    if count == 0:
        return [None]
    return [
        p2
        for _, others in _partners(rows, i)
        for p2 in range(len(BASES))
        if p2 != p1
        for _ in range(len(_orders(count, others)))
    ]


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


class Builder:
    """The rows in construction order, fast: texts are joined from sentences filled and capitalised once, and the
    ordinals and draws are positions in the full construction, whatever part of it an import keeps."""

    def __init__(self, sources: Sources):
        self.sources = sources
        self._made: dict[tuple[str, int, int], list[tuple[int, list[tuple[tuple[int, ...], str]]]]] = {}
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

    def _partners(self, marker: str, count: int, i: int) -> list[tuple[int, list[tuple[tuple[int, ...], str]]]]:
        """Intro row i's partners j, each with its orders of implicit rows and their uids (the same for every task of
        the slot)."""
        key = (marker, count, i)
        if key not in self._made:
            self._made[key] = [
                (j, [(ks, f"eo{i}_ep{j}" + "".join(f"_ip{k}" for k in ks)) for ks in _orders(count, others)])
                for j, others in (_partners(self.sources.contexts[marker], i) if count else [])
            ]
        return self._made[key]

    def rows(self, count: int, keep: set[int] | None = None) -> Iterator[Built]:
        """The rows of one count in construction order (only the indexes in `keep`, when given)."""
        index = 0
        offset = self.count_offset[count]
        wanted = None if keep is None else sorted(keep)
        for t, task in enumerate(self.sources.tasks):
            marker = task.marker
            contexts = self.sources.contexts[marker]
            surfaces = Sources.surfaces(marker)
            tail = " " + task.sentence
            implicit = {
                p2: [" " + self._implicit(marker, k, s2) for k in range(len(contexts))]
                for p2, s2 in enumerate(surfaces)
            }
            for i in range(len(contexts)):
                draw_offset = self.draw_offset[marker, count, i]
                partners = self._partners(marker, count, i)
                size = 1 if count == 0 else sum(len(orders) for _, orders in partners) * (len(surfaces) - 1)
                for p1, s1 in enumerate(surfaces):
                    if wanted is not None and bisect.bisect_left(wanted, index) == bisect.bisect_left(
                        wanted, index + size
                    ):
                        index += size  # none of this form's rows is kept
                        continue
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
    the groups, their order and the random state's sequence are RUFF's.

    The columns are categorical, their categories sorted as pandas sorts the strings themselves (by code point): the
    groups come in the same order with the same members, so the draw is the same, and the frame of millions of rows is
    built and split in a fraction of the time its strings take."""
    import numpy as np  # only the sample needs them

    from common.frames import pd

    kept = [task for task in sources.tasks if task.word == task.occupation]
    surfaces = sorted({surface for task in kept for surface in sources.surfaces(task.marker)})
    categories = {
        "word": sorted({task.word for task in kept}),
        "pronoun_type": sorted({task.marker for task in kept}),
        "pronoun": surfaces,
        "confuse_pronoun": [""] if count == 0 else surfaces,
    }
    code = {column: {value: n for n, value in enumerate(values)} for column, values in categories.items()}
    pieces: dict[str, list[np.ndarray]] = {"index": [], **{column: [] for column in categories}}
    # The construction order block by block, one block per (task, intro row, form): its rows differ only in the other
    # person's form, whose sequence depends on the slot, the intro row and the form alone.
    blocks: dict[tuple[str, int, int], np.ndarray] = {}
    at = 0
    for task in sources.tasks:
        rows = sources.contexts[task.marker]
        forms = sources.surfaces(task.marker)
        for i in range(len(rows)):
            for p1 in range(len(BASES)):
                key = (task.marker, i, p1)
                if key not in blocks:
                    others = ["" if p2 is None else forms[p2] for p2 in _confusions(rows, count, i, p1)]
                    blocks[key] = np.array([code["confuse_pronoun"].get(other, -1) for other in others], dtype=np.int64)
                block = blocks[key]
                size = len(block)
                if task.word == task.occupation:
                    pieces["index"].append(np.arange(at, at + size, dtype=np.int64))
                    pieces["word"].append(np.full(size, code["word"][task.word], dtype=np.int64))
                    pieces["pronoun_type"].append(np.full(size, code["pronoun_type"][task.marker], dtype=np.int64))
                    pieces["pronoun"].append(np.full(size, code["pronoun"][forms[p1]], dtype=np.int64))
                    pieces["confuse_pronoun"].append(block)
                at += size
    joined = {
        column: np.concatenate(arrays) if arrays else np.array([], dtype=np.int64) for column, arrays in pieces.items()
    }
    frame = pd.DataFrame(
        {column: pd.Categorical.from_codes(joined[column], categories=values) for column, values in categories.items()},
        index=joined["index"],
    )
    if count == 0:
        grouped = frame.groupby(["word", "pronoun_type", "pronoun"], observed=True)
        picked = grouped.sample(3, random_state=seed)
    else:
        grouped = frame.groupby(["word", "pronoun_type", "pronoun", "confuse_pronoun"], observed=True)
        picked = grouped.sample(1, random_state=seed)
    return {int(i) for i in picked.index}


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


def distractor_rows_write(dataset_id: int, templates: list[int], sources: Sources, rows: Iterable[Built]) -> int:
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
    # Elsewhere (SQLite), the same columns as plain rows through `common.rows`.
    return plain_rows_write(
        Instance,
        _FALLBACK_COLUMNS,
        (
            (
                dataset_id, templates[row.task], row.pronoun, row.draw, row.text, row.correct_form, row.ordinal,
                row.distractors, tasks[row.task].participant, row.confuse_pronoun, row.uid, tasks[row.task].word,
            )
            for row in rows
        ),
    )  # fmt: skip


# The columns of a distractor instance that are not their defaults (`name` and the sample flags are).
_FALLBACK_COLUMNS = (
    "dataset_id", "template_id", "pronoun", "draw", "text", "correct_form", "ordinal", "distractors", "other_person",
    "confuse_pronoun", "ruff_uid", "word",
)  # fmt: skip
