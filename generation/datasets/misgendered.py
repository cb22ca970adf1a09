"""MISGENDERED (docs/domain.md, 'Datasets and contexts'): a CSV of templates with one `{mask_token}` each, filled
with each of the 4 families and with names drawn from the seed's name lists.

Importing the same files and arguments again changes nothing; a dataset imported under the earlier name-draw rule is
kept until `--replace` redraws its names.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.db import transaction

from generation.datasets.base import (
    STORED_EXPORT_COLUMNS,
    DatasetKind,
    DatasetKindSpec,
    builtin_codebook,
    stored_export_rows,
)
from generation.datasets.files import ImportFailed, read_rows, read_text, signature
from generation.datasets.writing import (
    ImportResult,
    ParsedInstance,
    ParsedTemplate,
    dataset_write,
    import_result,
)
from generation.models import Dataset, Instance
from generation.pronouns import BASES, FORMS

NAME = "misgendered"
CODEBOOK = builtin_codebook(
    DatasetKind.MISGENDERED.value,
    {
        "he": ("he", "him", "his", "his", "himself"),
        "she": ("she", "her", "her", "hers", "herself"),
        "they": ("they", "them", "their", "theirs", "themself"),
        "xe": ("xe", "xem", "xyr", "xyrs", "xemself"),
    },
    FORMS,
)
MASK = "{mask_token}"  # the mask marker of its templates
MISGENDERED_COLUMNS = ("form", "template", "template_id")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


# The seed's name pool is female + male + unisex, in that order; other lists in the directory follow, sorted.
NAME_LISTS = ("female.txt", "male.txt", "unisex.txt")


def _name_list_order(path: Path) -> tuple[int, str]:
    return (NAME_LISTS.index(path.name) if path.name in NAME_LISTS else len(NAME_LISTS), path.name)


def _read_names(names_dir: Path) -> tuple[list[str], bytes]:
    """Every name of every list, in list order and file order, repeats kept: the seed draws from this list as is."""
    if not names_dir.is_dir():
        raise ImportFailed([f"{names_dir}: not a directory of name lists"])
    files = sorted(names_dir.glob("*.txt"), key=_name_list_order)
    if not files:
        raise ImportFailed([f"{names_dir}: no *.txt name lists"])
    names: list[str] = []
    raw = b""
    for path in files:
        text = read_text(path)
        raw += path.name.encode() + b"\0" + path.read_bytes()
        for number, line in enumerate(text.splitlines(), start=1):
            name = line.strip()
            if not name:
                continue
            if "{" in name or "}" in name or len(name) > 64:
                raise ImportFailed([f"{path}:{number}: {name[:40]!r} is not a name"])
            names.append(name)
    return names, raw


def _parse_misgendered(path: Path) -> list[ParsedTemplate]:
    codebook = CODEBOOK
    known = {"name", "mask_token", *codebook.forms}
    errors: list[str] = []
    templates: list[ParsedTemplate] = []
    seen_ids: dict[str, int] = {}
    for line, row in read_rows(path, delimiter=",", required=MISGENDERED_COLUMNS):
        form, text, source_id = row["form"].strip(), row["template"], row["template_id"].strip()
        where = f"{path}:{line}"
        if form not in codebook.forms:
            errors.append(f"{where}: unknown form {form!r} (expected one of {', '.join(codebook.forms)})")
        if not source_id:
            errors.append(f"{where}: empty template_id")
        elif source_id in seen_ids:
            errors.append(f"{where}: template_id {source_id!r} already used on line {seen_ids[source_id]}")
        seen_ids.setdefault(source_id, line)
        count = text.count(MASK)
        if count != 1:
            problem = "has no mask" if count == 0 else f"has {count} masks"
            errors.append(f"{where}: template {problem}: it needs exactly one {MASK}")
        unknown = sorted(set(_PLACEHOLDER.findall(text)) - known)
        if unknown:
            errors.append(f"{where}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}")
        templates.append(ParsedTemplate(source_id, line, text, MASK, form, {}))
    if errors:
        raise ImportFailed(errors)
    return templates


def _fill_misgendered(template: ParsedTemplate, pronoun: str, name: str) -> str:
    codebook = CODEBOOK
    text = template.text.replace("{name}", name)
    for form in codebook.forms:
        text = text.replace("{" + form + "}", codebook.surface(pronoun, form))
    return text


def _misgendered_instances(
    templates: list[ParsedTemplate], names: list[str], *, per_template: int, seed: int
) -> list[ParsedInstance]:
    """The names are drawn as the seed's evaluation script draws them (docs/domain.md, *Datasets and contexts*):
    Python's `random` is seeded afresh for each pronoun, and draw t of every template, in file order, comes before
    draw t + 1. So draw t of a template has the same name under all four pronouns, and a name may repeat. The
    instances are stored template by template (each pronoun, each draw); the pool orders them as the seed's frame."""
    codebook = CODEBOOK
    rng = random.Random()
    drawn: dict[tuple[int, str, int], str] = {}
    for pronoun in BASES:
        rng.seed(seed)
        for draw in range(per_template):
            for position in range(len(templates)):
                drawn[position, pronoun, draw] = rng.choice(names)
    instances = []
    for position, template in enumerate(templates):
        for pronoun in BASES:
            for draw in range(per_template):
                name = drawn[position, pronoun, draw]
                text = _fill_misgendered(template, pronoun, name)
                correct = codebook.surface(pronoun, template.form)
                instances.append(ParsedInstance(template, pronoun, draw, name, text, correct))
    return instances


