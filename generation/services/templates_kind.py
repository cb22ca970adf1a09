"""Dataset kind `templates`: a researcher's own codebook and templates (docs/domain.md, 'Your own templates').

Everything the kind needs is here: reading and checking the two files (and the name list), the name draw, building
the instances, the stored codebook, the label a pool gives its cells, and the rows `export_instances` writes. Nothing
else in Concord branches on this kind: its instances look like RUFF's (a text with one slot marker, a correct form,
one candidate per family), and the codebook stored with the dataset carries its own families.

Import reads each file twice: once to check every line (nothing is written unless every line is good), once to write,
in batches, inside one transaction. Neither pass holds more than a batch of instances, so 100,000 instances import
in bounded memory (benchmarks/bench_import.py --templates).
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Case, CharField, F, Q, When

from generation.contexts import capitalise, mask_starts_sentence, post_context, pre_context
from generation.models import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.pronouns import CODEBOOKS, FORMS, Codebook, codebook_for
from generation.selectors import dataset_codebook
from generation.services.datasets import ImportFailed, ImportResult, _already_imported
from generation.textfiles import MAX_ERRORS_SHOWN

KIND = DatasetKind.TEMPLATES
CODEBOOK_COLUMNS = ("base", "nom", "acc", "pos_dep", "pos_ind", "ref")
TEMPLATE_FIELDS = ("id", "template")  # and the optional `group`
EXPORT_COLUMNS = ("template_id", "group", "base", "name", "form", "pre_context", "post_context", "candidates")
DEFAULT_NAMES_PER_TEMPLATE = 15
BATCH = 5000
# What the database keeps (generation/models/datasets.py): a family's name is an Instance.pronoun, a form a surface.
_BASE = re.compile(r"^[a-z]{1,8}$")
_SURFACE = re.compile(r"^[a-z]{1,32}$")
_SLUG = re.compile(r"^[-\w]+$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_TARGET = "target:"
# Errors are gathered up to this many per file, so that a bad 100,000-line file is not listed in full.
_MAX_ERRORS = MAX_ERRORS_SHOWN * 5


@dataclass(frozen=True)
class TemplateRow:
    """One checked template: `slot` is its `{target:FORM}` marker as written, `form` the FORM."""

    id: str
    group: str
    line: int
    text: str
    slot: str
    form: str


class _Errors:
    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, message: str) -> None:
        self.found.append(message)

    def full(self) -> bool:
        return len(self.found) >= _MAX_ERRORS

    def raise_any(self) -> None:
        if self.found:
            raise ImportFailed(self.found)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, streamed; a bad byte is reported with its line."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ImportFailed([f"{path}: cannot be read ({exc.strerror or exc})"]) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFailed(
                    [f"{path}:{number}: not UTF-8 (byte {raw[exc.start]:#04x}); save the file as UTF-8"]
                ) from None


def _csv_rows(path: Path, *, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) of a CSV file with a header, streamed; blank rows skipped."""
    numbered = _lines(path)
    current = [0]

    def text() -> Iterator[str]:
        for number, line in numbered:
            current[0] = number
            yield line

    reader = csv.reader(text())
    header = next(reader, None)
    if header is None:
        raise ImportFailed([f"{path}: the file is empty (it needs a header: {', '.join(required)})"])
    header = [column.strip() for column in header]
    missing = [column for column in required if column not in header]
    if missing:
        raise ImportFailed(
            [f"{path}:1: missing column(s) {', '.join(missing)} (header has: {', '.join(header) or 'nothing'})"]
        )
    for values in reader:
        if not any(value.strip() for value in values):
            continue
        if len(values) > len(header):
            raise ImportFailed([f"{path}:{current[0]}: more fields than the header has columns"])
        yield current[0], dict(zip(header, values + [""] * (len(header) - len(values)), strict=True))


