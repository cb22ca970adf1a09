"""Qualitative examples (docs/domain.md, 'Aggregates'; the paper's tables 8 and 9).

Per model and pronoun, one seeded draw among the pool's annotated study items where the human verdict and the
heuristic disagree (`kind` "disagreement"), and one among the items the human label marks as holding extraneous
gendered words (`kind` "extraneous"). The draw is `DataFrame.sample(n=1, random_state=seed)` over the candidates in
item order, the way the paper's scripts draw with `random_state=131719`; a model and pronoun without a candidate get
a row whose example fields are None (printed as --- in LaTeX).
"""

from __future__ import annotations

import pandas as pd

from generation.pronouns import BASES

EXAMPLES_SEED = 131719
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


def _candidates(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    if kind == "disagreement":
        return frame[frame["human_binary"].astype(int) != frame["heuristic"].astype(int)]
    return frame[frame["human_extraneous"].astype(bool)]


def examples(*, frame: pd.DataFrame, seed: int = EXAMPLES_SEED) -> list[dict]:
    """Rows `model`, `pronoun`, `kind`, then EXAMPLE_FIELDS (None where the model and pronoun have no candidate),
    models in name order, pronouns in codebook order, disagreement before extraneous."""
    if frame.empty:
        return []
    ordered = frame.sort_values("id")
    models = sorted(ordered["model"].unique())
    pronouns = sorted(ordered["pronoun"].unique(), key=_pronoun_order)
    rows = []
    for model in models:
        for pronoun in pronouns:
            group = ordered[(ordered["model"] == model) & (ordered["pronoun"] == pronoun)]
            for kind in EXAMPLE_KINDS:
                candidates = _candidates(group, kind)
                row = {"model": model, "pronoun": pronoun, "kind": kind, "candidates": int(len(candidates))}
                if candidates.empty:
                    rows.append({**row, **dict.fromkeys(EXAMPLE_FIELDS)})
                    continue
                drawn = candidates.sample(n=1, random_state=seed).iloc[0]
                example = {field: drawn[field] for field in EXAMPLE_FIELDS}
                example["heuristic_correct"] = bool(example["heuristic_correct"])
                rows.append({**row, **example})
    return rows
