"""The engine interface (generation/engines/__init__.py): what every engine does, in types no engine owns.

An engine runs a registered model, wherever it lives (the worker's process, vLLM, a server behind an endpoint). It
does five things, each a method of `ModelEngine`:

- `load(language_model=...)`: what it needs to run the model here (the HF engine: tokenizer and weights; an
  endpoint: nothing but its settings), handed back to the other four as `loaded`; an engine keeps it per process;
- `sample(...)`: `decoding.samples` continuations of each context (the generation-based evaluation);
- `score(...)`: the probability-based evaluation of masked instances (`ScoreItem` -> `ScoreResult`), or
  `EngineUnavailable` where the engine cannot (an endpoint without prompt log-probs);
- `answer(...)`: a judge's answers to its prompts (`Answer`): the replies and the option each names (sampling), or
  each option's score (likelihood);
- `score_texts(...)`: each text's summed token log-probability, log p(token | the tokens before it) from BOS (the
  causal scoring of stereotype pairs), or `EngineUnavailable` where the engine cannot (an endpoint without prompt
  log-probs).

Only these types cross the interface; an engine's own (the HF engine's loaded model and decoding settings) stay in
its package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from generation.contexts import fill_mask
from generation.pronouns import Codebook

if TYPE_CHECKING:
    from generation.models import LanguageModel

# How a candidate's sequence is scored (docs/domain.md, 'The probability-based evaluation'): `mean` is the paper's mean
# token loss (eq. 5, the default); `sum` is RUFF's summed log-probability, kept as the summed token loss (-sum log p)
# so that the prediction is the lowest value either way; `none` skips probability scoring (the job samples only).
PROB_SCORES = ("mean", "sum")
DEFAULT_PROB_SCORE = "mean"
NO_PROB_SCORE = "none"

# A judge's modes (judging's `JudgeMode` values for the runnable ones).
LIKELIHOOD = "likelihood"
SAMPLING = "sampling"


class Interrupted(Exception):
    """A sampling call stopped before its last token because `stop()` said so: its text is discarded."""


class EngineUnavailable(ValueError):
    """The engine cannot run this job here; the message says why and what to do."""


@dataclass(frozen=True)
class Sampling:
    """What a chunk asks for its contexts (docs/domain.md, 'Decoding'): `samples` continuations of exactly
    `max_new_tokens` tokens each, with top-k (0: off), top-p and beams."""

    samples: int
    max_new_tokens: int
    top_k: int = 50
    top_p: float = 0.95
    num_beams: int = 1


@dataclass(frozen=True)
class ScoreItem:
    text: str  # the instance text with its mask marker
    mask: str
    form: str  # the mask's case
    correct_form: str  # lower-case surface form that belongs at the mask
    codebook: Codebook
    prob_score: str = DEFAULT_PROB_SCORE  # mean or sum (PROB_SCORES)


@dataclass(frozen=True)
class ScoreResult:
    losses: dict[str, float]  # base -> mean token loss (or summed token loss, prob_score "sum")
    prediction: str  # base of the lowest-loss candidate
    correct: bool


def candidate_texts(item: ScoreItem) -> list[tuple[str, str]]:
    """(base, full text) for the candidates (one per family, in codebook order), capitalised when the mask starts a
    sentence."""
    return [(base, fill_mask(item.text, item.mask, surface)) for base, surface in item.codebook.candidates(item.form)]


def score_result(item: ScoreItem, losses: dict[str, float]) -> ScoreResult:
    """The prediction of an instance from its candidates' losses: the lowest (ties to the first family in codebook
    order), correct when its surface form is the instance's."""
    prediction = min(losses, key=lambda base: losses[base])
    return ScoreResult(
        losses=losses,
        prediction=prediction,
        correct=item.codebook.surface(prediction, item.form) == item.correct_form.lower(),
    )


@dataclass(frozen=True)
class Answer:
    """A judge's answer to one prompt. Sampling: its `replies` (k of them) and, for each, the label of the option it
    names or None (an unparsed reply). Likelihood: `scores`, label -> log-score (the option's mean token
    log-probability, or over an API the log of its renormalised probability), or None when no option could be scored
    (unparsed; `replies` then holds what the endpoint said)."""

    replies: list[str] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)
    scores: dict[str, float] | None = None


class ModelEngine(Protocol):
    """The interface every engine implements (the module docstring). `loaded` is whatever its `load` returned."""

    name: str

    def load(self, *, language_model: LanguageModel, job_id: int | None = None) -> Any:
        """What it needs to run the model; `job_id`: the job whose chunk it serves (an endpoint counts its spending
        on it)."""
        ...

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: Any,
        contexts: Sequence[str],
        decoding: Sampling,
        seed: int,
    ) -> list[list[str]]:
        """`decoding.samples` continuations per context, in the order of `contexts`; the same contexts and seed give
        the same text (an engine that is `stoppable` also takes `stop: Callable[[], bool]`)."""
        ...

    def score(self, *, language_model: LanguageModel, loaded: Any, items: Sequence[ScoreItem]) -> list[ScoreResult]:
        """Each instance's candidates' losses and prediction, in the order of `items`."""
        ...

    def answer(
        self,
        *,
        language_model: LanguageModel,
        loaded: Any,
        prompts: Sequence[str],
        options: dict[str, str],
        mode: str,
        k: int,
        temperature: float,
        seed: int,
    ) -> list[Answer]:
        """A judge's answer to each prompt (label -> option text in `options`), in the order of `prompts`."""
        ...

    def score_texts(self, *, language_model: LanguageModel, loaded: Any, texts: Sequence[str]) -> list[float]:
        """Each text's summed token log-probability, sum of log p(token | the tokens before it), the first token given
        BOS (the tokenizer's BOS, else its EOS), in the order of `texts`."""
        ...
