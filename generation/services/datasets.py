"""Dataset import: parse and validate a whole template file first, then write it in one transaction.

Errors name the file, the line and the problem; nothing is written unless every line is good. Re-running an import
with the same files and arguments finds the same signature and changes nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Count

from generation.models import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.pronouns import BASES, FORMS, MISGENDERED_MASK, RUFF_MASKS, TANGO_MASK, codebook_for
from generation.selectors import dataset_codebook
from generation.textfiles import InputErrors, UnreadableFile, read_utf8

MISGENDERED_COLUMNS = ("form", "template", "template_id")
RUFF_COLUMNS = ("sentence", "pronoun_type", "pronoun", "uid")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class ImportFailed(InputErrors):
    """A template file or name list is malformed; the import wrote nothing."""


@dataclass
class ImportResult:
    dataset: Dataset
    created: bool
    instances: int
    per_pronoun: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # TANGO: rows of pronoun families Concord does not study
    replaced: int = 0  # MISGENDERED --replace: instances whose name was redrawn

    def as_json(self) -> dict:
        summary = {"dataset": self.dataset.name, "instances": self.instances, "per_pronoun": self.per_pronoun}
        if self.replaced:
            summary["replaced"] = self.replaced
        if self.skipped:
            summary["skipped_families"] = self.skipped
        return summary


@dataclass
class _ParsedTemplate:
    source_id: str
    line: int
    text: str
    mask: str
    form: str
    meta: dict


@dataclass
class _ParsedInstance:
    template: _ParsedTemplate
    pronoun: str
    draw: int
    name: str
    text: str
    correct_form: str


def _read_text(path: Path) -> str:
    try:
        return read_utf8(path)[1]
    except UnreadableFile as exc:
        raise ImportFailed([str(exc)]) from None


def _read_rows(path: Path, *, delimiter: str, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    text = _read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    missing = [column for column in required if column not in header]
    if missing:
        raise ImportFailed(
            [f"{path}:1: missing column(s) {', '.join(missing)} (header has: {', '.join(header) or 'nothing'})"]
        )
    rows = []
    for row in reader:
        line = reader.line_num
        if None in row:
            raise ImportFailed([f"{path}:{line}: more fields than the header has columns"])
        if all(not (value or "").strip() for value in row.values()):
            continue
        rows.append((line, {key: value or "" for key, value in row.items()}))
    if not rows:
        raise ImportFailed([f"{path}: no template rows"])
    return rows


def _signature(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


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
        text = _read_text(path)
        raw += path.name.encode() + b"\0" + path.read_bytes()
        for number, line in enumerate(text.splitlines(), start=1):
            name = line.strip()
            if not name:
                continue
            if "{" in name or "}" in name or len(name) > 64:
                raise ImportFailed([f"{path}:{number}: {name[:40]!r} is not a name"])
            names.append(name)
    return names, raw


def _parse_misgendered(path: Path) -> list[_ParsedTemplate]:
    codebook = codebook_for(DatasetKind.MISGENDERED)
    known = {"name", "mask_token", *codebook.forms}
    errors: list[str] = []
    templates: list[_ParsedTemplate] = []
    seen_ids: dict[str, int] = {}
    for line, row in _read_rows(path, delimiter=",", required=MISGENDERED_COLUMNS):
        form, text, source_id = row["form"].strip(), row["template"], row["template_id"].strip()
        where = f"{path}:{line}"
        if form not in codebook.forms:
            errors.append(f"{where}: unknown form {form!r} (expected one of {', '.join(codebook.forms)})")
        if not source_id:
            errors.append(f"{where}: empty template_id")
        elif source_id in seen_ids:
            errors.append(f"{where}: template_id {source_id!r} already used on line {seen_ids[source_id]}")
        seen_ids.setdefault(source_id, line)
        count = text.count(MISGENDERED_MASK)
        if count != 1:
            problem = "has no mask" if count == 0 else f"has {count} masks"
            errors.append(f"{where}: template {problem}: it needs exactly one {MISGENDERED_MASK}")
        unknown = sorted(set(_PLACEHOLDER.findall(text)) - known)
        if unknown:
            errors.append(f"{where}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}")
        templates.append(_ParsedTemplate(source_id, line, text, MISGENDERED_MASK, form, {}))
    if errors:
        raise ImportFailed(errors)
    return templates


def _fill_misgendered(template: _ParsedTemplate, pronoun: str, name: str) -> str:
    codebook = codebook_for(DatasetKind.MISGENDERED)
    text = template.text.replace("{name}", name)
    for form in codebook.forms:
        text = text.replace("{" + form + "}", codebook.surface(pronoun, form))
    return text


def _misgendered_instances(
    templates: list[_ParsedTemplate], names: list[str], *, per_template: int, seed: int
) -> list[_ParsedInstance]:
    """The names are drawn as the seed's evaluation script draws them (docs/domain.md, *Datasets and contexts*):
    Python's `random` is seeded afresh for each pronoun, and draw t of every template, in file order, comes before
    draw t + 1. So draw t of a template has the same name under all four pronouns, and a name may repeat. The
    instances are stored template by template (each pronoun, each draw); the pool orders them as the seed's frame."""
    codebook = codebook_for(DatasetKind.MISGENDERED)
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
                instances.append(_ParsedInstance(template, pronoun, draw, name, text, correct))
    return instances


