"""Reading one row of a generations file: its mask, its context, its `correct` and, for gold and training rows, the
expected answer (docs/domain.md, 'The annotation pool'). Problems are collected, never raised, so that one run names
every bad row."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import STUDY, TRAINING, PoolItem
from generation.contexts import fill_mask, pre_context
from generation.datasets.registry import DATASET_KINDS, codebook_for
from generation.pronouns import BASES, Codebook

GENERATION_COLUMNS = {"random_pre_gen": "pre", "random_post_gen": "post"}
REQUIRED_COLUMNS = ("template", "correct", "pronoun", "model")
# Each mask marker of the seed's files -> (the dataset kind it means, the case it stands for or None).
MASK_KINDS = {
    mask: (spec.kind.value, form) for spec in DATASET_KINDS.values() for mask, form in spec.seed_masks.items()
}
ALL_MASKS = tuple(MASK_KINDS)
MODEL_NAME_MAX_LENGTH = PoolItem._meta.get_field("model_name").max_length or 200
_YES = {"1", "1.0", "true", "yes", "y"}
_NO = {"0", "0.0", "false", "no", "n"}


@dataclass
class Header:
    generation_column: str
    setting: str
    index: dict[str, int]
    width: int


@dataclass
class Row:
    file: str
    line: int
    key: str
    legacy_key: str  # the identity imports used before rows were recognised by content: file bytes + row number
    model: str
    dataset: str
    setting: str
    pronoun: str
    template: str
    context: str
    continuation: str
    correct: bool | None  # the file's own heuristic verdict (the seed's format); None: the file has none
    gold_label: str = ""
    gold_extraneous: bool | None = None
    explanation: str = ""
    # Free-text generations (annotation/services/imports/free_text.py): the file's item id, the sample index, and
    # the codebook the heuristic reads (None: the built-in kind's own).
    external_id: str = ""
    sample_index: int | None = None
    codebook: Codebook | None = None


def _masks_in(template: str) -> list[str]:
    """Every mask marker in the template, in order of appearance ("[MASK]" is not mistaken for part of another)."""
    found = []
    for mask in ALL_MASKS:
        start = template.find(mask)
        while start != -1:
            found.append((start, mask))
            start = template.find(mask, start + len(mask))
    return [mask for _, mask in sorted(found)]


def _mask_of(mask: str) -> tuple[str, str | None]:
    """(dataset kind, case form or None when the marker does not tell it)."""
    return MASK_KINDS[mask]


def _post_context(
    template: str, mask: str, dataset: str, form: str | None, pronoun: str, generation: str
) -> str | None:
    """The template with the mask filled by the form of `pronoun` that the generation actually starts with.

    The file does not say the mask's case for MISGENDERED, so every form of the base is tried; when several fit
    (a template ending in the mask: "her" and "herself") the longest one wins.
    """
    codebook = codebook_for(dataset)
    forms = [form] if form else list(codebook.forms)
    fitting = [
        context
        for surface in {codebook.surface(pronoun, f) for f in forms}
        if generation.startswith(context := fill_mask(template, mask, surface))
    ]
    return max(fitting, key=len) if fitting else None


def _parse_correct(value: str) -> bool | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return {1.0: True, 0.0: False}.get(number)


def _label_key(value: str) -> str:
    return value.strip().lower().replace(" ", "_").replace("-", "_")


def _cell(record: list[str], header: Header, column: str) -> str:
    # A quoted cell keeps the file's line endings; CRLF and LF mean the same text.
    i = header.index.get(column)
    return record[i].replace("\r\n", "\n") if i is not None else ""


def check_quality_fields(value: dict[str, str], *, kind: str, labels: list[str], problems: list[str]):
    """gold_label, gold_extraneous, explanation of a gold or training row."""
    gold_label = _label_key(value["gold_label"])
    if gold_label not in labels:
        problems.append(f"gold_label {value['gold_label']!r} is not one of this pool's labels: {', '.join(labels)}")
    extraneous_text = value["gold_extraneous"].strip().lower()
    gold_extraneous = None
    if extraneous_text in _YES:
        gold_extraneous = True
    elif extraneous_text in _NO:
        gold_extraneous = False
    elif extraneous_text:
        problems.append(f"gold_extraneous must be 1/0, yes/no or true/false, not {value['gold_extraneous']!r}")
    explanation = value["explanation"].strip()
    if kind == TRAINING and not explanation:
        problems.append("explanation is empty (a training item shows it to the annotator after they answer)")
    return gold_label, gold_extraneous, explanation


def _field_problems(value: dict[str, str], *, pronoun: str, model: str, masks: list[str]) -> list[str]:
    """What is wrong with a row's pronoun, model, correct value and template mask, each said once."""
    problems = []
    if pronoun not in BASES:
        problems.append(f"unknown pronoun {value['pronoun']!r} (known: {', '.join(BASES)})")
    if not model:
        problems.append("empty model")
    elif len(model) > MODEL_NAME_MAX_LENGTH:
        problems.append(f"model name is {len(model)} characters long; at most {MODEL_NAME_MAX_LENGTH} are allowed")
    if _parse_correct(value["correct"].strip()) is None:
        problems.append(f"correct must be 1.0 or 0.0, not {value['correct']!r}")
    if not masks:
        problems.append(
            "template has no mask marker ({mask_token}, [MASK], $NOM_PRONOUN, $ACC_PRONOUN or $POSS_PRONOUN)"
        )
    elif len(masks) > 1:
        problems.append(f"template has {len(masks)} masks ({', '.join(masks)}); it needs exactly one")
    return problems


