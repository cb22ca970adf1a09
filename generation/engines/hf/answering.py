"""The hf engine's answers to a judge's prompts (docs/domain.md, 'Machine raters'), on many prompts at once.

Likelihood: each option's score is the mean token log-probability of the option's text after the prompt. The prompt
is tokenized as usual (with whatever special tokens the tokenizer adds), each option on its own without special
tokens, and the option's ids are appended to the prompt's ids; tokenizing the joined text instead could merge tokens
across the boundary. The prompts' tokens run once (prompts that open alike share them) and the options as branches
of their tree (`score_suffixes`, the prefix-shared scorer; the opening all prompts of the call share runs once and
every row reads it from its key/value cache).

Sampling: k answers per item at temperature T (pure sampling: no top-k, no top-p), seeded, each prompt run once for
its k answers (Concord's sampling loop); the opening all prompts of the call share runs once and the prompts of one
batch as trees (the samples of one context share their part). An answer names the option whose text appears first in
it (`generation.engines.replies.answer_label`).
"""

from __future__ import annotations

from collections.abc import Sequence

from generation.engines.base import Answer
from generation.engines.hf.loading import LoadedModel
from generation.engines.hf.sampling import Decoding, sample_continuations
from generation.engines.hf.scoring import score_suffixes
from generation.engines.replies import answer_label


def option_ids(*, loaded: LoadedModel, options: dict[str, str]) -> list[list[int]]:
    return [loaded.tokenizer(text, add_special_tokens=False).input_ids for text in options.values()]


def option_scores(
    *, loaded: LoadedModel, prompts: Sequence[str], options: dict[str, str], batch_size: int | None = None
) -> list[list[float]]:
    """Every option's mean token log-probability after every prompt (in option order), batched."""
    if not prompts:
        return []
    suffixes = option_ids(loaded=loaded, options=options)
    prefixes = loaded.tokenizer(list(prompts)).input_ids
    losses = score_suffixes(loaded=loaded, prefixes=prefixes, suffixes=[suffixes] * len(prompts), batch_size=batch_size)
    return [[-loss for loss in row] for row in losses]


def sampled_answers(
    *,
    loaded: LoadedModel,
    prompts: Sequence[str],
    k: int,
    temperature: float,
    seed: int,
    max_new_tokens: int,
    batch_size: int | None = None,
) -> list[list[str]]:
    """k answers per prompt, in prompt order (pure sampling: no top-k, no top-p; an answer may end early). The same
    prompts, batch size and seed give the same answers."""
    return sample_continuations(
        loaded=loaded,
        contexts=prompts,
        decoding=Decoding(samples=k, max_new_tokens=max_new_tokens, top_k=0, top_p=1.0),
        seed=seed,
        batch_size=batch_size,
        temperature=temperature,
        may_end=True,
        share_prefixes=True,
    )


def answer_room(*, loaded: LoadedModel, options: dict[str, str]) -> int:
    """The tokens a sampled answer gets: the longest option's, and room for a leading word or punctuation."""
    return max(len(ids) for ids in option_ids(loaded=loaded, options=options)) + 4


def hf_answers(
    *,
    loaded: LoadedModel,
    prompts: Sequence[str],
    options: dict[str, str],
    mode: str,
    k: int,
    temperature: float,
    seed: int,
) -> list[Answer]:
    """The hf engine's `answer` (generation/engines/base.py): the whole chunk in one batch."""
    if mode == "likelihood":
        rows = option_scores(loaded=loaded, prompts=prompts, options=options)
        return [Answer(scores=dict(zip(options, row, strict=True))) for row in rows]
    answers = sampled_answers(
        loaded=loaded,
        prompts=prompts,
        k=k,
        temperature=temperature,
        seed=seed,
        max_new_tokens=answer_room(loaded=loaded, options=options),
        batch_size=len(prompts),
    )
    return [Answer(replies=list(row), labels=[answer_label(reply, options) for reply in row]) for row in answers]