def _parse_ruff(path: Path) -> list[_ParsedInstance]:
    codebook = codebook_for(DatasetKind.RUFF)
    errors: list[str] = []
    templates: dict[str, _ParsedTemplate] = {}
    instances: list[_ParsedInstance] = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in _read_rows(path, delimiter="\t", required=RUFF_COLUMNS):
        where = f"{path}:{line}"
        marker, sentence, surface, uid = (
            row["pronoun_type"].strip(),
            row["sentence"],
            row["pronoun"].strip(),
            row["uid"].strip(),
        )
        form = RUFF_MASKS.get(marker)
        if form is None:
            errors.append(f"{where}: unknown pronoun_type {marker!r} (expected one of {', '.join(RUFF_MASKS)})")
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
            template = templates[source_id] = _ParsedTemplate(
                source_id, line, sentence, marker, form, meta | {"uid": uid}
            )
        instances.append(_ParsedInstance(template, base, 0, "", sentence, surface.lower()))
    if errors:
        raise ImportFailed(errors)
    return instances


def _already_imported(existing: Dataset, *, signature: str) -> ImportResult:
    """The same files and arguments change nothing; others under an existing name are refused."""
    if existing.import_signature != signature:
        raise ImportFailed(
            [
                f"dataset {existing.name!r} was already imported from other files or arguments; "
                f"import this one under another name (--name)"
            ]
        )
    return _result(existing, created=False)


@transaction.atomic
def _write(*, name: str, kind: str, source: Path, signature: str, instances: list[_ParsedInstance]) -> ImportResult:
    existing = Dataset.objects.select_for_update().filter(name=name).first()
    if existing is not None:
        return _already_imported(existing, signature=signature)
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(name=name, kind=kind, source=str(source), import_signature=signature)
    except IntegrityError:
        # A concurrent import under the same name committed after the check above (the name is unique, so this
        # insert waited for it): answer as if that import had come first.
        return _already_imported(Dataset.objects.get(name=name), signature=signature)
    codebook = codebook_for(kind)
    PronounForm.objects.bulk_create(
        PronounForm(dataset=dataset, base=base, form=form, surface=codebook.surface(base, form))
        for base in BASES
        for form in FORMS
        if form in codebook.forms
    )
    parsed_templates = list({id(i.template): i.template for i in instances}.values())
    rows = Template.objects.bulk_create(
        Template(
            dataset=dataset, source_id=t.source_id, line=t.line, text=t.text, mask=t.mask, form=t.form, meta=t.meta
        )
        for t in parsed_templates
    )
    by_parsed = {id(parsed): row for parsed, row in zip(parsed_templates, rows, strict=True)}
    Instance.objects.bulk_create(
        (
            Instance(
                dataset=dataset,
                template=by_parsed[id(i.template)],
                pronoun=i.pronoun,
                draw=i.draw,
                name=i.name,
                text=i.text,
                correct_form=i.correct_form,
                ordinal=ordinal,
            )
            for ordinal, i in enumerate(instances)
        ),
        batch_size=2000,
    )
    return _result(dataset, created=True)


def _result(dataset: Dataset, *, created: bool) -> ImportResult:
    counts = dict(
        Instance.objects.filter(dataset=dataset).values("pronoun").annotate(n=Count("id")).values_list("pronoun", "n")
    )
    # The dataset's own families (a templates dataset's, in its codebook's order; BASES for the built-in kinds).
    bases = dataset_codebook(dataset=dataset).bases if dataset.pronoun_forms.exists() else BASES
    per_pronoun = {base: counts.get(base, 0) for base in bases}
    return ImportResult(dataset=dataset, created=created, instances=sum(per_pronoun.values()), per_pronoun=per_pronoun)


# Part of a MISGENDERED import's signature: a dataset imported under the earlier rule (15 distinct names per template
# and pronoun, one generator for the whole file) has another signature and keeps its instances until --replace.
NAME_DRAW_RULE = "seed eval.py: random.seed per pronoun, random.choice per draw and template"