def _sha256(*paths: Path | None) -> str:
    digest = hashlib.sha256()
    for path in paths:
        if path is None:
            digest.update(b"-\0")
            continue
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def codebook_read(path: Path) -> Codebook:
    """The codebook file: `base, nom, acc, pos_dep, pos_ind, ref`, one family a row, empty cells for forms a family
    lacks. Rejected whole: a bad or repeated base, a bad form, a family with no forms, one spelling in two families
    (the heuristic could not tell them apart), no family at all."""
    errors = _Errors()
    table: dict[str, dict[str, str]] = {}
    base_line: dict[str, int] = {}
    owner: dict[str, tuple[str, int]] = {}
    for line, row in _csv_rows(path, required=CODEBOOK_COLUMNS):
        where = f"{path}:{line}"
        base = row["base"].strip()
        if not _BASE.match(base):
            errors.add(f"{where}: field base: {base!r} is not a family name (1-8 lower-case letters a-z)")
            continue
        if base in base_line:
            errors.add(f"{where}: field base: duplicate base {base!r} (already on line {base_line[base]})")
            continue
        base_line[base] = line
        forms: dict[str, str] = {}
        for form in FORMS:
            surface = row[form].strip()
            if not surface:
                continue
            if not _SURFACE.match(surface):
                errors.add(f"{where}: field {form}: {surface!r} is not a form (1-32 lower-case letters a-z)")
                continue
            if surface in owner and owner[surface][0] != base:
                other, other_line = owner[surface]
                errors.add(
                    f"{where}: field {form}: {surface!r} is also a form of {other!r} (line {other_line}); the "
                    f"heuristic could not tell the two families apart"
                )
                continue
            owner[surface] = (base, line)
            forms[form] = surface
        if not forms and not any(row[form].strip() for form in FORMS):
            errors.add(f"{where}: family {base!r} has no forms")
        table[base] = forms
    if not base_line and not errors.found:
        errors.add(f"{path}: empty codebook: no pronoun families (rows of {', '.join(CODEBOOK_COLUMNS)})")
    errors.raise_any()
    return Codebook(dataset=path.name, table=table)


def names_read(path: Path) -> list[str]:
    """One name a line, blank lines skipped, repeats kept (the draw picks from the list as it is)."""
    names: list[str] = []
    errors = _Errors()
    for number, line in _lines(path):
        name = line.strip()
        if not name:
            continue
        if "{" in name or "}" in name or len(name) > 64:
            errors.add(f"{path}:{number}: {name[:40]!r} is not a name (at most 64 characters, no braces)")
            continue
        names.append(name)
    errors.raise_any()
    if not names:
        raise ImportFailed([f"{path}: the names file is empty"])
    return names


def _raw_templates(path: Path) -> Iterator[tuple[int, object, object, object] | tuple[int, str]]:
    """(line, id, template, group) per template of a CSV or JSONL file, or (line, problem)."""
    if path.suffix.lower() == ".jsonl":
        for number, line in _lines(path):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"not a JSON object ({exc.msg} at column {exc.colno})"
                continue
            if not isinstance(row, dict):
                yield number, "expected a JSON object with id, template and optionally group"
                continue
            missing = [name for name in TEMPLATE_FIELDS if name not in row]
            if missing:
                yield number, f"missing field(s) {', '.join(missing)}"
                continue
            yield number, row["id"], row["template"], row.get("group", "")
        return
    for number, row in _csv_rows(path, required=TEMPLATE_FIELDS):
        yield number, row["id"], row["template"], row.get("group", "")


def _check_template(
    text: str, where: str, codebook: Codebook, *, names: bool, errors: _Errors
) -> tuple[str, str] | None:
    """The slot marker and its FORM, or None with the template's problems added."""
    slots: list[str] = []
    problems = len(errors.found)
    for placeholder in _PLACEHOLDER.findall(text):
        if placeholder.startswith(_TARGET):
            form = placeholder[len(_TARGET) :]
            slots.append(form)
            if form not in FORMS:
                errors.add(
                    f"{where}: field template: unknown FORM {form!r} in {{{placeholder}}} (use one of "
                    f"{', '.join(FORMS)})"
                )
        elif placeholder == "name":
            if not names:
                errors.add(f"{where}: field template: {{name}} needs a names file (--names NAMES.txt)")
        elif placeholder in FORMS:
            lacking = [base for base in codebook.bases if placeholder not in codebook.table[base]]
            if lacking:
                errors.add(
                    f"{where}: field template: {{{placeholder}}} needs a {placeholder} form, which the codebook "
                    f"lacks for {', '.join(lacking)}"
                )
        else:
            errors.add(
                f"{where}: field template: unknown placeholder {{{placeholder}}} (use {{name}}, "
                f"{', '.join('{' + form + '}' for form in FORMS)} and one {{target:FORM}})"
            )
    _check_slots(slots, where, codebook, errors)
    if len(errors.found) > problems:
        return None
    return "{" + _TARGET + slots[0] + "}", slots[0]


