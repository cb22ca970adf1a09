"""What every dataset kind declares (`DatasetKindSpec`), and the kinds a dataset can be stored as (`DatasetKind`).

This module imports no model: `generation/models/datasets.py` takes its `kind` choices from here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import models

from generation.contexts import SETTINGS
from generation.pronouns import BASES, Codebook

# A dataset's name (Dataset.name is a slug): also what a templates dataset's label is.
DATASET_NAME = re.compile(r"^[-\w]+$")


class DatasetKind(models.TextChoices):
    """The kinds a Dataset row is stored as (its `kind` column). An import kind may store another's kind: RUFF with
    distractors is stored as `ruff`, since its texts, slots and codebook are RUFF's."""

    MISGENDERED = "misgendered", "MISGENDERED"
    RUFF = "ruff", "RUFF"
    TANGO = "tango", "TANGO"
    TEMPLATES = "templates", "your own templates"
    CROWS_PAIRS = "crows-pairs", "CrowS-Pairs"
    STEREOSET = "stereoset", "StereoSet"
    GIFI = "gifi", "GIFI"


class ImportSummary(Protocol):
    """What an import returns to `import_dataset`: the lines it prints, and its JSON summary (`--json`)."""

    def lines(self) -> list[str]: ...

    def as_json(self) -> dict: ...


@dataclass(frozen=True)
class DatasetKindSpec:
    """One dataset kind: how `import_dataset` reads it, and what the rest of Concord needs to know about its datasets.

    name: the registry key, the `import_dataset` KIND and the default dataset name.
    kind: the `Dataset.kind` its datasets are stored as.
    codebook: its spellings (docs/domain.md, 'Pronouns and codebooks'); None: each dataset brings its own, stored
        with it, and is labelled by its own name rather than by its kind.
    command_import: the `import_dataset` entry, called with the dataset name and the command's options (`templates`,
        `names_dir` and the rest, as argparse gives them); it refuses missing or foreign options with CommandError and
        bad files with ImportFailed.
    reads_template_file: whether the command reads its data from `--templates` (and refuses `--codebook`/`--names`
        unless the kind brings its own codebook).
    settings: the generation settings its jobs have: pre and post, or `open` (TANGO continues the whole context).
    scores_per_generation: the probability score is per generation (Prob-TANGO, after sampling) rather than per
        instance over the mask's candidates.
    pairs: its items are stereotype pairs (`Pair` rows: docs/domain.md, 'Stereotype pair benchmarks'), read from
        `--file`, scored by `pair_score` jobs; it has no templates, instances or generations.
    scores_probability: its jobs score a probability at all (False: GIFI, whose prompts have neither a mask nor
        Prob-TANGO; a job only samples).
    seed_masks: the mask markers of the seed's generations files that mean this kind, with the case each stands
        for (None: the marker does not tell).
    export_columns, export_rows: the CSV `export_instances` writes: its header, and its rows in dataset order,
        from the dataset and its stored codebook (given only to kinds without a codebook of their own).
    """

    name: str
    kind: DatasetKind
    codebook: Codebook | None
    command_import: Callable[[str, dict[str, Any]], ImportSummary]
    export_columns: tuple[str, ...]
    export_rows: Callable[[Any, Codebook | None], Iterator[dict]]
    reads_template_file: bool = True
    settings: tuple[str, ...] = SETTINGS
    scores_per_generation: bool = False
    pairs: bool = False
    scores_probability: bool = True
    seed_masks: Mapping[str, str | None] = field(default_factory=dict)


def builtin_codebook(kind: str, rows: dict[str, tuple[str, ...]], forms: tuple[str, ...]) -> Codebook:
    """A built-in kind's codebook: for each of the 4 BASES, its surfaces of `forms`, in that order."""
    return Codebook(kind, {base: dict(zip(forms, rows[base], strict=True)) for base in BASES})


def instance_rows(dataset: Any) -> Iterator[tuple[dict, Any]]:
    """Each stored instance of the dataset in dataset order, streamed, as (its fields, its template)."""
    templates = {t.pk: t for t in dataset.templates.all()}
    fields: tuple[str, ...] = ("template_id", "pronoun", "name", "text", "correct_form", "ordinal")
    fields += ("distractors", "other_person", "confuse_pronoun", "ruff_uid", "word")
    for values in dataset.instances.order_by("ordinal").values_list(*fields).iterator(chunk_size=5000):
        row = dict(zip(fields, values, strict=True))
        yield row, templates[row["template_id"]]


STORED_EXPORT_COLUMNS = ("ordinal", "template", "form", "pronoun", "name", "correct_form", "text")


def stored_export_rows(dataset: Any, codebook: Codebook | None = None) -> Iterator[dict]:
    """`export_instances`' rows of a kind without columns of its own: the stored fields."""
    for row, template in instance_rows(dataset):
        yield {
            "ordinal": row["ordinal"],
            "template": template.source_id,
            "form": template.form,
            "pronoun": row["pronoun"],
            "name": row["name"],
            "correct_form": row["correct_form"],
            "text": row["text"],
        }
