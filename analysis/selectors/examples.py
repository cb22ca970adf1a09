"""Qualitative examples (docs/domain.md, 'Aggregates'; the paper's tables 8 and 9).

One table per dataset x setting and kind: `disagreement` (the human verdict and the heuristic differ) and, separately,
`extraneous` (the human label marks extraneous gendered words). Each table is drawn as the seed's
`manual-annotations.py` draws it, in two steps:

1. per model, per pronoun in the order he, she, they, xe: `DataFrame.sample(n=1, random_state=seed)` over that
   pronoun's qualifying items in pool order, giving each model a list of up to four items;
2. Python's `random.seed(seed)` before the table, then, for the models in sorted display order, `random.choice` of
   that model's list. A model whose list is empty gets a row whose example fields are None (printed as ---) and
   draws nothing, so the models after it draw as if it were absent.
"""

from __future__ import annotations

import functools
import random
from typing import cast

from analysis.report.types import Example
from common.frames import pd
from generation.contexts import ALL_SETTINGS
from generation.models import DatasetKind
from generation.pronouns import BASES

EXAMPLES_SEED = 131719
# The draw's seed is a 32-bit unsigned integer (numpy's RandomState takes no other): docs/domain.md, "Aggregates".
SEED_MAX = 2**32 - 1


def seed_parse(raw: str) -> int:
    """The seed written in `raw` (an integer in 0..2^32-1); a ValueError saying what is wrong otherwise."""
    text = raw.strip()
    if not text.lstrip("+-").isdigit() or len(text) > 12:
        if text.lstrip("+-").isdigit():
            raise ValueError(f"the seed must be between 0 and {SEED_MAX}.")
        raise ValueError(f"the seed must be an integer between 0 and {SEED_MAX}, not {raw[:40]!r}.")
    value = int(text)
    if not 0 <= value <= SEED_MAX:
        raise ValueError(f"the seed must be between 0 and {SEED_MAX}.")
    return value


EXAMPLE_KINDS = ["disagreement", "extraneous"]
EXAMPLE_FIELDS = [
    "public_id",
    "dataset",
    "setting",
    "context",
    "continuation",
    "first_pronoun",
    "human_label",
    "heuristic_correct",
]


def _pronoun_order(pronoun: str) -> tuple[int, str]:
    return (BASES.index(pronoun) if pronoun in BASES else len(BASES), pronoun)


def _table_order(table: tuple[str, str]) -> tuple[int, str, int, str]:
    dataset, setting = table
    kinds, settings = list(DatasetKind.values), list(ALL_SETTINGS)
    return (
        kinds.index(dataset) if dataset in kinds else len(kinds),
        dataset,
        settings.index(setting) if setting in settings else len(settings),
        setting,
    )


# Which of a table's items qualify for each kind of example.
QUALIFIES = {
    # An item without a heuristic verdict (free text with no stated pronoun) disagrees with nobody.
    "disagreement": lambda item: pd.notna(item["heuristic"]) and int(item["human_binary"]) != int(item["heuristic"]),
    "extraneous": lambda item: bool(item["human_extraneous"]),
}


@functools.cache
def _sample_position(n: int, seed: int) -> int:
    """The position that `DataFrame.sample(n=1, random_state=seed)` takes among `n` rows: pandas' own draw, asked
    once per count and seed."""
    return int(pd.Series(range(n)).sample(n=1, random_state=seed).iloc[0])


def _model_list(by_pronoun: dict[str, list[dict]], *, kind: str, seed: int) -> tuple[list[dict], int]:
    """Step 1 for one model's items of one table: one pandas draw per pronoun with candidates; and the candidates."""
    picks, candidates = [], 0
    for pronoun in sorted(by_pronoun, key=_pronoun_order):
        qualifying = [item for item in by_pronoun[pronoun] if QUALIFIES[kind](item)]
        candidates += len(qualifying)
        if qualifying:
            picks.append(qualifying[_sample_position(len(qualifying), seed)])
    return picks, candidates


def examples(*, frame: pd.DataFrame, seed: int = EXAMPLES_SEED) -> list[Example]:
    """Rows `kind`, `dataset`, `setting`, `model`, `candidates` (the model's qualifying items in the table),
    `choices` (its list of per-pronoun draws), `pronoun` and the other EXAMPLE_FIELDS of the chosen item (None where
    the model has none): disagreement tables before extraneous ones, tables in dataset and setting order, models in
    sorted order. Every model of the frame has a row in every table."""
    if frame.empty:
        return []
    # The items in pool order, grouped by table, model and pronoun: plain rows, as pandas' filters cost milliseconds
    # each on a pool's few rows.
    items: dict[tuple[str, str, str], dict[str, list[dict]]] = {}
    for item in frame.sort_values("id").to_dict("records"):
        table = items.setdefault((item["dataset"], item["setting"], item["model"]), {})
        table.setdefault(item["pronoun"], []).append(item)
    models = sorted({model for _, _, model in items})
    tables = sorted({(dataset, setting) for dataset, setting, _ in items}, key=_table_order)
    rows = []
    for kind in EXAMPLE_KINDS:
        for dataset, setting in tables:
            rng = random.Random(seed)  # the seed's random.seed(131719) before each table
            for model in models:
                picks, candidates = _model_list(items.get((dataset, setting, model), {}), kind=kind, seed=seed)
                row: dict[str, object] = {"kind": kind, "dataset": dataset, "setting": setting, "model": model}
                row |= {"candidates": candidates, "choices": len(picks)}
                if not picks:
                    rows.append({**dict.fromkeys(EXAMPLE_FIELDS), **row, "pronoun": None})
                    continue
                drawn = rng.choice(picks)
                example = {field: drawn[field] for field in EXAMPLE_FIELDS}
                verdict = example["heuristic_correct"]
                example["heuristic_correct"] = None if pd.isna(verdict) else bool(verdict)
                rows.append({**example, **row, "pronoun": drawn["pronoun"]})
    return cast(list[Example], rows)
