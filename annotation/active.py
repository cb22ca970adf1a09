"""Active pools (docs/domain.md, "Spending people's labels where they count"): the draw's inclusion probabilities, the
draw itself, and the hook through which the judging app supplies a judge run's probabilities per context.

Annotation never imports judging: judging registers a `ContextProbabilitySource` here from its AppConfig.ready(),
as it registers its machine labels (annotation/machine.py). The draw is a pure function of the judge's
probabilities, the budget and the seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

UNCERTAINTY_FLOOR = 0.05
BISECTION_TOLERANCE = 1e-9


class ActiveDrawError(ValueError):
    """An active draw cannot be made as asked (a judge run that does not cover the job, no probabilities, a bad
    budget); nothing was written."""


def uncertainty(yhat: Sequence[float] | np.ndarray) -> np.ndarray:
    """u_i = sqrt(Yhat_i (1 - Yhat_i)), floored at 0.05: a context the judge is sure about still has a chance."""
    values = np.clip(np.asarray(yhat, dtype=float), 0.0, 1.0)
    return np.maximum(np.sqrt(values * (1.0 - values)), UNCERTAINTY_FLOOR)


def inclusion_scale(yhat: Sequence[float] | np.ndarray, budget: float) -> float:
    """c, found by bisection (to 1e-9), such that sum_i min(1, c u_i) = budget; infinite when the budget is every
    context. Raises ActiveDrawError for a budget outside (0, number of contexts]."""
    u = uncertainty(yhat)
    size = int(u.size)
    if size == 0:
        raise ActiveDrawError("the judge run has no contexts to draw from")
    if not np.isfinite(budget) or budget <= 0 or budget > size:
        raise ActiveDrawError(f"the budget must be above 0 and at most the job's {size} contexts, got {budget:g}")
    if budget >= size:
        return math.inf
    low, high = 0.0, 1.0 / float(u.min())  # at c = high every pi is 1 and the sum is size > budget
    while high - low > BISECTION_TOLERANCE:
        middle = (low + high) / 2
        if np.minimum(1.0, middle * u).sum() < budget:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def inclusion_probabilities(yhat: Sequence[float] | np.ndarray, budget: float) -> np.ndarray:
    """pi_i = min(1, c u_i), c from `inclusion_scale` so that sum_i pi_i = budget, the expected number of contexts
    people label. A budget of every context gives pi = 1 throughout."""
    return np.minimum(1.0, inclusion_scale(yhat, budget) * uncertainty(yhat))


def active_draw(probabilities: Sequence[float] | np.ndarray, seed: int) -> np.ndarray:
    """xi_i ~ Bernoulli(pi_i): one uniform per context from numpy's `default_rng(seed)`, in the contexts' order;
    a context is drawn when its uniform is below its pi. Returns the boolean draw."""
    pi = np.asarray(probabilities, dtype=float)
    return np.random.default_rng(seed).random(pi.size) < pi


# --- the judge's probabilities per context, from the judging app ------------------------------------------------------


@dataclass(frozen=True)
class JudgedContext:
    """One context (instance x setting) of a job as a judge run saw it: its generations in order and Yhat, the mean
    of the judge's probability of the positive label over them (docs/domain.md, "The judge's verdict")."""

    instance_id: int
    setting: str
    pronoun: str
    generation_ids: tuple[int, ...]
    yhat: float


@dataclass(frozen=True)
class JudgeRunChoice:
    """A finished judge run over a whole job, as the pool form offers it: by its judge's name, never by an id alone
    (the jobs page shows the run's judge job by its own job number)."""

    run_id: int
    job_id: int
    label: str


class ContextProbabilitySource(Protocol):
    def runs(self) -> list[JudgeRunChoice]:
        """The finished judge runs over jobs, newest first."""
        ...

    def contexts(self, *, run_id: int, job_id: int, positive: str) -> list[JudgedContext]:
        """The job's judged contexts in the job's context order (instance, then setting: pre, then post). Raises
        ActiveDrawError when the run does not exist, is not finished, does not cover the job, or has no
        probabilities."""
        ...


_sources: list[ContextProbabilitySource] = []


def context_probability_source_register(source: ContextProbabilitySource) -> None:
    if source not in _sources:
        _sources.append(source)


def judged_contexts(*, run_id: int, job_id: int, positive: str) -> list[JudgedContext]:
    if not _sources:
        raise ActiveDrawError("no judge is installed to draw an active pool from")
    return _sources[0].contexts(run_id=run_id, job_id=job_id, positive=positive)


def judge_runs_to_draw_from() -> list[JudgeRunChoice]:
    return _sources[0].runs() if _sources else []
