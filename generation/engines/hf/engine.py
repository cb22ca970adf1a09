"""The hf engine (generation/engines/base.py, `ModelEngine`): transformers in the worker's process. Its `Engine`
entry is in generation/engines/__init__.py; its own types (`LoadedModel`, `Decoding`) stay in this package."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from generation.engines.base import Answer, Sampling, ScoreItem, ScoreResult
from generation.engines.hf.answering import hf_answers
from generation.engines.hf.loading import LoadedModel, model_load
from generation.engines.hf.pairs import text_log_probs
from generation.engines.hf.sampling import Decoding, sample_continuations, sample_groups
from generation.engines.hf.scoring import score_instances

if TYPE_CHECKING:
    from generation.models import LanguageModel


def decoding_of(sampling: Sampling) -> Decoding:
    return Decoding(
        samples=sampling.samples,
        max_new_tokens=sampling.max_new_tokens,
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        num_beams=sampling.num_beams,
    )


class HfEngine:
    name = "hf"

    def load(self, *, language_model: LanguageModel, job_id: int | None = None) -> LoadedModel:
        return model_load(language_model=language_model)  # kept per process (loading.py)

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        contexts: Sequence[str],
        decoding: Sampling,
        seed: int,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[str]]:
        # One batch per chunk: the chunk's size is the job's batch size, and the same batch with the same seed
        # reproduces the same text when a chunk runs again. `stop` is asked about once a second during the call,
        # which raises generation.engines.hf.sampling.Interrupted once it turns True.
        return sample_continuations(
            loaded=loaded,
            contexts=contexts,
            decoding=decoding_of(decoding),
            seed=seed,
            batch_size=max(1, len(contexts)),
            stop=stop,
        )

    def sample_groups(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        groups: Sequence[tuple[Sequence[str], int]],
        decoding: Sampling,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[list[str]]]:
        # Each group as `sample` gives it (one batch, its seed), decoded together where the model allows it.
        return sample_groups(loaded=loaded, groups=groups, decoding=decoding_of(decoding), stop=stop)

    def score(
        self, *, language_model: LanguageModel, loaded: LoadedModel, items: Sequence[ScoreItem]
    ) -> list[ScoreResult]:
        return score_instances(loaded=loaded, items=items)

    def answer(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        prompts: Sequence[str],
        options: dict[str, str],
        mode: str,
        k: int,
        temperature: float,
        seed: int,
    ) -> list[Answer]:
        return hf_answers(
            loaded=loaded, prompts=prompts, options=options, mode=mode, k=k, temperature=temperature, seed=seed
        )

    def score_texts(self, *, language_model: LanguageModel, loaded: LoadedModel, texts: Sequence[str]) -> list[float]:
        # One batch per chunk, as `sample`: the chunk's size is the job's batch size.
        return text_log_probs(loaded=loaded, texts=texts, batch_size=max(1, len(texts)))
