"""The hf engine's sampler: transformers in the worker's process (generation/engines/hf/sampling.py); its `Engine`
entry is in generation/engines/__init__.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from generation.engines.hf.sampling import Decoding, sample_continuations, sample_groups

if TYPE_CHECKING:
    from generation.engines.hf.loading import LoadedModel
    from generation.models import LanguageModel


class HfEngine:
    name = "hf"

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        contexts: Sequence[str],
        decoding: Decoding,
        seed: int,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[str]]:
        # One batch per chunk: the chunk's size is the job's batch size, and the same batch with the same seed
        # reproduces the same text when a chunk runs again. `stop` is asked about once a second during the call,
        # which raises generation.engines.hf.sampling.Interrupted once it turns True.
        return sample_continuations(
            loaded=loaded, contexts=contexts, decoding=decoding, seed=seed, batch_size=max(1, len(contexts)), stop=stop
        )

    def sample_groups(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        groups: Sequence[tuple[Sequence[str], int]],
        decoding: Decoding,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[list[str]]]:
        # Each group as `sample` gives it (one batch, its seed), decoded together where the model allows it.
        return sample_groups(loaded=loaded, groups=groups, decoding=decoding, stop=stop)