def _check_slots(slots: list[str], where: str, codebook: Codebook, errors: _Errors) -> None:
    """Exactly one target slot, of a form every family has."""
    if not slots:
        errors.add(f"{where}: field template: no target slot (it needs exactly one {{target:FORM}})")
    elif len(slots) > 1:
        errors.add(f"{where}: field template: {len(slots)} target slots (it needs exactly one {{target:FORM}})")
    elif slots[0] in FORMS:
        lacking = [base for base in codebook.bases if slots[0] not in codebook.table[base]]
        if lacking:
            errors.add(
                f"{where}: field template: the slot {{target:{slots[0]}}} needs a {slots[0]} form, which the "
                f"codebook lacks for {', '.join(lacking)}"
            )


def templates_read(path: Path, codebook: Codebook, *, names: bool) -> Iterator[TemplateRow]:
    """The checked templates, streamed. Run it to the end before using any: it raises `ImportFailed` with every
    problem (up to a cap) once the file is read."""
    errors = _Errors()
    seen: dict[str, int] = {}
    count = 0
    for read in _raw_templates(path):
        if errors.full():
            break
        if len(read) == 2:
            errors.add(f"{path}:{read[0]}: {read[1]}")
            continue
        line, raw_id, text, group = read
        where = f"{path}:{line}"
        template_id = str(raw_id).strip() if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else ""
        if not template_id:
            errors.add(f"{where}: field id: empty or not a string or number")
        elif len(template_id) > 200:
            errors.add(f"{where}: field id: longer than 200 characters")
        elif template_id in seen:
            errors.add(
                f"{where}: field id: duplicate template id {template_id!r} (already on line {seen[template_id]})"
            )
        else:
            seen[template_id] = line
        if not isinstance(text, str) or not text.strip():
            errors.add(f"{where}: field template: empty or not a string")
            continue
        if not isinstance(group, str | int) or isinstance(group, bool):
            errors.add(f"{where}: field group: not a string")
            continue
        checked = _check_template(text, where, codebook, names=names, errors=errors)
        if checked is None or errors.found:
            continue
        count += 1
        yield TemplateRow(template_id, str(group).strip(), line, text, *checked)
    if not count and not errors.found:
        errors.add(f"{path}: no templates")
    errors.raise_any()


def name_draws(*, templates: int, names: list[str], per_template: int, seed: int) -> list[list[str]]:
    """draws[j][t]: the name of draw t of template j, by MISGENDERED's rule (docs/domain.md, 'Datasets and
    contexts'): Python's `random` seeded with `seed` at the start of each family's run, and for t = 0..N-1, for each
    template in file order, `random.choice(names)`. Every family's run draws the same sequence, so draw t of template
    j has the same name under every family; names repeat."""
    rng = random.Random(seed)
    draws: list[list[str]] = [[] for _ in range(templates)]
    for _ in range(per_template):
        for position in range(templates):
            draws[position].append(rng.choice(names))
    return draws


def instance_text(template: TemplateRow, codebook: Codebook, base: str, name: str) -> str:
    """The template with the name and the family's forms filled in, the target slot still in place."""
    text = template.text.replace("{name}", name)
    for form, surface in codebook.table[base].items():
        text = text.replace("{" + form + "}", surface)
    return text


@dataclass(frozen=True)
class _Plan:
    codebook: Codebook
    codebook_path: Path
    templates_path: Path
    names: list[str] | None
    per_template: int
    seed: int
    templates: int

    def draws(self) -> list[list[str]]:
        if self.names is None:
            return [[""] for _ in range(self.templates)]
        return name_draws(templates=self.templates, names=self.names, per_template=self.per_template, seed=self.seed)