# Part of a MISGENDERED import's signature: a dataset imported under the earlier rule (15 distinct names per template
# and pronoun, one generator for the whole file) has another signature and keeps its instances until --replace.
NAME_DRAW_RULE = "seed eval.py: random.seed per pronoun, random.choice per draw and template"


def dataset_import_misgendered(
    *,
    templates_path: Path,
    names_dir: Path,
    names_per_template: int = 15,
    seed: int = 42,
    name: str = NAME,
    replace: bool = False,
) -> ImportResult:
    """Import MISGENDERED. An existing dataset of the same name whose templates are these but whose names were drawn
    otherwise (the earlier rule) is kept as it is and the import is refused, naming how many instances would change;
    `replace=True` redraws their names in place (same rows, ordinals and ids) when no generation job uses them."""
    if names_per_template < 1:
        raise ImportFailed([f"--names-per-template must be at least 1 (got {names_per_template})"])
    templates = _parse_misgendered(templates_path)
    names, names_raw = _read_names(names_dir)
    if not names:
        raise ImportFailed([f"{names_dir}: the name lists hold no names"])
    instances = _misgendered_instances(templates, names, per_template=names_per_template, seed=seed)
    stored_signature = signature(
        DatasetKind.MISGENDERED, templates_path.read_bytes(), names_raw, names_per_template, seed, NAME_DRAW_RULE
    )
    existing = Dataset.objects.filter(name=name, kind=DatasetKind.MISGENDERED).first()
    earlier = _earlier_rule_signature(templates_path, names_dir, names_per_template=names_per_template, seed=seed)
    if existing is not None and existing.import_signature == earlier:
        changed = _redrawn_instances(existing, instances)
        if changed is not None:
            return _replace_names(existing, changed, signature=stored_signature, replace=replace)
    return dataset_write(
        name=name,
        kind=DatasetKind.MISGENDERED,
        codebook=CODEBOOK,
        source=templates_path,
        signature=stored_signature,
        instances=instances,
    )


def _earlier_rule_signature(templates_path: Path, names_dir: Path, *, names_per_template: int, seed: int) -> str:
    """The signature an import of these files and arguments stored under the earlier draw rule."""
    names_raw = b"".join(path.read_bytes() for path in sorted(names_dir.glob("*.txt")))
    return signature(DatasetKind.MISGENDERED, templates_path.read_bytes(), names_raw, names_per_template, seed)


def _redrawn_instances(existing: Dataset, instances: list[ParsedInstance]) -> list[tuple[int, str, str]] | None:
    """(instance id, new name, new text) for every stored instance whose name this import draws otherwise, or None
    when the dataset differs in more than names (other templates, pronouns or draws)."""
    stored_templates = set(existing.templates.values_list("source_id", "text", "form"))
    if stored_templates != {(i.template.source_id, i.template.text, i.template.form) for i in instances}:
        return None
    stored = {
        (source_id, pronoun, draw): (pk, name)
        for pk, source_id, pronoun, draw, name in existing.instances.values_list(
            "pk", "template__source_id", "pronoun", "draw", "name"
        )
    }
    parsed = {(i.template.source_id, i.pronoun, i.draw): i for i in instances}
    if stored.keys() != parsed.keys():
        return None
    return [(pk, parsed[key].name, parsed[key].text) for key, (pk, name) in stored.items() if parsed[key].name != name]


@transaction.atomic
def _replace_names(
    existing: Dataset, changed: list[tuple[int, str, str]], *, signature: str, replace: bool
) -> ImportResult:
    dataset = Dataset.objects.select_for_update().get(pk=existing.pk)
    total = dataset.instances.count()
    if changed and not replace:
        raise ImportFailed(
            [
                f"dataset {dataset.name!r} was imported with names drawn by an earlier rule: this import would change "
                f"{len(changed)} of its {total} instances (their name and text); they are kept as they are. "
                f"Run again with --replace to redraw them, or import under another name (--name)"
            ]
        )
    jobs = list(dataset.generation_runs.order_by("job_id").values_list("job_id", flat=True))
    if changed and jobs:
        raise ImportFailed(
            [
                f"dataset {dataset.name!r}: --replace would change {len(changed)} of its {total} instances, but "
                f"generation job(s) {', '.join(map(str, jobs))} were made from their current text; delete those jobs "
                f"first, or import under another name (--name)"
            ]
        )
    by_pk = Instance.objects.in_bulk([pk for pk, _, _ in changed])
    for pk, name, text in changed:
        by_pk[pk].name, by_pk[pk].text = name, text
    Instance.objects.bulk_update(by_pk.values(), ["name", "text"], batch_size=1000)
    dataset.import_signature = signature
    dataset.save(update_fields=["import_signature"])
    result = import_result(dataset, created=False)
    result.replaced = len(changed)
    return result


def command_import(name: str, options: dict[str, Any]) -> ImportResult:
    """`import_dataset misgendered --templates T.csv --names-dir DIR`."""
    if options["names_dir"] is None:
        raise CommandError("misgendered needs --names-dir DIR (the directory of name lists)")
    return dataset_import_misgendered(
        templates_path=options["templates"],
        names_dir=options["names_dir"],
        names_per_template=options["names_per_template"],
        seed=options["seed"],
        name=name,
        replace=options["replace"],
    )


MISGENDERED = DatasetKindSpec(
    name=NAME,
    kind=DatasetKind.MISGENDERED,
    codebook=CODEBOOK,
    command_import=command_import,
    export_columns=STORED_EXPORT_COLUMNS,
    export_rows=stored_export_rows,
    seed_masks={MASK: None, "[MASK]": None},
)
