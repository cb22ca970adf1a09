"""A judge over a job's generations: the samples of one context share their prompt's opening in the tree pass, and
the labels and option probabilities are those of the plain per-option loop (the reference in conftest.py, one
forward pass per prompt and option)."""

from __future__ import annotations

import pytest

from generation.engines.hf import scoring
from judging.prompts import DEFAULT_TEMPLATE, PromptItem, default_options, prompt_render
from judging.scoring import likelihood_judge, option_ids, option_probabilities
from tests.judging.conftest import CONTINUATIONS

pytestmark = pytest.mark.slow

OPTIONS = default_options()
CONTEXTS = [
    ("Robin's pronouns are xe/xem/xyr. Robin baked bread. ", "xe"),
    ("Sam's pronouns are they/them/their. Sam went to the market and ", "they"),
]
# Two samples per context: enough for the samples of a context to share their prompt's opening, and for batch_size=3
# to put both samples of one context and one of the other's in a batch, the other's second in the next. No more, since
# each prompt costs the reference a forward pass per option (about a second each on the CPU).
SAMPLES = CONTINUATIONS[:2]


def _job_prompts() -> list[str]:
    """Two contexts with their samples in a row, as a job's generations come."""
    return [
        prompt_render(
            template=DEFAULT_TEMPLATE,
            options=OPTIONS,
            item=PromptItem(context=context, generation=text, dataset="misgendered", pronoun=pronoun),
        )
        for context, pronoun in CONTEXTS
        for text in SAMPLES
    ]


def test_the_samples_of_one_context_share_their_prompt_opening_in_one_row(loaded_model):
    prompts = _job_prompts()
    suffixes = option_ids(loaded=loaded_model, options=OPTIONS)
    samples = loaded_model.tokenizer(prompts[: len(SAMPLES)]).input_ids  # the first context's samples
    prepared = [scoring._Prepared(i, ids, suffixes) for i, ids in enumerate(samples)]
    (tree,) = scoring._trees(prepared, scoring.SUFFIX_ROW_NODES)
    sequences = [p.prefix + suffix for p in prepared for suffix in p.suffixes]
    histories = {tuple(sequence[: i + 1]) for sequence in sequences for i in range(len(sequence))}
    opening = 0
    while len({ids[opening] for ids in samples}) == 1:
        opening += 1
    assert opening > 20  # the instructions, the pronouns and the context
    assert len(tree.tokens) == len(histories)  # one node per distinct history: the opening once, not once a sample
    prompt_nodes = sum(map(len, samples)) - (len(samples) - 1) * opening
    assert prompt_nodes <= len(tree.tokens) <= prompt_nodes + sum(len(s) for p in prepared for s in p.suffixes)


def test_rows_hold_at_most_the_node_budget_and_are_about_equally_full(loaded_model, monkeypatch):
    monkeypatch.setattr(scoring, "ROW_NODES", 300)
    suffixes = option_ids(loaded=loaded_model, options=OPTIONS)
    prepared = [
        scoring._Prepared(i, ids, suffixes) for i, ids in enumerate(loaded_model.tokenizer(_job_prompts()).input_ids)
    ]
    trees = scoring._trees(prepared)
    sizes = [len(tree.tokens) for tree in trees]
    assert len(trees) > 1 and all(size <= 300 for size in sizes)
    assert sorted(p.index for tree in trees for p in tree.entries) == list(range(len(prepared)))
    greedy = [len(tree.tokens) for tree in scoring._pack(sorted(prepared, key=lambda p: p.prefix), 300)]
    assert len(trees) == len(greedy) and max(sizes) - min(sizes) <= max(greedy) - min(greedy)


@pytest.fixture(scope="module")
def plain_probabilities(plain_option_scores) -> list[dict[str, float]]:
    """The per-option loop's probabilities for each of `_job_prompts()`: the plain scores of each prompt and option
    as one sequence (conftest.py, one forward pass each, the same for every batch size), then the softmax over the
    options."""
    return [
        option_probabilities("likelihood", OPTIONS, plain_option_scores(prompt, OPTIONS)) for prompt in _job_prompts()
    ]


@pytest.mark.parametrize("batch_size", [None, 3])
def test_a_job_of_samples_gets_the_per_option_loops_labels_and_probabilities(
    loaded_model, plain_probabilities, batch_size
):
    prompts = _job_prompts()
    verdicts = likelihood_judge(loaded=loaded_model, prompts=prompts, options=OPTIONS, batch_size=batch_size)
    for verdict, expected in zip(verdicts, plain_probabilities, strict=True):
        got = option_probabilities("likelihood", OPTIONS, verdict.scores)
        assert got == pytest.approx(expected, abs=1e-5)
        assert verdict.label == max(expected, key=lambda label: expected[label])