def _check(
    *, codebook_path: Path, templates_path: Path, names_path: Path | None, names_per_template: int, seed: int
) -> _Plan:
    """Read every file once and reject any problem; nothing is kept but the codebook, the names and a count."""
    if names_path is not None and names_per_template < 1:
        raise ImportFailed([f"--names-per-template must be at least 1 (got {names_per_template})"])
    codebook = codebook_read(codebook_path)
    names = names_read(names_path) if names_path is not None else None
    count = sum(1 for _ in templates_read(templates_path, codebook, names=names is not None))
    return _Plan(codebook, codebook_path, templates_path, names, names_per_template, seed, count)


def dataset_import_templates(
    *,
    codebook_path: Path,
    templates_path: Path,
    names_path: Path | None = None,
    names_per_template: int = DEFAULT_NAMES_PER_TEMPLATE,
    seed: int = 42,
    name: str = "templates",
) -> ImportResult:
    """Import a codebook and its templates as one dataset. Instances = template x family x name draw, in that order
    (template by template in file order, each family in codebook order, each draw): "the first N per family" are
    those of the first templates. Without a names file each template has one instance per family (draw 0, no name).
    Atomic (a bad file writes nothing) and idempotent (the same files and arguments change nothing)."""
    if not _SLUG.match(name) or len(name) > 64:
        raise ImportFailed([f"--name {name!r}: a dataset name is 1-64 letters, digits, - and _"])
    if name in CODEBOOKS:
        raise ImportFailed([f"--name {name!r} is a built-in dataset kind's name; choose another"])
    plan = _check(
        codebook_path=codebook_path,
        templates_path=templates_path,
        names_path=names_path,
        names_per_template=names_per_template,
        seed=seed,
    )
    per_template = names_per_template if names_path is not None else 1
    signature = hashlib.sha256(
        repr((KIND, _sha256(codebook_path, templates_path, names_path), per_template, seed)).encode()
    ).hexdigest()
    return _write(plan, name=name, signature=signature)


@transaction.atomic
def _write(plan: _Plan, *, name: str, signature: str) -> ImportResult:
    existing = Dataset.objects.select_for_update().filter(name=name).first()
    if existing is not None:
        return _already_imported(existing, signature=signature)
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                name=name, kind=KIND, source=str(plan.templates_path)[:500], import_signature=signature
            )
    except IntegrityError:
        return _already_imported(Dataset.objects.get(name=name), signature=signature)
    codebook = plan.codebook
    PronounForm.objects.bulk_create(  # in codebook order: the stored codebook reads them back by id
        PronounForm(dataset=dataset, base=base, form=form, surface=surface)
        for base in codebook.bases
        for form, surface in codebook.table[base].items()
    )
    draws = plan.draws()
    per_pronoun = dict.fromkeys(codebook.bases, 0)
    ordinal = 0
    batch: list[TemplateRow] = []

    def flush() -> None:
        nonlocal ordinal
        rows = Template.objects.bulk_create(
            Template(
                dataset=dataset,
                source_id=t.id,
                line=t.line,
                text=t.text,
                mask=t.slot,
                form=t.form,
                meta={"group": t.group} if t.group else {},
            )
            for t in batch
        )
        instances = []
        for template, row in zip(batch, rows, strict=True):
            for base in codebook.bases:
                correct = codebook.table[base][template.form]
                for draw, drawn in enumerate(draws[position[template.id]]):
                    text = instance_text(template, codebook, base, drawn)
                    instances.append(
                        Instance(
                            dataset=dataset,
                            template=row,
                            pronoun=base,
                            draw=draw,
                            name=drawn,
                            text=text,
                            correct_form=correct,
                            ordinal=ordinal,
                        )
                    )
                    ordinal += 1
                    per_pronoun[base] += 1
            if len(instances) >= BATCH:
                Instance.objects.bulk_create(instances)
                instances = []
        Instance.objects.bulk_create(instances)
        batch.clear()

    position: dict[str, int] = {}
    for index, template in enumerate(templates_read(plan.templates_path, codebook, names=plan.names is not None)):
        position[template.id] = index
        batch.append(template)
        if len(batch) * len(codebook.bases) * len(draws[0]) >= BATCH:
            flush()
    flush()
    return ImportResult(dataset=dataset, created=True, instances=ordinal, per_pronoun=per_pronoun)


