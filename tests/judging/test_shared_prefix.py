"""A judge over a job's generations: the samples of one context share their prompt's opening in the tree pass, and
the labels and option probabilities are those of the plain per-option loop (the reference in conftest.py, one
forward pass per prompt and option), both on the default model cut to two layers (`two_layer_model`)."""

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
# each prompt costs the reference a forward pass per option.
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


def test_the_samples_of_one_context_share_their_prompt_opening_in_one_row(two_layer_model):
    prompts = _job_prompts()
    suffixes = option_ids(loaded=two_layer_model, options=OPTIONS)
    samples = two_layer_model.tokenizer(prompts[: len(SAMPLES)]).input_ids  # the first context's samples
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


def test_rows_hold_at_most_the_node_budget_and_are_about_equally_full(two_layer_model, monkeypatch):
    suffixes = option_ids(loaded=two_layer_model, options=OPTIONS)
    prepared = [
        scoring._Prepared(i, ids, suffixes) for i, ids in enumerate(two_layer_model.tokenizer(_job_prompts()).input_ids)
    ]
    (whole,) = scoring._pack(sorted(prepared, key=lambda p: p.prefix), 10**6)
    budget = len(whole.tokens) * 2 // 3  # the prompts as one tree would not fit
    monkeypatch.setattr(scoring, "ROW_NODES", budget)
    trees = scoring._trees(prepared)
    sizes = [len(tree.tokens) for tree in trees]
    assert len(trees) > 1 and all(size <= budget for size in sizes)
    assert sorted(p.index for tree in trees for p in tree.entries) == list(range(len(prepared)))
    greedy = [len(tree.tokens) for tree in scoring._pack(sorted(prepared, key=lambda p: p.prefix), budget)]
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
    two_layer_model, plain_probabilities, batch_size
):
    prompts = _job_prompts()
    verdicts = likelihood_judge(loaded=two_layer_model, prompts=prompts, options=OPTIONS, batch_size=batch_size)
    for verdict, expected in zip(verdicts, plain_probabilities, strict=True):
        got = option_probabilities("likelihood", OPTIONS, verdict.scores)
        assert got == pytest.approx(expected, abs=1e-5)
        assert verdict.label == max(expected, key=lambda label: expected[label])


def test_the_opening_every_prompt_shares_runs_once_and_the_rows_hold_only_what_follows_it(two_layer_model, monkeypatch):
    prompts = _job_prompts()
    prefixes = two_layer_model.tokenizer(prompts).input_ids
    opening = scoring._opening(two_layer_model, prefixes)
    assert opening is not None and all(ids[: len(opening.tokens)] == opening.tokens for ids in prefixes)
    text = two_layer_model.tokenizer.decode(opening.tokens)
    assert text.startswith("Read a short text") and "- no pronoun:" in text  # the task and every option's rule

    assert scoring._tree_agrees(two_layer_model)  # checked once per model, before the calls are recorded
    batches = []
    tree_pass = scoring._score_batch_tree

    def recorded(loaded, batch, **kwargs):
        batches.append((batch, kwargs.get("opening")))
        return tree_pass(loaded, batch, **kwargs)

    monkeypatch.setattr(scoring, "_score_batch_tree", recorded)
    shared = likelihood_judge(loaded=two_layer_model, prompts=prompts, options=OPTIONS)
    assert batches and all(given is not None and given.tokens == opening.tokens for _, given in batches)
    cut = len(opening.tokens)
    assert sorted(p.prefix for batch, _ in batches for p in batch) == sorted(ids[cut:] for ids in prefixes)

    monkeypatch.setattr(scoring, "OPENING_MIN_TOKENS", 10**6)  # no opening: every row runs its prompts whole
    batches.clear()
    whole = likelihood_judge(loaded=two_layer_model, prompts=prompts, options=OPTIONS)
    assert batches and all(given is None for _, given in batches)
    for a, b in zip(shared, whole, strict=True):
        assert a.label == b.label
        assert option_probabilities("likelihood", OPTIONS, a.scores) == pytest.approx(
            option_probabilities("likelihood", OPTIONS, b.scores), abs=1e-5
        )


def test_a_call_that_opens_as_an_earlier_one_reuses_its_opening_and_gets_the_same_numbers(two_layer_model, monkeypatch):
    """A judge run's chunks all open with the task and its options: the opening runs once for them, and a chunk's
    verdicts are those it gets with the opening run afresh."""
    import torch

    prompts = _job_prompts()
    seconds = prompts[1::2]  # like prompts[0::2], a prompt of each context: they share the template's opening
    prefixes = two_layer_model.tokenizer(prompts).input_ids
    monkeypatch.setitem(scoring._OPENINGS, two_layer_model.model, scoring.OrderedDict())
    first = scoring._opening(two_layer_model, prefixes[0::2])
    assert scoring._opening(two_layer_model, prefixes[1::2]) is first  # other prompts, the same opening
    kept = likelihood_judge(loaded=two_layer_model, prompts=seconds, options=OPTIONS)
    assert list(scoring._OPENINGS[two_layer_model.model]) == [tuple(first.tokens)]

    scoring._OPENINGS[two_layer_model.model].clear()
    fresh = scoring._opening(two_layer_model, prefixes[1::2])
    assert fresh is not first and all(
        torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        for a, b in zip(first.cache.layers, fresh.cache.layers, strict=True)
    )  # the kept opening is unchanged by the passes that read it
    scoring._OPENINGS[two_layer_model.model].clear()
    again = likelihood_judge(loaded=two_layer_model, prompts=seconds, options=OPTIONS)
    assert [(v.label, v.scores) for v in kept] == [(v.label, v.scores) for v in again]

    monkeypatch.setattr(scoring, "OPENINGS_KEPT", 1)
    monkeypatch.setattr(scoring, "OPENING_MIN_TOKENS", 2)
    ids = two_layer_model.tokenizer("Robin baked bread for the whole street.").input_ids
    other = scoring._opening(two_layer_model, [ids, ids + [13]])
    assert list(scoring._OPENINGS[two_layer_model.model]) == [tuple(other.tokens)]  # the oldest one let go


