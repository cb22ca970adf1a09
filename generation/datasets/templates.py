"""Dataset kind `templates`: a researcher's own codebook and templates (docs/domain.md, 'Your own templates').

Everything the kind needs is here and in generation/datasets/templates_files.py (reading and checking the files, the
name draw): building the instances, the import from uploaded files, and the rows `export_instances` writes. Nothing
outside this package branches on this kind: its instances look like RUFF's (a text with one slot marker, a correct
form, one candidate per family), its spec has no codebook (the one stored with each dataset carries its own
families), and a dataset without a codebook of its kind is labelled by its own name (generation/datasets/labels.py).

Import reads each file twice: once to check every line (nothing is written unless every line is good), once to write,
in batches, inside one transaction. Neither pass holds more than a batch of instances, so 100,000 instances import
in bounded memory (benchmarks/bench_import.py --templates).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.db import IntegrityError, transaction

from generation.contexts import capitalise, mask_starts_sentence, post_context, pre_context
from generation.datasets.base import DATASET_NAME, DatasetKind, DatasetKindSpec
from generation.datasets.files import ImportFailed
from generation.datasets.templates_files import (
    NAMES_HINT,
    TemplateRow,
    codebook_read,
    files_sha256,
    name_draws,
    names_read,
    templates_read,
)
from generation.datasets.writing import ImportResult, already_imported, instances_write
from generation.models import Dataset, Instance, PronounForm, Template
from generation.pronouns import Codebook

NAME = "templates"
KIND = DatasetKind.TEMPLATES
EXPORT_COLUMNS = ("template_id", "group", "base", "name", "form", "pre_context", "post_context", "candidates")
DEFAULT_NAMES_PER_TEMPLATE = 15
BATCH = 5000
CHECK_PROGRESS_EVERY = 1000  # templates checked between two progress calls
# progress(phase, count): "checking" with the templates checked so far, "checked" with the instances the import
# will write, "writing" with the instances written so far and "written" with them all, the last call inside the
# import's transaction, before it commits.
Progress = Callable[[str, int], None]


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
    shown: dict[str, str]  # the files' names in messages and the dataset's `source` (the uploaded names on the page)
    names_hint: str

    def templates_read(self) -> Iterator[TemplateRow]:
        return templates_read(
            self.templates_path,
            self.codebook,
            names=self.names is not None,
            shown=self.shown["templates"],
            names_hint=self.names_hint,
        )

    def draws(self) -> list[list[str]]:
        if self.names is None:
            return [[""] for _ in range(self.templates)]
        return name_draws(templates=self.templates, names=self.names, per_template=self.per_template, seed=self.seed)


def _check(
    *,
    codebook_path: Path,
    templates_path: Path,
    names_path: Path | None,
    names_per_template: int,
    seed: int,
    shown: dict[str, str],
    names_hint: str,
    progress: Progress | None = None,
) -> _Plan:
    """Read every file once and reject any problem; nothing is kept but the codebook, the names and a count."""
    if names_path is not None and names_per_template < 1:
        raise ImportFailed([f"--names-per-template must be at least 1 (got {names_per_template})"])
    codebook = codebook_read(codebook_path, shown=shown["codebook"])
    names = names_read(names_path, shown=shown["names"]) if names_path is not None else None
    plan = _Plan(codebook, codebook_path, templates_path, names, names_per_template, seed, 0, shown, names_hint)
    count = 0
    for _ in plan.templates_read():
        count += 1
        if progress is not None and count % CHECK_PROGRESS_EVERY == 0:
            progress("checking", count)
    plan = dataclasses.replace(plan, templates=count)
    if progress is not None:
        progress("checked", count * len(codebook.bases) * (names_per_template if names is not None else 1))
    return plan


def dataset_import_templates(
    *,
    codebook_path: Path,
    templates_path: Path,
    names_path: Path | None = None,
    names_per_template: int = DEFAULT_NAMES_PER_TEMPLATE,
    seed: int = 42,
    name: str = NAME,
    shown: Mapping[str, str] | None = None,
    names_hint: str = NAMES_HINT,
    progress: Progress | None = None,
) -> ImportResult:
    """Import a codebook and its templates as one dataset. Instances = template x family x name draw, in that order
    (template by template in file order, each family in codebook order, each draw): "the first N per family" are
    those of the first templates. Without a names file each template has one instance per family (draw 0, no name).
    Atomic (a bad file writes nothing) and idempotent (the same files and arguments change nothing).

    `shown` names the files in messages (keys codebook, templates, names; the paths where left out),
    `names_hint` says where a names file is given (the command's flag, the page's field), and `progress` hears how
    far the import got (`Progress`; a background import keeps it for its page)."""
    if not DATASET_NAME.match(name) or len(name) > 64:
        raise ImportFailed([f"--name {name!r}: a dataset name is 1-64 letters, digits, - and _"])
    if name in DatasetKind.values and name != KIND:  # the built-in kinds
        raise ImportFailed([f"--name {name!r} is a built-in dataset kind's name; choose another"])
    plan = _check(
        codebook_path=codebook_path,
        templates_path=templates_path,
        names_path=names_path,
        names_per_template=names_per_template,
        seed=seed,
        shown={
            "codebook": str(codebook_path),
            "templates": str(templates_path),
            "names": str(names_path),
            **(shown or {}),
        },
        names_hint=names_hint,
        progress=progress,
    )
    per_template = names_per_template if names_path is not None else 1
    signature = hashlib.sha256(
        repr((KIND, files_sha256(codebook_path, templates_path, names_path), per_template, seed)).encode()
    ).hexdigest()
    return _write(plan, name=name, signature=signature, progress=progress)


def _unheard(phase: str, count: int) -> None:
    pass


@transaction.atomic
def _write(plan: _Plan, *, name: str, signature: str, progress: Progress | None = None) -> ImportResult:
    hear = progress or _unheard
    existing = Dataset.objects.select_for_update().filter(name=name).first()
    if existing is not None:
        return already_imported(existing, signature=signature)
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                name=name, kind=KIND, source=plan.shown["templates"][:500], import_signature=signature
            )
    except IntegrityError:
        return already_imported(Dataset.objects.get(name=name), signature=signature)
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
                    instances.append((dataset.pk, row.pk, base, draw, drawn, text, correct, ordinal))
                    ordinal += 1
                    per_pronoun[base] += 1
            if len(instances) >= BATCH:
                instances_write(instances)
                instances = []
                hear("writing", ordinal)
        instances_write(instances)
        batch.clear()
        hear("writing", ordinal)

    position: dict[str, int] = {}
    for index, template in enumerate(plan.templates_read()):
        position[template.id] = index
        batch.append(template)
        if len(batch) * len(codebook.bases) * len(draws[0]) >= BATCH:
            flush()
    flush()
    hear("written", ordinal)
    return ImportResult(dataset=dataset, created=True, instances=ordinal, per_pronoun=per_pronoun)


def candidates_display(text: str, mask: str, form: str, codebook: Codebook) -> list[str]:
    """The slot's candidates as they are scored: the FORM of every family in codebook order, capitalised when the
    slot starts a sentence (docs/domain.md, 'Datasets and contexts')."""
    surfaces = [surface for _, surface in codebook.candidates(form)]
    if mask_starts_sentence(text, mask):
        return [capitalise(surface) for surface in surfaces]
    return surfaces


def export_rows(dataset: Dataset, codebook: Codebook | None) -> Iterator[dict]:
    """export_instances' rows for a templates dataset, in dataset order, streamed; `codebook` is the dataset's own."""
    assert codebook is not None, "a templates dataset's rows need its stored codebook"
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
    """The same import from uploaded files (the dataset page, a small upload: in the request). Messages name each
    file as it was uploaded, and a missing names file is asked for in the page's words."""
    files = {
        key: (upload_name(upload, default), upload.chunks())
        for key, upload, default in (
            ("codebook", codebook, "codebook.csv"),
            ("templates", templates, "templates.csv"),
            ("names", names, "names.txt"),
        )
        if upload is not None
    }
    return templates_pieces_import(name=name, files=files, names_per_template=names_per_template, seed=seed)