def dataset_import_misgendered(
    *,
    templates_path: Path,
    names_dir: Path,
    names_per_template: int = 15,
    seed: int = 42,
    name: str = "misgendered",
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
    signature = _signature(
        DatasetKind.MISGENDERED, templates_path.read_bytes(), names_raw, names_per_template, seed, NAME_DRAW_RULE
    )
    existing = Dataset.objects.filter(name=name, kind=DatasetKind.MISGENDERED).first()
    earlier = _earlier_rule_signature(templates_path, names_dir, names_per_template=names_per_template, seed=seed)
    if existing is not None and existing.import_signature == earlier:
        changed = _redrawn_instances(existing, instances)
        if changed is not None:
            return _replace_names(existing, changed, signature=signature, replace=replace)
    return _write(
        name=name, kind=DatasetKind.MISGENDERED, source=templates_path, signature=signature, instances=instances
    )


def _earlier_rule_signature(templates_path: Path, names_dir: Path, *, names_per_template: int, seed: int) -> str:
    """The signature an import of these files and arguments stored under the earlier draw rule."""
    names_raw = b"".join(path.read_bytes() for path in sorted(names_dir.glob("*.txt")))
    return _signature(DatasetKind.MISGENDERED, templates_path.read_bytes(), names_raw, names_per_template, seed)


def _redrawn_instances(existing: Dataset, instances: list[_ParsedInstance]) -> list[tuple[int, str, str]] | None:
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
    jobs = list(dataset.jobs.order_by("pk").values_list("pk", flat=True))
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
    result = _result(dataset, created=False)
    result.replaced = len(changed)
    return result


def dataset_import_ruff(*, templates_path: Path, name: str = "ruff") -> ImportResult:
    instances = _parse_ruff(templates_path)
    signature = _signature(DatasetKind.RUFF, templates_path.read_bytes())
    return _write(name=name, kind=DatasetKind.RUFF, source=templates_path, signature=signature, instances=instances)


TANGO_FIELDS = ("template_idx", "ante", "ante_type", "pronoun_family", "template")
_FAMILY = re.compile(r"^[a-z]+$")


def tango_context(template: str) -> str:
    """TANGO's generation context: Python's `str.capitalize()` of the template, as the seed does (it also lower-cases
    the rest of the string, names included). docs/domain.md, 'TANGO and Prob-TANGO'."""
    return template.capitalize()


def _tango_row(line: str) -> tuple[dict, str] | str:
    """One line of TANGO's file: the row and its pronoun family (lower case), or what is wrong with it."""
    try:
        row = json.loads(line)
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
    if TANGO_MASK in template:
        return f"template contains {TANGO_MASK}, which Concord reserves for the continuation"
    if not isinstance(ante, str) or not ante.strip():
        return "ante must be a non-empty string"
    if isinstance(index, bool) or not isinstance(index, int | str) or str(index).strip() == "":
        return f"template_idx must be a number or a string (got {index!r})"
    return row, family.strip().lower()


def _parse_tango(path: Path) -> tuple[list[_ParsedInstance], dict[str, int]]:
    """TANGO's `misgendering.jsonl`: one JSON object a line. Families other than Concord's 4 bases (TANGO also has
    ey, fae, ze, ...) are counted and skipped; they are out of scope."""
    codebook = codebook_for(DatasetKind.TANGO)
    errors: list[str] = []
    instances: list[_ParsedInstance] = []
    skipped: dict[str, int] = {}
    seen: dict[str, int] = {}
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
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
        parsed = _ParsedTemplate(source_id, number, template + TANGO_MASK, TANGO_MASK, "nom", meta)
        text = tango_context(template) + TANGO_MASK
        instances.append(_ParsedInstance(parsed, family, 0, ante.strip(), text, codebook.surface(family, "nom")))
    if errors:
        raise ImportFailed(errors)
    if not instances:
        raise ImportFailed([f"{path}: no he, she, they or xe rows"])
    return instances, skipped


def dataset_import_tango(*, templates_path: Path, name: str = "tango") -> ImportResult:
    """TANGO's misgendering subset. Each line is one template and one instance of its pronoun family; the stored
    form is `nom` and the correct form the family's nominative, since a TANGO context has no mask of its own."""
    instances, skipped = _parse_tango(templates_path)
    signature = _signature(DatasetKind.TANGO, templates_path.read_bytes())
    result = _write(name=name, kind=DatasetKind.TANGO, source=templates_path, signature=signature, instances=instances)
    result.skipped = skipped
    return result
