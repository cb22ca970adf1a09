"""RUFF (docs/domain.md, 'Datasets and contexts'): a TSV of sentences with one slot marker each ($NOM_PRONOUN,
$ACC_PRONOUN, $POSS_PRONOUN), one row per declared pronoun. RUFF with distractors (generation/datasets/
ruff_distractors.py) stores its datasets as this kind, with this codebook and these export columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from generation.datasets.base import DatasetKind, DatasetKindSpec, builtin_codebook, instance_rows
from generation.datasets.files import ImportFailed, read_rows, signature
from generation.datasets.writing import ImportResult, ParsedInstance, ParsedTemplate, dataset_write
from generation.pronouns import BASES, Codebook

NAME = "ruff"
CODEBOOK = builtin_codebook(
    DatasetKind.RUFF.value,
    {
        "he": ("he", "him", "his"),
        "she": ("she", "her", "her"),
        "they": ("they", "them", "their"),
        "xe": ("xe", "xem", "xyr"),
    },
    ("nom", "acc", "pos_dep"),
)
# The slot markers of its templates, with the case each one stands for.
MASKS = {"$NOM_PRONOUN": "nom", "$ACC_PRONOUN": "acc", "$POSS_PRONOUN": "pos_dep"}
RUFF_COLUMNS = ("sentence", "pronoun_type", "pronoun", "uid")


def _parse_ruff(path: Path) -> list[ParsedInstance]:
    codebook = CODEBOOK
    errors: list[str] = []
    templates: dict[str, ParsedTemplate] = {}
    instances: list[ParsedInstance] = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in read_rows(path, delimiter="\t", required=RUFF_COLUMNS):
        where = f"{path}:{line}"
        marker, sentence, surface, uid = (
            row["pronoun_type"].strip(),
            row["sentence"],
            row["pronoun"].strip(),
            row["uid"].strip(),
        )
        form = MASKS.get(marker)
        if form is None:
            errors.append(f"{where}: unknown pronoun_type {marker!r} (expected one of {', '.join(MASKS)})")
            continue
        if sentence.count(marker) != 1:
            errors.append(
                f"{where}: sentence must contain its mask {marker} exactly once (found {sentence.count(marker)})"
            )
            continue
        if not uid:
            errors.append(f"{where}: empty uid")
            continue
        base = codebook.base_for(form, surface)
        if base is None:
            known = ", ".join(codebook.surface(b, form) for b in BASES)
            errors.append(f"{where}: pronoun {surface!r} is not a {form} form in the RUFF codebook ({known})")
            continue
        # A RUFF template is one uid for one occupation/participant pair and one case; its 4 rows differ only in
        # the declared pronoun. (A uid alone spans every occupation and case.)
        meta = {key: row.get(key, "").strip() for key in ("occupation", "participant", "word") if key in row}
        source_id = "/".join([uid, meta.get("occupation", ""), meta.get("participant", ""), form])
        if (source_id, base) in seen:
            errors.append(f"{where}: {source_id} already has a {base!r} row on line {seen[source_id, base]}")
            continue
        seen[source_id, base] = line
        template = templates.get(source_id)
        if template is None:
            template = templates[source_id] = ParsedTemplate(
                source_id, line, sentence, marker, form, meta | {"uid": uid}
            )
        instances.append(ParsedInstance(template, base, 0, "", sentence, surface.lower()))
    if errors:
        raise ImportFailed(errors)
    return instances


def dataset_import_ruff(*, templates_path: Path, name: str = NAME) -> ImportResult:
    instances = _parse_ruff(templates_path)
    stored_signature = signature(DatasetKind.RUFF, templates_path.read_bytes())
    return dataset_write(
        name=name,
        kind=DatasetKind.RUFF,
        codebook=CODEBOOK,
        source=templates_path,
        signature=stored_signature,
        instances=instances,
    )


def command_import(name: str, options: dict[str, Any]) -> ImportResult:
    """`import_dataset ruff --templates T.tsv`."""
    if options["names_dir"] is not None:
        raise CommandError("ruff takes no --names-dir: its sentences have no names")
    return dataset_import_ruff(templates_path=options["templates"], name=name)


EXPORT_COLUMNS = (
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


def export_rows(dataset: Any, codebook: Codebook | None = None) -> Iterator[dict]:
    """RUFF's own columns, `text` with its slot marker still in place as RUFF writes it (with distractors too)."""
    for row, template in instance_rows(dataset):
        meta = template.meta
        yield {
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


RUFF = DatasetKindSpec(
    name=NAME,
    kind=DatasetKind.RUFF,
    codebook=CODEBOOK,
    command_import=command_import,
    export_columns=EXPORT_COLUMNS,
    export_rows=export_rows,
    seed_masks=dict(MASKS),
)
