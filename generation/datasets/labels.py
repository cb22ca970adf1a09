"""Dataset labels: what a pool cell, a report row and a judge call a dataset. A dataset of a kind with a codebook of
its own (a built-in kind) is labelled by its kind; one that brings its own codebook (a templates dataset) by its
name, since each has its own families.
"""

from __future__ import annotations

import dataclasses

from django.db.models import Case, CharField, F, Q, When

from generation.datasets import misgendered, ruff
from generation.datasets.base import DATASET_NAME
from generation.datasets.registry import CODEBOOKS, DATASET_KINDS, codebook_for
from generation.models import Dataset
from generation.pronouns import Codebook
from generation.selectors import dataset_codebook

# The stored kinds whose datasets are labelled by their name.
NAMED_KINDS = sorted({spec.kind.value for spec in DATASET_KINDS.values() if spec.codebook is None})


def dataset_label(dataset: Dataset | None) -> str:
    """The kind for the built-in kinds (one codebook each), the dataset's own name for a templates dataset; "" for no
    dataset (a job of another kind). Every place that names a job's or an item's dataset calls this; its codebook is
    then `label_codebook(label)`."""
    if dataset is None:
        return ""
    return dataset.name if dataset.kind in NAMED_KINDS else dataset.kind


def dataset_label_expression(dataset: str) -> Case:
    """`dataset_label` in SQL, for the dataset reached by the lookup path `dataset` ("job__generation_run__dataset", ...)."""
    return Case(
        When(**{f"{dataset}__kind__in": NAMED_KINDS}, then=F(f"{dataset}__name")),
        default=F(f"{dataset}__kind"),
        output_field=CharField(),
    )


def dataset_label_q(dataset: str, label: str) -> Q:
    """The rows whose dataset (by the lookup path `dataset`) has this label."""
    return (Q(**{f"{dataset}__kind": label}) & ~Q(**{f"{dataset}__kind__in": NAMED_KINDS})) | Q(
        **{f"{dataset}__kind__in": NAMED_KINDS, f"{dataset}__name": label}
    )


def label_codebook(label: str) -> Codebook | None:
    """The codebook behind a dataset label: a built-in kind's, or a templates dataset's stored one; None if neither."""
    if label in CODEBOOKS:
        return codebook_for(label)
    if not DATASET_NAME.match(label):  # "ruff (3 distractors)" and such: no dataset's name, no query
        return None
    dataset = Dataset.objects.filter(name=label, kind__in=NAMED_KINDS).first()
    return dataset_codebook(dataset=dataset) if dataset is not None else None


def label_codebook_nearest(label: str) -> Codebook:
    """`label_codebook`, else the nearest built-in one: a RUFF variant's label (such as RUFF with distractors',
    "ruff (3 distractors)") starts with its kind and it spells pronouns as RUFF does; anything else as MISGENDERED."""
    codebook = label_codebook(label)
    if codebook is not None:
        return codebook
    return ruff.CODEBOOK if label.startswith(ruff.NAME) else misgendered.CODEBOOK


def free_text_codebook(codebook: Codebook | None = None) -> Codebook:
    """The codebook of a free-text dataset (docs/domain.md, "Bring your own study"): the one it brings, else
    MISGENDERED's; either way a form with an English clitic counts as that form."""
    return dataclasses.replace(codebook or misgendered.CODEBOOK, clitics=True)
