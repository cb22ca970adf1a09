"""A study brought from elsewhere, written by the tests themselves: a pool of free-text items with a two-label set
(`misgendering, correct`: no `no_pronoun`), people's labels as a long and a wide file, and an API judge's labels
with probabilities, a confidence only, or neither. The labels are drawn from a seeded truth with given accuracies,
so the figures are neither trivial nor constant."""

from __future__ import annotations

import csv
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from tests.factories import PoolFactory, pool_item_unsaved

LABELS = ["misgendering", "correct"]
ANNOTATORS = {"ann-a": 0.9, "ann-b": 0.85, "ann-c": 0.8}
MODELS = ["model-x", "model-y"]
PRONOUNS = ["he", "xe"]
CONTEXTS = 40  # per model x pronoun
LABELLED = 25  # of them people label
SAMPLES = 2


@dataclass
class Study:
    pool: object
    items: dict[str, object] = field(default_factory=dict)  # external id -> PoolItem
    truth: dict[str, str] = field(default_factory=dict)
    people: dict[str, dict[str, str]] = field(default_factory=dict)  # item -> {annotator: label}
    judge: dict[str, str] = field(default_factory=dict)  # item -> label
    probabilities: dict[str, dict[str, float]] = field(default_factory=dict)  # item -> {label: p}
    context_of: dict[str, tuple] = field(default_factory=dict)  # item -> (model, pronoun, context index)


def build_pool(*, name: str = "byo", seed: int = 7, labels: list[str] | None = None) -> Study:
    from annotation.models import PoolItem

    rng = random.Random(seed)
    pool = PoolFactory(name=name, labels=list(labels or LABELS))
    study = Study(pool=pool)
    unsaved = []  # the 320 items, written with one INSERT (one each took 0.3 s a test)
    for model in MODELS:
        for pronoun in PRONOUNS:
            rate = 0.35 if pronoun == "xe" else 0.15
            for context in range(CONTEXTS):
                text = f"{model} context {context} about a person whose pronoun is {pronoun}. "
                for sample in range(SAMPLES):
                    external = f"{model}-{pronoun}-{context}-{sample}"
                    item = pool_item_unsaved(
                        pool=pool, model_name=model, dataset="mystudy", setting="pre", pronoun=pronoun,
                        sample_index=sample, context=text, continuation=f"text {external}", external_id=external,
                    )  # fmt: skip
                    unsaved.append(item)
                    study.items[external] = item
                    study.context_of[external] = (model, pronoun, context)
                    truth = "misgendering" if rng.random() < rate else "correct"
                    study.truth[external] = truth
                    if context < LABELLED:
                        study.people[external] = {
                            name: truth if rng.random() < accuracy else _other(truth)
                            for name, accuracy in ANNOTATORS.items()
                        }
                    right = rng.random() < 0.85
                    label = truth if right else _other(truth)
                    study.judge[external] = label
                    p = rng.uniform(0.55, 0.99)
                    study.probabilities[external] = {label: p, _other(label): 1 - p}
    PoolItem.objects.bulk_create(unsaved)  # sets each item's pk (PostgreSQL and SQLite return them)
    return study


def _other(label: str) -> str:
    return "correct" if label == "misgendering" else "misgendering"


def write_long(study: Study, path: Path, *, created_at: bool = True) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "annotator", "label", "created_at", "seconds", "extraneous", "note"])
        for n, (item, given) in enumerate(study.people.items()):
            for annotator, label in given.items():
                stamp = f"2025-03-{1 + n % 28:02d}T10:{n % 60:02d}:00Z" if created_at else ""
                writer.writerow([item, annotator, label, stamp, f"{5 + n % 7}", "0", ""])
    return path


def write_wide(study: Study, path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", *ANNOTATORS])
        for item, given in study.people.items():
            writer.writerow([item, *(given.get(name, "") for name in ANNOTATORS)])
    return path


def write_judge(study: Study, path: Path, *, kind: str = "probabilities") -> Path:
    """The judge's labels: with `prob_<label>` columns, a `confidence` column, or `none` of either; `jsonl` writes
    JSON Lines with probabilities."""
    labels = list(study.pool.labels)
    if kind == "jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for item, label in study.judge.items():
                probabilities = {f"prob_{x}": study.probabilities[item].get(x, 0.0) for x in labels}
                handle.write(json.dumps({"item": item, "label": label, **probabilities}) + "\n")
        return path
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        extra = (
            [f"prob_{x}" for x in labels] if kind == "probabilities" else ["confidence"] if kind == "confidence" else []
        )
        writer.writerow(["item", "label", *extra])
        for item, label in study.judge.items():
            if kind == "probabilities":
                values = [repr(study.probabilities[item].get(x, 0.0)) for x in labels]
            elif kind == "confidence":
                values = [repr(max(study.probabilities[item].values()))]
            else:
                values = []
            writer.writerow([item, label, *values])
    return path