def templates_pieces_import(
    *,
    name: str,
    files: Mapping[str, tuple[str, Iterable[bytes]]],
    names_per_template: int,
    seed: int,
    progress: Progress | None = None,
) -> ImportResult:
    """Import files given as (the name they were uploaded under, their bytes in pieces) under the keys codebook,
    templates and optionally names: each is copied to a temporary folder under its own kind of name (`.jsonl` kept,
    so JSON Lines are read as such), imported, and removed."""
    with tempfile.TemporaryDirectory(prefix="concord-templates-") as folder:
        paths: dict[str, Path | None] = {"names": None}
        shown: dict[str, str] = {}
        suffix = ".jsonl" if files["templates"][0].lower().endswith(".jsonl") else ".csv"
        for key, filename in (
            ("codebook", "codebook.csv"),
            ("templates", "templates" + suffix),
            ("names", "names.txt"),
        ):
            if key not in files:
                continue
            path = Path(folder) / filename
            with path.open("wb") as handle:
                for piece in files[key][1]:
                    handle.write(piece)
            paths[key] = path
            shown[key] = files[key][0]
        assert paths["codebook"] is not None and paths["templates"] is not None
        return dataset_import_templates(
            codebook_path=paths["codebook"],
            templates_path=paths["templates"],
            names_path=paths["names"],
            names_per_template=names_per_template,
            seed=seed,
            name=name,
            shown=shown,
            names_hint=UPLOAD_NAMES_HINT,
            progress=progress,
        )


UPLOAD_NAMES_HINT = 'the "Names" field of this form'


def upload_name(upload, default: str) -> str:
    """An uploaded file's own name as the browser sent it (its last part, printable), for messages."""
    raw = str(getattr(upload, "name", "") or "")
    name = "".join(char for char in raw.replace("\\", "/").rsplit("/", 1)[-1] if char.isprintable())[:200]
    return name or default


def command_import(name: str, options: dict[str, Any]) -> ImportResult:
    """`import_dataset templates --codebook C.csv --templates T.csv|T.jsonl [--names NAMES.txt]` (docs/domain.md)."""
    if options["codebook"] is None:
        raise CommandError("templates needs --codebook PATH (base, nom, acc, pos_dep, pos_ind, ref)")
    if options["names_dir"] is not None:
        raise CommandError("templates takes --names FILE (one name a line), not --names-dir")
    return dataset_import_templates(
        codebook_path=options["codebook"],
        templates_path=options["templates"],
        names_path=options["names"],
        names_per_template=options["names_per_template"],
        seed=options["seed"],
        name=name,
    )


TEMPLATES = DatasetKindSpec(
    name=NAME,
    kind=KIND,
    codebook=None,
    command_import=command_import,
    export_columns=EXPORT_COLUMNS,
    export_rows=export_rows,
)
