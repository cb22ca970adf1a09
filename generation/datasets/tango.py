"""TANGO's misgendering subset (docs/domain.md, 'TANGO and Prob-TANGO'): one JSON object a line, each a context
that the model continues whole (the `open` setting). Its probability score is Prob-TANGO, per generation, after
sampling (generation/services/tango.py), not over a mask's candidates.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from common.json_input import json_loads
from generation.contexts import OPEN
from generation.datasets.base import (
    STORED_EXPORT_COLUMNS,
    DatasetKind,
    DatasetKindSpec,
    builtin_codebook,
    stored_export_rows,
)
from generation.datasets.files import ImportFailed, read_text, signature
from generation.datasets.writing import ImportResult, ParsedInstance, ParsedTemplate, dataset_write
from generation.pronouns import BASES, FORMS

NAME = "tango"
CODEBOOK = builtin_codebook(
    DatasetKind.TANGO.value,
    {
        "he": ("he", "him", "his", "his", "himself"),
        "she": ("she", "her", "her", "hers", "herself"),
        "they": ("they", "them", "their", "theirs", "themself"),
        "xe": ("xe", "xir", "xir", "xirs", "xirself"),
    },
    FORMS,
)
# TANGO has no mask: the model continues the whole context. Its instance text is the context followed by this
# marker, so that the context is `text.split(MASK)[0]` as for pre-[MASK].
MASK = "{continuation}"
TANGO_FIELDS = ("template_idx", "ante", "ante_type", "pronoun_family", "template")
_FAMILY = re.compile(r"^[a-z]+$")


def tango_context(template: str) -> str:
    """TANGO's generation context: Python's `str.capitalize()` of the template, as the seed does (it also lower-cases
    the rest of the string, names included). docs/domain.md, 'TANGO and Prob-TANGO'."""
    return template.capitalize()


def _tango_row(line: str) -> tuple[dict, str] | str:
    """One line of TANGO's file: the row and its pronoun family (lower case), or what is wrong with it."""
    try:
        row = json_loads(line)
    except json.JSONDecodeError as exc:
        return f"not a JSON object ({exc.msg} at column {exc.colno})"
    if not isinstance(row, dict):
        return f"expected a JSON object with {', '.join(TANGO_FIELDS)}"
    missing = [name for name in TANGO_FIELDS if name not in row]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    family, template, ante, index = row["pronoun_family"], row["template"], row["ante"], row["template_idx"]
    if not isinstance(family, str) or not _FAMILY.match(family.strip().lower()):
        return f"pronoun_family must be a pronoun such as he, she, they or xe (got {family!r})"
    if not isinstance(template, str) or not template.strip():
        return "template must be a non-empty string"
    if MASK in template:
        return f"template contains {MASK}, which Concord reserves for the continuation"
    if not isinstance(ante, str) or not ante.strip():
        return "ante must be a non-empty string"
    if isinstance(index, bool) or not isinstance(index, int | str) or str(index).strip() == "":
        return f"template_idx must be a number or a string (got {index!r})"
    return row, family.strip().lower()


def _parse_tango(path: Path) -> tuple[list[ParsedInstance], dict[str, int]]:
    """TANGO's `misgendering.jsonl`: one JSON object a line. Families other than Concord's 4 bases (TANGO also has
    ey, fae, ze, ...) are counted and skipped; they are out of scope."""
    codebook = CODEBOOK
    errors: list[str] = []
    instances: list[ParsedInstance] = []
    skipped: dict[str, int] = {}
    seen: dict[str, int] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        read = _tango_row(line)
        if isinstance(read, str):
            errors.append(f"{path}:{number}: {read}")
            continue
        row, family = read
        if family not in BASES:
            skipped[family] = skipped.get(family, 0) + 1
            continue
        template, ante, index = row["template"], row["ante"], row["template_idx"]
        source_id = f"{index}/{ante.strip()}/{family}"
        if source_id in seen:
            errors.append(
                f"{path}:{number}: template_idx {index!r}, ante {ante!r}, {family} already on line {seen[source_id]}"
            )
            continue
        seen[source_id] = number
        meta = {"template_idx": index, "ante": ante, "ante_type": row["ante_type"]}
        parsed = ParsedTemplate(source_id, number, template + MASK, MASK, "nom", meta)
        text = tango_context(template) + MASK
        instances.append(ParsedInstance(parsed, family, 0, ante.strip(), text, codebook.surface(family, "nom")))
    if errors:
        raise ImportFailed(errors)
    if not instances:
        raise ImportFailed([f"{path}: no he, she, they or xe rows"])
    return instances, skipped


def dataset_import_tango(*, templates_path: Path, name: str = NAME) -> ImportResult:
    """TANGO's misgendering subset. Each line is one template and one instance of its pronoun family; the stored
    form is `nom` and the correct form the family's nominative, since a TANGO context has no mask of its own."""
    instances, skipped = _parse_tango(templates_path)
    stored_signature = signature(DatasetKind.TANGO, templates_path.read_bytes())
    result = dataset_write(
        name=name,
        kind=DatasetKind.TANGO,
        codebook=CODEBOOK,
        source=templates_path,
        signature=stored_signature,
        instances=instances,
    )
    result.skipped = skipped
    return result


def command_import(name: str, options: dict[str, Any]) -> ImportResult:
    """`import_dataset tango --templates misgendering.jsonl`."""
    if options["names_dir"] is not None:
        raise CommandError("tango takes no --names-dir: its contexts already hold their names")
    return dataset_import_tango(templates_path=options["templates"], name=name)


TANGO = DatasetKindSpec(
    name=NAME,
    kind=DatasetKind.TANGO,
    codebook=CODEBOOK,
    command_import=command_import,
    export_columns=STORED_EXPORT_COLUMNS,
    export_rows=stored_export_rows,
    settings=(OPEN,),
    scores_per_generation=True,
)