def _context_of(
    header: Header, template: str, marker: str, *, dataset: str, form: str | None, pronoun: str, text: str
) -> tuple[str | None, str]:
    """The context the generated text starts with (pre: the template up to its mask; post: the template filled with
    a form of the pronoun), or None and what is wrong."""
    if header.setting == "pre":
        context = pre_context(template, marker)
        if not text.startswith(context):
            return None, f"{header.generation_column} does not start with the pre-[MASK] context {context!r}"
        return context, ""
    post = _post_context(template, marker, dataset, form, pronoun, text)
    if post is None:
        return None, (
            f"{header.generation_column} does not start with the template filled with any form of {pronoun!r}"
        )
    return post, ""


def row_parse(
    record: list[str], header: Header, *, name: str, line: int, kind: str, labels: list[str], errors: list[str]
) -> Row | None:
    if len(record) != header.width:
        errors.append(f"{name}:{line}: {len(record)} fields where the header has {header.width}")
        return None
    columns = (*REQUIRED_COLUMNS, header.generation_column, "gold_label", "gold_extraneous", "explanation")
    value = {column: _cell(record, header, column) for column in columns}
    template, generation = value["template"], value[header.generation_column]
    pronoun, model = value["pronoun"].strip().lower(), value["model"].strip()
    problems = [f"{column} holds a NUL character" for column in columns if "\x00" in value[column]]
    if problems:  # nothing else is worth reading: PostgreSQL cannot store the cell at all
        errors.append(f"{name}:{line}: " + "; ".join(problems))
        return None
    masks = _masks_in(template)
    problems += _field_problems(value, pronoun=pronoun, model=model, masks=masks)
    quality = ("", None, "")
    if kind != STUDY:
        quality = check_quality_fields(value, kind=kind, labels=labels, problems=problems)
    if problems:
        errors.append(f"{name}:{line}: " + "; ".join(problems))
        return None
    marker = masks[0]
    dataset, form = _mask_of(marker)
    context, problem = _context_of(
        header, template, marker, dataset=dataset, form=form, pronoun=pronoun, text=generation
    )
    if context is None:
        errors.append(f"{name}:{line}: {problem}")
        return None
    correct = _parse_correct(value["correct"].strip())
    assert correct is not None  # a bad value was reported above
    gold_label, gold_extraneous, explanation = quality
    return Row(
        file=name,
        line=line,
        key="",
        legacy_key="",
        model=model,
        dataset=dataset,
        setting=header.setting,
        pronoun=pronoun,
        template=template,
        context=context,
        continuation=generation[len(context) :],
        correct=correct,
        gold_label=gold_label,
        gold_extraneous=gold_extraneous,
        explanation=explanation,
    )
