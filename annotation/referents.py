"""Referents on distractor items (docs/domain.md, 'RUFF with distractors'): the two people an annotator is shown, the
pronoun tokens of the generated text that each need a referent, and the check of what an annotator sends back.

Offsets are code points into the stored continuation (Python's string indices), so an emoji or a combining mark
before a pronoun counts as what it is in the text, never as UTF-16 units or bytes. The page gets the offsets from
here and sends them back unchanged; it never computes one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from annotation.models import PoolItem, Referent
from generation.datasets.registry import codebook_for
from generation.models import Instance
from generation.pronouns import BASES

REFERENTS = (Referent.TARGET, Referent.OTHER, Referent.UNCLEAR)
# A word: a letter, then letters and combining marks ("he\u0301" is one word, and not "he").
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_WORD = re.compile(rf"[^\W\d_](?:[^\W\d_]|[{_MARKS}])*")


class ReferentsRejected(ValueError):
    """The referents sent do not match the item's pronoun tokens."""


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    word: str
    base: str

    def as_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "word": self.word, "base": self.base}


def pronoun_tokens(text: str, *, dataset_kind: str) -> list[Token]:
    """Every word of `text` that is a pronoun form of the dataset's codebook, case-insensitively, in text order."""
    codebook = codebook_for(dataset_kind)
    tokens = []
    for match in _WORD.finditer(text):
        base = codebook.base_of.get(match.group().lower())
        if base is not None:
            tokens.append(Token(match.start(), match.end(), match.group(), base))
    return tokens


def _declared(dataset_kind: str, base: str) -> str:
    codebook = codebook_for(dataset_kind)
    return "/".join(dict.fromkeys(codebook.surface(base, form) for form in codebook.forms))


def distractor_instance(item: PoolItem) -> Instance | None:
    """The RUFF distractor instance behind the item, or None for every other item."""
    generation = item.generation
    if generation is None:
        return None
    instance = generation.instance
    return instance if instance.distractors is not None else None


def item_people(item: PoolItem) -> dict | None:
    """What the annotation page shows of a distractor item beyond the texts: both people with their declared pronouns
    (the target marked) and the pronoun tokens to resolve. None for an item without distractors. Nothing here says
    which model wrote the text or what the heuristic found (the blinding of docs/domain.md, 'The annotation schema')."""
    instance = distractor_instance(item)
    if instance is None:
        return None
    kind = item.dataset or instance.dataset.kind
    codebook = codebook_for(kind)
    other_base = codebook.base_of.get(instance.confuse_pronoun, "")
    people = [
        {
            "role": "target",
            "name": instance.template.meta.get("occupation", ""),
            "pronouns": _declared(kind, instance.pronoun),
        },
        {
            "role": "other",
            "name": instance.other_person,
            "pronouns": _declared(kind, other_base) if other_base in BASES else "",
        },
    ]
    tokens = [token.as_dict() for token in pronoun_tokens(item.continuation, dataset_kind=kind)]
    return {"people": people, "pronoun_tokens": tokens}


def referents_check(*, item: PoolItem, referents: Sequence) -> list[tuple[int, int, str, str]]:
    """The referents as stored, (start, end, word, referent) in text order: exactly one per pronoun token of a
    distractor item, none for any other item. ReferentsRejected names the first problem."""
    instance = distractor_instance(item)
    if instance is None:
        if referents:
            raise ReferentsRejected("this item has no distractors: it takes no referents")
        return []
    kind = item.dataset or instance.dataset.kind
    tokens = {t.start: t for t in pronoun_tokens(item.continuation, dataset_kind=kind)}
    chosen: dict[int, str] = {}
    for i, entry in enumerate(referents):
        if isinstance(entry, dict):
            start, end, referent = entry.get("start"), entry.get("end"), entry.get("referent")
        elif isinstance(entry, list | tuple) and len(entry) == 3:
            start, end, referent = entry
        else:
            raise ReferentsRejected(f"referent {i} must be {{start, end, referent}}")
        token = tokens.get(start) if isinstance(start, int) and not isinstance(start, bool) else None
        if token is None or token.end != end:
            raise ReferentsRejected(f"referent {i} [{start}, {end}] is not a pronoun of the generated text")
        if referent not in REFERENTS:
            raise ReferentsRejected(f"referent {i}: {referent!r} is not one of {', '.join(REFERENTS)}")
        if token.start in chosen:
            raise ReferentsRejected(f"referent {i}: the pronoun at {start} has a referent already")
        chosen[token.start] = referent
    missing = [f"{t.word!r} at {t.start}" for s, t in tokens.items() if s not in chosen]
    if missing:
        raise ReferentsRejected(f"every pronoun needs a referent (target, other or unclear): {', '.join(missing)}")
    return [(t.start, t.end, t.word, chosen[s]) for s, t in sorted(tokens.items())]
