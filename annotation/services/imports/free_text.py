"""Reading free-text generations (docs/domain.md, "Bring your own study"): generations made anywhere, one row per
item, as CSV or JSON Lines.

Columns: `item` (unique), `model`, `dataset`, `context`, `generation` (the generated text alone); optional `pronoun`
(a family of the dataset's codebook; empty: not stated, and the heuristic gives no verdict), `setting` (default
`free`) and `sample` (default 0). A row whose `dataset` names a stored templates dataset is one of its generations:
`template_id`, `pronoun` (the family) and `name` (empty when the dataset has no names) find its instance, and its
`context` must be that instance's pre or post context (which one is the setting when the row names none).

Every problem is named as `FILE:LINE: field: problem`; nothing is written while any row has one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from annotation.models import FREE_SETTING, SETTING_PATTERN, STUDY, PoolItem
from annotation.services.imports.rows import MODEL_NAME_MAX_LENGTH, Row, check_quality_fields
from common.json_input import json_loads
from generation.contexts import post_context, pre_context
from generation.datasets.base import DATASET_NAME
from generation.datasets.labels import NAMED_KINDS, free_text_codebook
from generation.datasets.registry import CODEBOOKS
from generation.models import Dataset, Instance
from generation.pronouns import Codebook
from generation.selectors import dataset_codebook
from generation.textfiles import nul_problems

REQUIRED = ("item", "model", "dataset", "context", "generation")
OPTIONAL = ("pronoun", "setting", "sample", "template_id", "name", "gold_label", "gold_extraneous", "explanation")
COLUMNS = (*REQUIRED, *OPTIONAL)
ITEM_MAX_LENGTH = PoolItem._meta.get_field("external_id").max_length or 200
DATASET_MAX_LENGTH = PoolItem._meta.get_field("dataset").max_length or 64
SAMPLE_MAX = 32767
_SETTING = re.compile(SETTING_PATTERN)


def is_free_text_header(header: list[str]) -> bool:
    """A header in this format: it has the `generation` column (the seed's files have random_pre_gen or
    random_post_gen instead)."""
    return "generation" in header


@dataclass(frozen=True)
class _Instance:
    text: str  # with its slot marker
    pre: str
    post: str


@dataclass
class DatasetPlan:
    """What rows of one dataset are read against: its codebook and, for a stored templates dataset, its instances
    by (template id, family, name)."""

    name: str
    codebook: Codebook
    instances: dict[tuple[str, str, str], _Instance] | None = None


class Datasets:
    """The datasets an import's rows name, each looked up once. A stored templates dataset brings its codebook and
    instances; the paper's built-in kinds keep their own codebook (the seed's heuristic); any other name is a
    free-text dataset with the import's codebook (MISGENDERED's when none is given)."""

    def __init__(self, codebook: Codebook | None = None):
        self.free_text = free_text_codebook(codebook)
        self._plans: dict[str, DatasetPlan] = {}

    def plan(self, name: str) -> DatasetPlan:
        if name not in self._plans:
            self._plans[name] = self._load(name)
        return self._plans[name]

    def _load(self, name: str) -> DatasetPlan:
        if name in CODEBOOKS:
            return DatasetPlan(name, CODEBOOKS[name])
        dataset = Dataset.objects.filter(name=name, kind__in=NAMED_KINDS).first()
        if dataset is None:
            return DatasetPlan(name, self.free_text)
        instances = {}
        rows = Instance.objects.filter(dataset=dataset).values_list(
            "template__source_id", "pronoun", "name", "text", "template__mask", "correct_form"
        )
        for source_id, base, drawn, text, mask, correct in rows.iterator(chunk_size=5000):
            instances[(source_id, base, drawn)] = _Instance(
                text, pre_context(text, mask), post_context(text, mask, correct)
            )
        return DatasetPlan(name, dataset_codebook(dataset=dataset), instances)


def jsonl_records(lines: Iterator[tuple[int, str]], *, name: str, errors: list[str]) -> Iterator[tuple[int, dict]]:
    """(line, cells) of each non-blank line of a JSON Lines file: an object whose values are text, numbers or null
    (null and a missing key read as an empty cell)."""
    for line, text in lines:
        if not text.strip():
            continue
        try:
            record = json_loads(text)
        except json.JSONDecodeError as exc:
            errors.append(f"{name}:{line}: not a JSON object ({exc.msg}, column {exc.colno})")
            continue
        if not isinstance(record, dict):
            errors.append(f"{name}:{line}: not a JSON object (a {type(record).__name__})")
            continue
        cells: dict[str, str] = {}
        bad = False
        for key, value in record.items():
            if value is None:
                cells[key] = ""
            elif isinstance(value, str):
                cells[key] = value
            elif isinstance(value, int | float) and not isinstance(value, bool):
                cells[key] = str(value)
            else:
                errors.append(f"{name}:{line}: {key}: must be text or a number, not {type(value).__name__}")
                bad = True
        missing = [column for column in REQUIRED if column not in record]
        if missing:
            errors.append(f"{name}:{line}: missing field(s): {', '.join(missing)}")
            bad = True
        if not bad:
            yield line, cells


def missing_columns(header: list[str]) -> list[str]:
    return [column for column in REQUIRED if column not in header]


def _sample(value: str, problems: list[str]) -> int | None:
    text = value.strip()
    if not text:
        return 0
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    if not number.is_integer() or not 0 <= number <= SAMPLE_MAX:
        problems.append(f"sample: {value!r} is not a whole number from 0 to {SAMPLE_MAX}")
        return None
    return int(number)


def _templates_row(cells: dict[str, str], plan: DatasetPlan, pronoun: str, setting: str, problems: list[str]):
    """(instance text, setting) of a templates dataset's generation, or None with its problems said."""
    assert plan.instances is not None
    template_id, drawn = cells.get("template_id", "").strip(), cells.get("name", "").strip()
    if not template_id:
        problems.append(f"template_id: empty (dataset {plan.name!r} is a templates dataset)")
    if not pronoun:
        problems.append(f"pronoun: empty (a generation of templates dataset {plan.name!r} names its family)")
    if problems:
        return None
    instance = plan.instances.get((template_id, pronoun, drawn))
    if instance is None:
        problems.append(
            f"template_id: dataset {plan.name!r} has no instance of template {template_id!r} for {pronoun!r}"
            + (f" with name {drawn!r}" if drawn else " without a name")
        )
        return None
    context = cells["context"].replace("\r\n", "\n")
    fits = [s for s, text in (("pre", instance.pre), ("post", instance.post)) if text == context]
    if setting != FREE_SETTING:
        if setting not in ("pre", "post"):
            problems.append(f"setting: {setting!r}; a templates dataset's generations are pre or post")
        elif setting not in fits:
            problems.append(f"context: not the {setting} context of template {template_id!r} for {pronoun!r}")
        return (instance.text, setting) if not problems else None
    if not fits:
        problems.append(f"context: neither the pre nor the post context of template {template_id!r} for {pronoun!r}")
        return None
    return instance.text, fits[0]