def dataset_label(dataset: Dataset) -> str:
    """What a pool cell, a report row and a judge call the dataset: the kind for the built-in kinds (one codebook
    each), the dataset's own name for a templates dataset (each has its own codebook and families)."""
    return dataset.name if dataset.kind == KIND else dataset.kind


def dataset_label_expression(dataset: str) -> Case:
    """`dataset_label` in SQL, for the dataset reached by the lookup path `dataset` ("job__dataset", ...)."""
    return Case(
        When(**{f"{dataset}__kind": KIND}, then=F(f"{dataset}__name")),
        default=F(f"{dataset}__kind"),
        output_field=CharField(),
    )


def dataset_label_q(dataset: str, label: str) -> Q:
    """The rows whose dataset (by the lookup path `dataset`) has this label."""
    return (Q(**{f"{dataset}__kind": label}) & ~Q(**{f"{dataset}__kind": KIND})) | Q(
        **{f"{dataset}__kind": KIND, f"{dataset}__name": label}
    )


def label_codebook(label: str) -> Codebook | None:
    """The codebook behind a dataset label: a built-in kind's, or a templates dataset's stored one; None if neither."""
    if label in CODEBOOKS:
        return codebook_for(label)
    if not _SLUG.match(label):  # "ruff (3 distractors)" and such: no dataset's name, no query
        return None
    dataset = Dataset.objects.filter(name=label, kind=KIND).first()
    return dataset_codebook(dataset=dataset) if dataset is not None else None


def candidates_display(text: str, mask: str, form: str, codebook: Codebook) -> list[str]:
    """The slot's candidates as they are scored: the FORM of every family in codebook order, capitalised when the
    slot starts a sentence (docs/domain.md, 'Datasets and contexts')."""
    surfaces = [surface for _, surface in codebook.candidates(form)]
    if mask_starts_sentence(text, mask):
        return [capitalise(surface) for surface in surfaces]
    return surfaces


def templates_export_rows(dataset: Dataset) -> Iterator[dict]:
    """export_instances' rows for a templates dataset, in dataset order, streamed."""
    codebook = dataset_codebook(dataset=dataset)
    templates = {
        pk: (source_id, mask, form, meta)
        for pk, source_id, mask, form, meta in dataset.templates.values_list("pk", "source_id", "mask", "form", "meta")
    }
    fields = ("template_id", "pronoun", "name", "text", "correct_form")
    rows = Instance.objects.filter(dataset=dataset).order_by("ordinal").values_list(*fields)
    for template_pk, base, name, text, correct in rows.iterator(chunk_size=5000):
        source_id, mask, form, meta = templates[template_pk]
        yield {
            "template_id": source_id,
            "group": (meta or {}).get("group", ""),
            "base": base,
            "name": name,
            "form": form,
            "pre_context": pre_context(text, mask),
            "post_context": post_context(text, mask, correct),
            "candidates": json.dumps(candidates_display(text, mask, form, codebook), ensure_ascii=False),
        }


def templates_upload_import(
    *, name: str, codebook, templates, names=None, names_per_template: int, seed: int
) -> ImportResult:
    """The same import from uploaded files (the dataset page): each is copied to a temporary folder under its own
    kind of name (`.jsonl` kept, so JSON Lines are read as such), imported, and removed."""
    with tempfile.TemporaryDirectory(prefix="concord-templates-") as folder:
        paths: dict[str, Path | None] = {"names": None}
        suffix = ".jsonl" if str(getattr(templates, "name", "")).lower().endswith(".jsonl") else ".csv"
        for key, upload, filename in (
            ("codebook", codebook, "codebook.csv"),
            ("templates", templates, "templates" + suffix),
            ("names", names, "names.txt"),
        ):
            if upload is None:
                continue
            path = Path(folder) / filename
            with path.open("wb") as handle:
                for piece in upload.chunks():
                    handle.write(piece)
            paths[key] = path
        assert paths["codebook"] is not None and paths["templates"] is not None
        return dataset_import_templates(
            codebook_path=paths["codebook"],
            templates_path=paths["templates"],
            names_path=paths["names"],
            names_per_template=names_per_template,
            seed=seed,
            name=name,
        )
