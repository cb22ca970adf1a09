"""Judging fixtures: the registered default model, a judge, a small pool of items, and the judge's reference."""

from __future__ import annotations

import pytest

from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel
from judging.services.judges import judge_add
from tests.factories import PoolFactory, PoolItemFactory

CONTINUATIONS = [
    "Xe smiled at the crowd and thanked them.",
    "She smiled at the crowd and thanked them.",
    "The baker smiled at the crowd.",
    "He said that xe was late again.",
    "Xe said xyr bread was the best in town.",
]


@pytest.fixture
def smollm2(db) -> LanguageModel:
    model, _ = LanguageModel.objects.get_or_create(name=DEFAULT_MODEL_NAME, defaults=DEFAULT_MODEL_FIELDS)
    return model


def _plain_option_score(loaded, prompt: str, option: str) -> float:
    """Mean log-probability of the option's tokens after the prompt: one plain forward pass of one sequence. The
    option is tokenized here, not by the judge's `option_ids` (which benchmarks/reference.py's plain loop shares), so
    that the judge's own tokenization of the options is checked too."""
    import torch

    prompt_ids = loaded.tokenizer(prompt).input_ids
    option_ids = loaded.tokenizer(option, add_special_tokens=False).input_ids
    ids = torch.tensor([prompt_ids + option_ids])
    with torch.inference_mode():
        logits = loaded.model(input_ids=ids.to(loaded.device)).logits[0].float().cpu()
    logprobs = torch.log_softmax(logits, dim=-1)
    total = sum(float(logprobs[len(prompt_ids) + i - 1, token]) for i, token in enumerate(option_ids))
    return total / len(option_ids)


@pytest.fixture(scope="session")
def plain_option_scores(two_layer_model):
    """The reference the likelihood judge is checked against: (prompt, options) -> each option's mean log-probability
    after the prompt, one plain forward pass of the prompt and the option as one sequence (`_plain_option_score`).
    Computed on the model the judges are checked on (`two_layer_model`), and once per prompt for the session:
    test_scoring.py and test_shared_prefix.py check some of the same prompts."""
    computed: dict[tuple, dict[str, float]] = {}

    def scores(prompt: str, options: dict[str, str]) -> dict[str, float]:
        key = (prompt, tuple(options.items()))
        if key not in computed:
            computed[key] = {
                label: _plain_option_score(two_layer_model, prompt, text) for label, text in options.items()
            }
        return dict(computed[key])

    return scores


@pytest.fixture
def judge(smollm2):
    return judge_add(name="smol-judge", model=smollm2)[0]


@pytest.fixture(scope="module")
def verdict_study_built(module_db):
    """The judge's-verdict study (tests/judging/verdict_study.py), built once per module."""
    from tests.judging.verdict_study import build_study

    with module_db():
        model, _ = LanguageModel.objects.get_or_create(name=DEFAULT_MODEL_NAME, defaults=DEFAULT_MODEL_FIELDS)
        return build_study(judge=judge_add(name="smol-judge", model=model)[0])


@pytest.fixture
def verdict_study(verdict_study_built, db):
    """The module's verdict study, its records a copy for this test (its rows roll back with the module)."""
    import copy

    return copy.deepcopy(verdict_study_built)


@pytest.fixture(scope="module")
def verdict_report_built(verdict_study_built, module_db):
    """The report of the module's verdict study, with the default parameters, built once per module."""
    from analysis.report.build import report_data

    with module_db():
        return report_data(pool=verdict_study_built.pool)


@pytest.fixture
def verdict_report(verdict_report_built, db):
    """`report_data(pool=study.pool)` of the module's verdict study, a copy for this test."""
    import copy

    return copy.deepcopy(verdict_report_built)


@pytest.fixture
def judged_pool(db):
    pool = PoolFactory(name="judged")
    items = [PoolItemFactory(pool=pool, continuation=text) for text in CONTINUATIONS]
    return pool, items


def finished_run(*, judge, pool, labels: dict, mode: str = "likelihood"):
    """A finished judge run with the given labels (item -> (label, confidence, scores)), written as a job would."""
    from django.utils import timezone

    from generation.models import Job, JobChunk
    from judging.models import JudgeRun, MachineLabel
    from judging.selectors import item_prompt
    from judging.services.runs import judge_run_create

    run, _ = judge_run_create(pool=pool.name, judge=judge.name, mode=mode, rerun=True, queue=False)
    for item, (label, confidence, scores) in labels.items():
        MachineLabel.objects.create(
            run=run, item=item, label=label, confidence=confidence, scores=scores,
            prompt=item_prompt(judge=judge, item=item),
        )  # fmt: skip
    assert run.job_id is not None
    JobChunk.objects.filter(job_id=run.job_id).update(finished_at=timezone.now())
    Job.objects.filter(pk=run.job_id).update(status="done", finished_at=timezone.now())
    return JudgeRun.objects.select_related("judge", "job").get(pk=run.pk)