def _plain_fields(value: dict[str, str], *, item: str, model: str, dataset: str, problems: list[str]) -> bool:
    """The problems of item, model, dataset and generation; whether the dataset's name is good."""
    for column, text, most in (("item", item, ITEM_MAX_LENGTH), ("model", model, MODEL_NAME_MAX_LENGTH)):
        if not text:
            problems.append(f"{column}: empty")
        elif len(text) > most:
            problems.append(f"{column}: {len(text)} characters long; at most {most} are allowed")
    if not value["generation"].strip():
        problems.append("generation: empty")
    if not dataset:
        problems.append("dataset: empty")
        return False
    if not DATASET_NAME.match(dataset) or len(dataset) > DATASET_MAX_LENGTH:
        problems.append(f"dataset: {dataset[:80]!r} is not a dataset name (1-64 letters, digits, - and _)")
        return False
    return True


def free_row_parse(
    cells: dict[str, str],
    *,
    name: str,
    line: int,
    kind: str,
    labels: list[str],
    datasets: Datasets,
    errors: list[str],
) -> Row | None:
    """One row, checked; its problems go to `errors` as `FILE:LINE: field: problem`."""
    value = {column: cells.get(column, "").replace("\r\n", "\n") for column in COLUMNS}
    nul = nul_problems(value, name=name, line=line)
    if nul:  # nothing else is worth reading: PostgreSQL cannot store the cell at all
        errors.extend(nul)
        return None
    problems: list[str] = []
    item, model, dataset = value["item"].strip(), value["model"].strip(), value["dataset"].strip()
    dataset_good = _plain_fields(value, item=item, model=model, dataset=dataset, problems=problems)
    setting = value["setting"].strip().lower() or FREE_SETTING
    if not _SETTING.match(setting):
        problems.append(f"setting: {value['setting']!r} is not a setting (a-z, digits, - and _, at most 16)")
    sample = _sample(value["sample"], problems)
    pronoun = value["pronoun"].strip().lower()
    quality: tuple[str, bool | None, str] = ("", None, "")
    if kind != STUDY:
        quality = check_quality_fields(value, kind=kind, labels=labels, problems=problems)
    plan = datasets.plan(dataset) if dataset_good else None
    if plan is not None and pronoun and pronoun not in plan.codebook.bases:
        problems.append(
            f"pronoun: {value['pronoun']!r} is not a family of the codebook of dataset {dataset!r} "
            f"({', '.join(plan.codebook.bases)}); leave it empty when the file does not state it"
        )
    template = ""
    if plan is not None and plan.instances is not None and not problems:
        found = _templates_row(value, plan, pronoun, setting, problems)
        if found is not None:
            template, setting = found
    if problems:
        errors.extend(f"{name}:{line}: {problem}" for problem in problems)
        return None
    assert plan is not None
    gold_label, gold_extraneous, explanation = quality
    return Row(
        file=name,
        line=line,
        key="",
        legacy_key="",
        model=model,
        dataset=dataset,
        setting=setting,
        pronoun=pronoun,
        template=template,
        context=value["context"],
        continuation=value["generation"],
        correct=None,
        gold_label=gold_label,
        gold_extraneous=gold_extraneous,
        explanation=explanation,
        external_id=item,
        sample_index=sample,
        codebook=plan.codebook,
    )


def free_content(row: Row, kind: str) -> str:
    """What identifies a free-text row (its key): every field it was read from."""
    fields = [kind, "free-text", row.external_id, row.model, row.dataset, row.setting, row.pronoun, row.sample_index]
    fields += [row.template, row.context, row.continuation, row.gold_label, row.gold_extraneous, row.explanation]
    return json.dumps(fields, ensure_ascii=False)
