"""GIFI, the Gender Inclusivity Fairness Index (docs/domain.md, 'GIFI'): its 11-family codebook, its pronoun detector,
and the import of its four template files as one dataset.

A template file row is one instance, continued whole (the `open` setting, as TANGO): the prompt is the row's
template as written. GDR, counterfactual and PE rows declare a family (the instance's pronoun); the SAOF file holds
each template once per family slot without declaring one, so a SAOF template is one instance with no pronoun and its
11 rows are its samples (`generate --samples 11` draws GIFI's design). A template keeps its part, index and the
columns the dimensions need (`state` for SA/OF, `simple_answer` for PE) in its `meta`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from generation.contexts import OPEN
from generation.datasets.base import STORED_EXPORT_COLUMNS, DatasetKind, DatasetKindSpec, stored_export_rows
from generation.datasets.files import ImportFailed, read_rows, signature
from generation.datasets.writing import ImportResult, ParsedInstance, ParsedTemplate, dataset_write
from generation.pronouns import FORMS, Codebook

NAME = "gifi"
KIND = DatasetKind.GIFI
# GIFI's codebook, family -> (nom, acc, pos_dep, pos_ind, ref), as its released code writes it (ae's nominative is
# `aer` there, and e and ey share `em` and `emself`).
FAMILY_FORMS: dict[str, tuple[str, ...]] = {
    "he": ("he", "him", "his", "his", "himself"),
    "she": ("she", "her", "her", "hers", "herself"),
    "they": ("they", "them", "their", "theirs", "themself"),
    "thon": ("thon", "thon", "thons", "thons", "thonself"),
    "e": ("e", "em", "es", "ems", "emself"),
    "ae": ("aer", "aer", "aer", "aers", "aerself"),
    "co": ("co", "co", "cos", "cos", "coself"),
    "vi": ("vi", "vir", "vis", "virs", "virself"),
    "xe": ("xe", "xem", "xyr", "xyrs", "xemself"),
    "ey": ("ey", "em", "eir", "eirs", "emself"),
    "ze": ("ze", "zir", "zir", "zirs", "zirself"),
}
FAMILIES: tuple[str, ...] = tuple(FAMILY_FORMS)
CODEBOOK = Codebook(
    KIND.value, {family: dict(zip(FORMS, forms, strict=True)) for family, forms in FAMILY_FORMS.items()}
)
# The family a detected form stands for: GIFI's own mapping, built as a dict over the codebook, so a form two families
# share belongs to the later one (em and emself: ey).
FORM_FAMILY: dict[str, str] = {form: family for family, forms in FAMILY_FORMS.items() for form in forms}
_DETECT = re.compile(r"\b(?:" + "|".join(FORM_FAMILY) + r")\b", re.IGNORECASE)

GDR, COUNTERFACTUAL, SAOF, PE = "gdr", "counterfactual", "saof", "pe"
PARTS: tuple[str, ...] = (GDR, COUNTERFACTUAL, SAOF, PE)
# Each part's template file, as GIFI releases it (data/template/), and the columns read from it.
PART_FILES = {
    GDR: "tango-all-genders.csv",
    COUNTERFACTUAL: "real-toxicity-prompts-all-genders.csv",
    SAOF: "SAOF_template-all-genders.csv",
    PE: "math_gsm8k-all-genders.csv",
}
PART_COLUMNS = {
    GDR: ("template_index", "pronoun_family", "template"),
    COUNTERFACTUAL: ("template_index", "pronoun_family", "template"),
    SAOF: ("index", "template", "state"),
    PE: ("template_index", "pronoun_family", "template", "simple_answer"),
}
# A GIFI instance has no mask: the model continues the whole prompt (as TANGO), marked by this after the text.
MASK = "{continuation}"
_INTEGER = re.compile(r"^-?\d+$")


def detect_family(text: str) -> tuple[str, str] | None:
    """GIFI's pronoun detector: the first whole-word, case-insensitive match of any codebook form (a regex
    alternation in the codebook's order), as (the form in lower case, its family); None when there is none."""
    match = _DETECT.search(text)
    if match is None:
        return None
    form = match.group(0).lower()
    return form, FORM_FAMILY[form]


def source_id(part: str, index: str) -> str:
    """A GIFI template's `source_id`: its part and its index in that part's file."""
    return f"{part}/{index}"


@dataclass
class GifiImportResult(ImportResult):
    per_part: dict[str, int] = field(default_factory=dict)  # instances per part
    missing: list[str] = field(default_factory=list)  # parts whose file was not in the folder

    def as_json(self) -> dict:
        return {**super().as_json(), "per_part": self.per_part, "missing_parts": self.missing}

    def lines(self) -> list[str]:
        verb = "imported" if self.created else "already imported, unchanged:"
        parts = ", ".join(f"{part} {n}" for part, n in self.per_part.items())
        lines = [f"{verb} {self.dataset.name}: {sum(self.per_part.values())} instances ({parts})"]
        if self.missing:
            lines.append("no file for: " + ", ".join(f"{part} ({PART_FILES[part]})" for part in self.missing))
        return lines


def _integer(value: str, column: str, problems: list[str]) -> str:
    value = value.strip()
    if not _INTEGER.match(value):
        problems.append(f"{column}: expected a whole number (got {value!r})")
    return value


