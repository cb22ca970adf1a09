"""How a judge rates items (docs/domain.md, 'Machine raters'): likelihood or sampling, on many prompts at once.

A run's judge answers through the engine its model runs on (generation/engines/, `Engine.answer`: local weights on
the hf engine, as below; a model behind an endpoint as docs/domain.md, 'Models behind an endpoint' says), and
`answer_verdict` turns each answer into a verdict. `likelihood_judge` and `sampling_judge` are the hf engine's path
called directly on a loaded model.

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
from collections.abc import Sequence
from dataclasses import dataclass, field

from generation.engines.base import Answer
from generation.engines.hf.answering import answer_room, option_ids, option_scores, sampled_answers
from generation.engines.hf.loading import LoadedModel
from generation.engines.replies import answer_label

__all__ = [
    "Verdict", "answer_label", "answer_verdict", "likelihood_judge", "likelihood_verdict", "option_ids",
    "option_probabilities", "sampled_answers", "sampling_judge", "sampling_verdict",
]  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    label: str  # "" when no sampled answer named an option
    confidence: float
    scores: dict[str, float]  # label -> mean log-probability (likelihood) or vote share (sampling)
    samples: list[str] = field(default_factory=list)


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
    rows = option_scores(loaded=loaded, prompts=prompts, options=options, batch_size=batch_size)
    return [likelihood_verdict(options=options, scores=row) for row in rows]


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


def sampling_verdict(
    *, options: dict[str, str], answers: Sequence[str], labels: Sequence[str | None] | None = None
) -> Verdict:
    """The most named option (`labels`: the option each answer names, None for none; by default as a local judge's
    answers are read, `answer_label`)."""
    if labels is None:
        labels = [answer_label(answer, options) for answer in answers]
    votes = dict.fromkeys(options, 0)
    for label in labels:
        if label is not None:
            votes[label] += 1
    best = max(votes, key=lambda label: votes[label])  # dicts keep option order: ties go to the first
    share = {label: count / len(answers) for label, count in votes.items()}
    if votes[best] == 0:
        return Verdict(label="", confidence=0.0, scores=share, samples=list(answers))
    return Verdict(label=best, confidence=share[best], scores=share, samples=list(answers))


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
    answers = sampled_answers(
        loaded=loaded,
        prompts=prompts,
        k=k,
        temperature=temperature,
        seed=seed,
        max_new_tokens=answer_room(loaded=loaded, options=options),
        batch_size=batch_size,
    )
    return [sampling_verdict(options=options, answers=row) for row in answers]


def answer_verdict(*, answer: Answer, options: dict[str, str]) -> Verdict:
    """The verdict of an engine's answer (generation/engines/base.py): the likelihood verdict of its scores, the vote
    of its labelled replies, or no label (an unparsed answer, its replies kept)."""
    if answer.scores is not None:
        return likelihood_verdict(options=options, scores=[answer.scores[label] for label in options])
    if not answer.replies:
        return Verdict(label="", confidence=0.0, scores={}, samples=[])
    return sampling_verdict(options=options, answers=answer.replies, labels=answer.labels)
