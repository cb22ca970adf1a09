"""One rule for deriving a seed from a stored seed: a job's chunk and setting, a vLLM request of a chunk and a judge
run's chunk each draw from their own stream, and a re-run draws the same numbers."""

from __future__ import annotations

SEED_BITS = 32  # vLLM and numpy take 32-bit seeds


def seed_derive(*, seed: int, offset: int) -> int:
    """The seed at `offset` below `seed`: distinct for distinct offsets of one seed, and for one offset of nearby seeds
    (1,000,003 is a prime larger than any offset used)."""
    return (seed * 1_000_003 + offset) % 2**SEED_BITS
