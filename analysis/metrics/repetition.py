"""Repetition rate (paper appendix I, Bertoldi et al. 2014 eq. 1 with an infinite window)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def repetition_rate(tokens: Sequence[str]) -> float | None:
    """RR = (prod_{n=1..4} (V(n) - V(n,1)) / V(n))^(1/4) over lower-cased tokens, where V(n) counts n-gram types and
    V(n,1) those seen once. Undefined (None) for texts shorter than four tokens, which have no 4-grams."""
    lowered = [token.lower() for token in tokens]
    if len(lowered) < 4:
        return None
    product = 1.0
    for n in range(1, 5):
        counts = Counter(zip(*(lowered[i:] for i in range(n)), strict=False))
        types = len(counts)
        singletons = sum(1 for count in counts.values() if count == 1)
        product *= (types - singletons) / types
    return product**0.25
