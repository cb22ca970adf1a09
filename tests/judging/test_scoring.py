"""The judge's scores against an independent computation with transformers, and the sampling mode's seed; both on
the default model cut to two layers (`two_layer_model`)."""

from __future__ import annotations

import math

import pytest

from judging.prompts import DEFAULT_TEMPLATE, PromptItem, default_options, prompt_render
from judging.scoring import answer_label, likelihood_judge, likelihood_verdict, sampling_judge, sampling_verdict
from tests.judging.conftest import CONTINUATIONS

pytestmark = pytest.mark.slow

OPTIONS = default_options()
# Three prompts, which batch_size=2 scores in two batches: each prompt costs the reference a forward pass per option.
# The first two prompts are also test_shared_prefix.py's, whose reference is the same.
SAMPLES = CONTINUATIONS[:3]


def _prompts() -> list[str]:
    return [
        prompt_render(
            template=DEFAULT_TEMPLATE,
            options=OPTIONS,
            item=PromptItem(
                context="Robin's pronouns are xe/xem/xyr. Robin baked bread. ",
                generation=text,
                dataset="misgendered",
                pronoun="xe",
            ),
        )
        for text in SAMPLES
    ]


def test_it_scores_every_option_as_one_sequence_at_a_time_does(two_layer_model, plain_option_scores):
    prompts = _prompts()
    verdicts = likelihood_judge(loaded=two_layer_model, prompts=prompts, options=OPTIONS, batch_size=2)
    for prompt, verdict in zip(prompts, verdicts, strict=True):
        reference = plain_option_scores(prompt, OPTIONS)  # one plain forward pass per option (conftest.py)
        for label in OPTIONS:
            assert verdict.scores[label] == pytest.approx(reference[label], abs=1e-4)
        best = max(OPTIONS, key=lambda label: verdict.scores[label])
        assert verdict.label == best
        total = sum(math.exp(score) for score in verdict.scores.values())
        assert verdict.confidence == pytest.approx(math.exp(verdict.scores[best]) / total)


def test_it_gives_the_same_sampled_labels_twice_with_the_same_seed(two_layer_model):
    prompts = _prompts()[:2]  # two prompts, four answers each: each prompt's tokens run once per call
    first = sampling_judge(loaded=two_layer_model, prompts=prompts, options=OPTIONS, k=4, temperature=0.7, seed=7)
    again = sampling_judge(loaded=two_layer_model, prompts=prompts, options=OPTIONS, k=4, temperature=0.7, seed=7)
    assert [v.samples for v in first] == [v.samples for v in again]
    assert [(v.label, v.confidence) for v in first] == [(v.label, v.confidence) for v in again]
    assert all(len(v.samples) == 4 for v in first)


def test_it_breaks_ties_towards_the_first_option():
    verdict = likelihood_verdict(options=OPTIONS, scores=[-1.0, -1.0, -3.0])
    assert verdict.label == "correct"
    assert verdict.confidence == pytest.approx(1 / (2 + math.exp(-2)))


def test_it_reads_the_option_an_answer_names_first():
    assert answer_label(" correct.", OPTIONS) == "correct"
    assert answer_label(" No pronoun, the text says", OPTIONS) == "no_pronoun"
    assert answer_label(" it is misgendering, not correct", OPTIONS) == "misgendering"
    assert answer_label(" incorrect", OPTIONS) is None


def test_it_takes_the_majority_of_the_samples_with_its_vote_share():
    verdict = sampling_verdict(options=OPTIONS, answers=[" correct", " misgendering", " correct", " banana"])
    assert (verdict.label, verdict.confidence) == ("correct", 0.5)
    assert verdict.scores == {"correct": 0.5, "misgendering": 0.25, "no_pronoun": 0.0}
    assert sampling_verdict(options=OPTIONS, answers=[" ?", " !"]).label == ""
