"""The dataset kinds, name -> spec: `import_dataset`'s KIND choices in this order, and all that callers ask of a kind.

A new kind is one module beside this one that declares its `DatasetKindSpec`, and one line below (see the package's
docstring for a kind stored under a new `Dataset.kind`).
"""

from __future__ import annotations

from generation.datasets.base import DatasetKindSpec
from generation.datasets.gifi import GIFI
from generation.datasets.misgendered import MISGENDERED
from generation.datasets.pairs import CROWS_PAIRS, STEREOSET
from generation.datasets.ruff import RUFF
from generation.datasets.ruff_distractors import RUFF_DISTRACTORS
from generation.datasets.tango import TANGO
from generation.datasets.templates import TEMPLATES
from generation.pronouns import Codebook

DATASET_KINDS: dict[str, DatasetKindSpec] = {
    spec.name: spec for spec in (MISGENDERED, RUFF, TANGO, RUFF_DISTRACTORS, TEMPLATES, CROWS_PAIRS, STEREOSET, GIFI)
}

# Per stored kind (Dataset.kind): the spec that reads it back (the first registered), and the built-in codebooks.
_STORED: dict[str, DatasetKindSpec] = {}
for _spec in DATASET_KINDS.values():
    _STORED.setdefault(_spec.kind.value, _spec)
CODEBOOKS: dict[str, Codebook] = {kind: spec.codebook for kind, spec in _STORED.items() if spec.codebook is not None}


def dataset_kind(kind: str) -> DatasetKindSpec:
    """The spec of a registered kind (an `import_dataset` KIND), or of the kind a Dataset is stored as."""
    spec = DATASET_KINDS.get(kind) or _STORED.get(kind)
    if spec is None:
        raise KeyError(f"no dataset kind {kind!r}; known: {', '.join(DATASET_KINDS)}")
    return spec


def codebook_for(dataset_kind: str) -> Codebook:
    """A built-in kind's codebook, by its stored kind (docs/domain.md, 'Pronouns and codebooks')."""
    try:
        return CODEBOOKS[dataset_kind]
    except KeyError:
        raise KeyError(f"no codebook for dataset kind {dataset_kind!r}; known: {', '.join(CODEBOOKS)}") from None
