"""How a judge rates items (docs/domain.md, 'Machine raters'): likelihood or sampling, on many prompts at once.

Likelihood: each option's score is the mean token log-probability of the option's text after the prompt. The prompt
is tokenized as usual (with whatever special tokens the tokenizer adds), each option on its own without special
tokens, and the option's ids are appended to the prompt's ids; tokenizing the joined text instead could merge tokens
across the boundary. The prompts' tokens run once (prompts that open alike share them) and the options as branches
of their tree (`generation.engines.hf.scoring.score_suffixes`, the prefix-shared scorer; the opening all prompts of
the call share runs once and every row reads it from its key/value cache). The label is the best-scoring option
(ties to the first), the confidence its softmax probability over the options.

Sampling: k answers per item at temperature T (pure sampling: no top-k, no top-p), seeded, each prompt run once for
its k answers (Concord's sampling loop, `generation.engines.hf.sampling`); the opening all prompts of the call share
runs once and the prompts of one batch as trees (the samples of one context share their part). An answer names the
option whose text appears first in it; the label is the most named option (ties to the first in option order), the confidence its vote share.
Answers naming no option count in k but for no option.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from generation.engines.hf.loading import LoadedModel
from generation.engines.hf.scoring import score_suffixes


@dataclass(frozen=True)
class Verdict:
    label: str  # "" when no sampled answer named an option
    confidence: float
    scores: dict[str, float]  # label -> mean log-probability (likelihood) or vote share (sampling)
    samples: list[str] = field(default_factory=list)


def option_ids(*, loaded: LoadedModel, options: dict[str, str]) -> list[list[int]]:
    return [loaded.tokenizer(text, add_special_tokens=False).input_ids for text in options.values()]


def likelihood_verdict(*, options: dict[str, str], scores: Sequence[float]) -> Verdict:
    labels = list(options)
    best = max(range(len(labels)), key=lambda index: (scores[index], -index))  # ties to the first option
    top = max(scores)
    weights = [math.exp(score - top) for score in scores]
    return Verdict(
        label=labels[best],
        confidence=weights[best] / sum(weights),
        scores={label: float(score) for label, score in zip(labels, scores, strict=True)},
    )


def likelihood_judge(
    *, loaded: LoadedModel, prompts: Sequence[str], options: dict[str, str], batch_size: int | None = None
) -> list[Verdict]:
    """Score every option after every prompt, batched with the prefix-shared scorer."""
    if not prompts:
        return []
    suffixes = option_ids(loaded=loaded, options=options)
    prefixes = loaded.tokenizer(list(prompts)).input_ids
    losses = score_suffixes(loaded=loaded, prefixes=prefixes, suffixes=[suffixes] * len(prompts), batch_size=batch_size)
    return [likelihood_verdict(options=options, scores=[-loss for loss in row]) for row in losses]


def option_probabilities(mode: str, options: dict[str, str], scores: dict) -> dict[str, float]:
    """Each option's probability, in option order: the softmax of the mean log-probabilities (likelihood mode) or
    the vote shares (sampling mode; a missing share is 0)."""
    if mode != "likelihood":
        return {label: float(scores.get(label, 0.0)) for label in options}
    values = [float(scores[label]) for label in options]
    top = max(values)
    weights = [math.exp(value - top) for value in values]
    total = sum(weights)
    return {label: weight / total for label, weight in zip(options, weights, strict=True)}


def answer_label(answer: str, options: dict[str, str]) -> str | None:
    """The option an answer names: the one whose text (as whole words, any case) appears first in it; at the same
    place the longer text wins ("no pronoun" before a hypothetical "no")."""
    found: list[tuple[int, int, str]] = []
    for label, text in options.items():
        words = text.strip().lower()
        match = re.search(r"(?<!\w)" + re.escape(words) + r"(?!\w)", answer.lower())
        if match:
            found.append((match.start(), -len(words), label))
    return min(found)[2] if found else None


def sampling_verdict(*, options: dict[str, str], answers: Sequence[str]) -> Verdict:
    votes = dict.fromkeys(options, 0)
    for answer in answers:
        label = answer_label(answer, options)
        if label is not None:
            votes[label] += 1
    best = max(votes, key=lambda label: votes[label])  # dicts keep option order: ties go to the first
    share = {label: count / len(answers) for label, count in votes.items()}
    if votes[best] == 0:
        return Verdict(label="", confidence=0.0, scores=share, samples=list(answers))
    return Verdict(label=best, confidence=share[best], scores=share, samples=list(answers))


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
    from generation.engines.hf.sampling import Decoding, sample_continuations

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


def sampling_judge(
    *,
    loaded: LoadedModel,
    prompts: Sequence[str],
    options: dict[str, str],
    k: int,
    temperature: float,
    seed: int,
    batch_size: int | None = None,
) -> list[Verdict]:
    longest = max(len(ids) for ids in option_ids(loaded=loaded, options=options))
    answers = sampled_answers(
        loaded=loaded,
        prompts=prompts,
        k=k,
        temperature=temperature,
        seed=seed,
        max_new_tokens=longest + 4,  # room for a leading word or punctuation before the option
        batch_size=batch_size,
    )
    return [sampling_verdict(options=options, answers=row) for row in answers]