def test_an_opening_leaves_every_prefix_a_token_of_its_own_and_needs_its_minimum(two_layer_model, monkeypatch):
    monkeypatch.setattr(scoring, "OPENING_MIN_TOKENS", 2)
    ids = two_layer_model.tokenizer("Robin baked bread for the whole street.").input_ids
    assert scoring._opening(two_layer_model, [ids, ids + [13]]).tokens == ids[:-1]  # the shorter keeps its last token
    assert scoring._opening(two_layer_model, [ids, [ids[0], ids[1] + 1, *ids[2:]]]) is None  # one token in common


def test_the_sampling_judge_prefills_the_prompts_as_trees_and_answers_as_from_the_whole_prompts(
    two_layer_model, monkeypatch
):
    from generation.engines.hf.sampling import Decoding, sample_continuations

    openings, prefills = [], []
    find, prefill = scoring._opening, scoring.prefill_tree
    monkeypatch.setattr(scoring, "_opening", lambda *args: openings.append(find(*args)) or openings[-1])
    monkeypatch.setattr(scoring, "prefill_tree", lambda *args: prefills.append(args[1]) or prefill(*args))
    # A temperature near 0 draws the best token: the answers show whether each row saw its whole prompt.
    kwargs = {
        "loaded": two_layer_model,
        "contexts": _job_prompts(),
        "decoding": Decoding(samples=2, max_new_tokens=5, top_k=0, top_p=1.0),
        "seed": 3,
        "temperature": 0.01,
        "may_end": True,
        "batch_size": 3,
    }
    shared = sample_continuations(**kwargs, share_prefixes=True)
    assert len(openings) == 1 and len(openings[0].tokens) >= scoring.OPENING_MIN_TOKENS
    cut = len(openings[0].tokens)
    whole = two_layer_model.tokenizer(kwargs["contexts"]).input_ids
    assert [rest for batch in prefills for rest in batch] == [ids[cut:] for ids in whole]  # two batches: 3 and 1
    assert shared == sample_continuations(**kwargs)
    assert len(openings) == 1 and len(prefills) == 2  # without share_prefixes, the contexts run padded as before


def test_a_tree_prefill_gives_each_prompts_last_logits_and_a_cache_to_continue_from(two_layer_model):
    import torch

    prompts = _job_prompts()[:3]
    ids = two_layer_model.tokenizer(prompts).input_ids
    nxt = torch.tensor([[13]] * len(ids))  # one more token after each prompt, from the gathered cache
    with torch.inference_mode():
        opening = scoring._opening(two_layer_model, ids)
        cut = len(opening.tokens)
        cache, mask, last, logits = scoring.prefill_tree(two_layer_model, [row[cut:] for row in ids], opening)
        assert mask.sum(-1).tolist() == [len(row) for row in ids]
        assert last.squeeze(-1).tolist() == [len(row) - 1 for row in ids]
        after = two_layer_model.model(
            input_ids=nxt, attention_mask=torch.cat([mask, torch.ones_like(nxt)], -1), position_ids=last + 1,
            past_key_values=cache, use_cache=True,
        ).logits[:, -1]  # fmt: skip
        for row, expected_last, expected_after in zip(ids, logits, after, strict=True):
            whole = two_layer_model.model(input_ids=torch.tensor([row + [13]])).logits[0]
            assert torch.allclose(whole[-2], expected_last, atol=1e-3)
            assert torch.allclose(whole[-1], expected_after, atol=1e-3)


def test_the_answers_decode_reading_each_prompt_once_for_its_samples_as_from_copies(two_layer_model, monkeypatch):
    """The sampling judge's decoding steps read each prompt's keys and values once for its k answers
    (`shared_attention`): the model passes the check, the steps take that path, and the answers are those drawn from the
    prompt copied for each answer, at the same seed and a temperature that samples."""
    from generation.engines.hf import sampling, shared_attention
    from generation.engines.hf.sampling import Decoding, sample_continuations

    assert shared_attention.shared_attention_ready(two_layer_model)
    assert two_layer_model.model.config._attn_implementation == shared_attention.ATTENTION
    shared_steps = []
    share = sampling.cache_share_context
    monkeypatch.setattr(
        sampling, "cache_share_context", lambda *args, **kw: shared_steps.append(share(*args, **kw)) or shared_steps[-1]
    )
    kwargs = {
        "loaded": two_layer_model,
        "contexts": _job_prompts(),
        "decoding": Decoding(samples=3, max_new_tokens=6, top_k=0, top_p=1.0),
        "seed": 5,
        "temperature": 0.8,
        "may_end": True,
        "share_prefixes": True,
    }
    shared = sample_continuations(**kwargs)
    assert shared_steps == [True]
    monkeypatch.setattr(sampling, "shared_attention_ready", lambda loaded: False)
    assert sample_continuations(**kwargs) == shared
    assert shared_steps == [True]  # the second call copied each prompt for its answers
