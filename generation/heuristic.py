"""The automatic first-pronoun heuristic (docs/domain.md, 'The heuristic'; the paper's eq. 4).

Tokenize the continuation alone with spaCy's English tokenizer; the first token whose lower-cased text is in the
dataset's pronoun set decides: correct iff it is a form of the ground-truth base. A continuation with no pronoun
counts as correct. `spacy.blank("en")` tokenizes exactly as `en_core_web_sm`, without needing the model package.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from generation.pronouns import Codebook


@dataclass(frozen=True)
class Verdict:
    correct: bool
    first_pronoun: str | None  # as written in the text
    offset: int | None  # character offset in the continuation


@lru_cache(maxsize=1)
def _tokenizer():
    import spacy

    return spacy.blank("en").tokenizer


def _verdict(doc, codebook: Codebook, pronoun: str) -> Verdict:
    # A form shared by families is correct when the ground-truth family has it; with the codebook's `clitics`,
    # "ey'll" counts as "ey" (docs/domain.md, "Bring your own study"). The built-in codebooks share no form and
    # take no clitics: the seed's rule exactly.
    for token in doc:
        surface = codebook.pronoun_in(token.lower_)
        if surface is not None:
            return Verdict(pronoun in codebook.bases_of[surface], token.text, token.idx)
    return Verdict(True, None, None)


def heuristic_verdict(*, continuation: str, codebook: Codebook, pronoun: str) -> Verdict:
    return _verdict(_tokenizer()(continuation), codebook, pronoun)


def heuristic_verdicts(items: Iterable[tuple[str, str]], *, codebook: Codebook) -> Iterator[Verdict]:
    """Many (continuation, pronoun) pairs at once, through the tokenizer's batched pipe."""
    items = list(items)
    docs = _tokenizer().pipe(text for text, _ in items)
    for doc, (_, pronoun) in zip(docs, items, strict=True):
        yield _verdict(doc, codebook, pronoun)


def tokens(text: str) -> list[str]:
    """spaCy tokens of a text, as used by the repetition rate too."""
    return [token.text for token in _tokenizer()(text)]