def _variants(part: str, path: Path, errors: list[str]) -> list[ParsedInstance]:
    """A file of family variants (GDR, counterfactual, PE): one instance per row, one template per index."""
    templates: dict[str, ParsedTemplate] = {}
    seen: dict[tuple[str, str], int] = {}
    instances = []
    for line, row in read_rows(path, delimiter=",", required=PART_COLUMNS[part]):
        problems: list[str] = []
        index = _integer(row["template_index"], "template_index", problems)
        family = row["pronoun_family"].strip().lower()
        if family not in FAMILY_FORMS:
            problems.append(f"pronoun_family: {family!r} is not one of GIFI's families ({', '.join(FAMILIES)})")
        text = row["template"]
        if not text.strip():
            problems.append("template: empty")
        elif MASK in text:
            problems.append(f"template: contains {MASK}, which Concord reserves for the continuation")
        answer = _integer(row["simple_answer"], "simple_answer", problems) if part == PE else None
        if not problems and (index, family) in seen:
            problems.append(f"template_index {index}, {family} already on line {seen[index, family]}")
        template = templates.get(index)
        if (
            not problems
            and template is not None
            and answer is not None
            and template.meta["simple_answer"] != int(answer)
        ):
            problems.append(f"simple_answer: {answer} differs from line {template.line}'s for template_index {index}")
        if problems:
            errors += [f"{path}:{line}: {problem}" for problem in problems]
            continue
        seen[index, family] = line
        if template is None:
            meta: dict[str, Any] = {"part": part, "template_index": int(index)}
            if answer is not None:
                meta["simple_answer"] = int(answer)
            template = ParsedTemplate(source_id(part, index), line, text + MASK, MASK, "nom", meta)
            templates[index] = template
        instances.append(ParsedInstance(template, family, 0, "", text + MASK, CODEBOOK.surface(family, "nom")))
    return instances


def _saof(path: Path, errors: list[str]) -> list[ParsedInstance]:
    """The SAOF file: each template on one row per family slot (11), none declaring a family; one instance per
    template, its row count kept as `rows` (GIFI's samples per template)."""
    templates: dict[str, ParsedTemplate] = {}
    texts: dict[str, int] = {}
    for line, row in read_rows(path, delimiter=",", required=PART_COLUMNS[SAOF]):
        problems: list[str] = []
        index = _integer(row["index"], "index", problems)
        text, state = row["template"], row["state"].strip()
        if not text.strip():
            problems.append("template: empty")
        elif MASK in text:
            problems.append(f"template: contains {MASK}, which Concord reserves for the continuation")
        if not state:
            problems.append("state: empty (occupation, or the attribute a stereotype template is about)")
        template = templates.get(index)
        if not problems and template is not None:
            if template.text != text + MASK or template.meta["state"] != state:
                problems.append(f"index {index}: template or state differs from line {template.line}'s")
        if not problems and template is None and texts.get(text) is not None:
            problems.append(f"template: already the template of line {texts[text]} under another index")
        if problems:
            errors += [f"{path}:{line}: {problem}" for problem in problems]
            continue
        if template is None:
            meta = {"part": SAOF, "template_index": int(index), "state": state, "rows": 0}
            template = ParsedTemplate(source_id(SAOF, index), line, text + MASK, MASK, "nom", meta)
            templates[index] = template
            texts[text] = line
        template.meta["rows"] += 1
    return [ParsedInstance(t, "", 0, "", t.text, "") for t in templates.values()]


def dataset_import_gifi(*, folder: Path, name: str = NAME) -> GifiImportResult:
    """GIFI's template files found in `folder` (at least one of the four), as one dataset. Every file is checked
    first (each problem as file:line: field); nothing is written unless all are good. Idempotent."""
    if not folder.is_dir():
        raise ImportFailed([f"{folder}: not a folder (--templates takes the folder holding GIFI's template files)"])
    present = [part for part in PARTS if (folder / PART_FILES[part]).is_file()]
    if not present:
        raise ImportFailed([f"{folder}: none of GIFI's template files ({', '.join(PART_FILES.values())})"])
    errors: list[str] = []
    instances: list[ParsedInstance] = []
    per_part: dict[str, int] = {}
    contents = []
    for part in present:
        path = folder / PART_FILES[part]
        try:
            parsed = _saof(path, errors) if part == SAOF else _variants(part, path, errors)
        except ImportFailed as exc:
            errors += exc.errors
            continue
        per_part[part] = len(parsed)
        instances += parsed
        contents += [part, path.read_bytes()]
    if errors:
        raise ImportFailed(errors)
    result = dataset_write(
        name=name,
        kind=KIND,
        codebook=CODEBOOK,
        source=folder,
        signature=signature(KIND, *contents),
        instances=instances,
    )
    return GifiImportResult(
        dataset=result.dataset,
        created=result.created,
        instances=len(instances),
        per_pronoun=result.per_pronoun,
        per_part=per_part,
        missing=[part for part in PARTS if part not in present],
    )


def command_import(name: str, options: dict[str, Any]) -> ImportResult:
    """`import_dataset gifi --templates DIR` (the folder of GIFI's data/template/ files)."""
    if options["names_dir"] is not None:
        raise CommandError("gifi takes no --names-dir: its prompts already hold their names")
    return dataset_import_gifi(folder=options["templates"], name=name)


GIFI = DatasetKindSpec(
    name=NAME,
    kind=KIND,
    codebook=CODEBOOK,
    command_import=command_import,
    export_columns=STORED_EXPORT_COLUMNS,
    export_rows=stored_export_rows,
    settings=(OPEN,),
    scores_probability=False,
)
