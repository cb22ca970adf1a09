"""Dataset kind `templates`: a researcher's own codebook and templates (docs/domain.md, 'Your own templates').

Everything the kind needs is here and in generation/services/templates_files.py (reading and checking the files, the
name draw): building the instances, the label a pool gives its cells, and the rows `export_instances` writes. Nothing
else in Concord branches on this kind: its instances look like RUFF's (a text with one slot marker, a correct form,
one candidate per family), and the codebook stored with the dataset carries its own families.

Import reads each file twice: once to check every line (nothing is written unless every line is good), once to write,
in batches, inside one transaction. Neither pass holds more than a batch of instances, so 100,000 instances import
in bounded memory (benchmarks/bench_import.py --templates).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Case, CharField, F, Q, When

from generation.contexts import capitalise, mask_starts_sentence, post_context, pre_context
from generation.models import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.pronouns import CODEBOOKS, Codebook, codebook_for
from generation.selectors import dataset_codebook
from generation.services.datasets import ImportFailed, ImportResult, _already_imported
from generation.services.templates_files import (
    TemplateRow,
    codebook_read,
    files_sha256,
    name_draws,
    names_read,
    templates_read,
)

KIND = DatasetKind.TEMPLATES
EXPORT_COLUMNS = ("template_id", "group", "base", "name", "form", "pre_context", "post_context", "candidates")
DEFAULT_NAMES_PER_TEMPLATE = 15
BATCH = 5000
_SLUG = re.compile(r"^[-\w]+$")


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
        repr((KIND, files_sha256(codebook_path, templates_path, names_path), per_template, seed)).encode()
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
