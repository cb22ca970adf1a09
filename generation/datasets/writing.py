"""Writing a parsed template file as one dataset, in one transaction: the dataset, its codebook as stored, its
templates and its instances. Re-running an import with the same files and arguments finds the same signature and
changes nothing; other files under an existing name are refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Count

from common.rows import rows_write
from generation.datasets.files import ImportFailed
from generation.models import Dataset, Instance, PronounForm, Template
from generation.pronouns import BASES, FORMS, Codebook


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

    def lines(self) -> list[str]:
        """What `import_dataset` prints."""
        verb = "imported" if self.created else "already imported, unchanged:"
        if self.replaced:
            verb = f"redrew the names of {self.replaced} instances of"
        counts = ", ".join(f"{base} {n}" for base, n in self.per_pronoun.items())
        lines = [f"{verb} {self.dataset.name}: {self.instances} instances ({counts})"]
        if self.skipped:
            families = ", ".join(f"{family} {n}" for family, n in sorted(self.skipped.items()))
            lines.append(f"skipped rows of pronoun families Concord does not study: {families}")
        return lines


@dataclass
class ParsedTemplate:
    source_id: str
    line: int
    text: str
    mask: str
    form: str
    meta: dict


@dataclass
class ParsedInstance:
    template: ParsedTemplate
    pronoun: str
    draw: int
    name: str
    text: str
    correct_form: str


def already_imported(existing: Dataset, *, signature: str) -> ImportResult:
    """The same files and arguments change nothing; others under an existing name are refused."""
    if existing.import_signature != signature:
        raise ImportFailed(
            [
                f"dataset {existing.name!r} was already imported from other files or arguments; "
                f"import this one under another name (--name)"
            ]
        )
    return import_result(existing, created=False)


def pronoun_forms_create(dataset: Dataset, codebook: Codebook) -> None:
    """A built-in kind's codebook stored with the dataset (its PronounForm rows), in its families' order (BASES for
    the paper's kinds) and FORMS order."""
    PronounForm.objects.bulk_create(
        PronounForm(dataset=dataset, base=base, form=form, surface=codebook.surface(base, form))
        for base in codebook.bases
        for form in FORMS
        if form in codebook.forms
    )


@transaction.atomic
def dataset_write(
    *, name: str, kind: str, codebook: Codebook, source: Path, signature: str, instances: list[ParsedInstance]
) -> ImportResult:
    existing = Dataset.objects.select_for_update().filter(name=name).first()
    if existing is not None:
        return already_imported(existing, signature=signature)
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(name=name, kind=kind, source=str(source), import_signature=signature)
    except IntegrityError:
        # A concurrent import under the same name committed after the check above (the name is unique, so this
        # insert waited for it): answer as if that import had come first.
        return already_imported(Dataset.objects.get(name=name), signature=signature)
    pronoun_forms_create(dataset, codebook)
    parsed_templates = list({id(i.template): i.template for i in instances}.values())
    rows = Template.objects.bulk_create(
        Template(
            dataset=dataset, source_id=t.source_id, line=t.line, text=t.text, mask=t.mask, form=t.form, meta=t.meta
        )
        for t in parsed_templates
    )
    by_parsed = {id(parsed): row for parsed, row in zip(parsed_templates, rows, strict=True)}
    instances_write(
        (dataset.pk, by_parsed[id(i.template)].pk, i.pronoun, i.draw, i.name, i.text, i.correct_form, ordinal)
        for ordinal, i in enumerate(instances)
    )
    return import_result(dataset, created=True)


# What an imported template file gives each instance; its other columns (RUFF's distractor fields and samples) keep
# their defaults.
INSTANCE_COLUMNS = ("dataset_id", "template_id", "pronoun", "draw", "name", "text", "correct_form", "ordinal")


def instances_write(rows: Iterable[tuple]) -> None:
    """Insert instances given as plain rows, `INSTANCE_COLUMNS` in order, without a model object per row
    (`common.rows`)."""
    rows_write(Instance, INSTANCE_COLUMNS, rows)


def import_result(dataset: Dataset, *, created: bool) -> ImportResult:
    counts = dict(
        Instance.objects.filter(dataset=dataset).values("pronoun").annotate(n=Count("id")).values_list("pronoun", "n")
    )
    # The dataset's own families in the order they were stored (a templates dataset's, in its codebook's order;
    # BASES for the built-in kinds).
    stored = dataset.pronoun_forms.order_by("pk").values_list("base", flat=True)
    bases = tuple(dict.fromkeys(stored)) or BASES
    per_pronoun = {base: counts.get(base, 0) for base in bases}
    return ImportResult(dataset=dataset, created=created, instances=sum(per_pronoun.values()), per_pronoun=per_pronoun)
