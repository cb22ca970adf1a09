"""Concord's sampling against transformers': the fused top-k/top-p filter keeps exactly the tokens the two warpers
keep, the own sampling loop draws from the distribution `generate` draws from, and a stop ends a call early."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from generation.engines.hf.sampling import (
    Decoding,
    Interrupted,
    StopWhen,
    TopKTopP,
    _sample_rows,
    draw_tokens,
    own_loop_applies,
    sample_continuations,
    sample_groups,
)

if TYPE_CHECKING:  # torch and transformers load only in the tests that use them, not at collection
    import torch


@pytest.mark.parametrize(("top_k", "top_p"), [(50, 0.95), (50, 1.0), (5, 0.5), (1, 0.9), (200, 0.3)])
def test_it_keeps_the_same_tokens_as_top_k_then_top_p(top_k, top_p):
    import torch
    from transformers import TopKLogitsWarper, TopPLogitsWarper

    torch.manual_seed(0)
    scores = torch.randn(64, 1000) * 3
    expected = TopPLogitsWarper(top_p)(None, TopKLogitsWarper(top_k)(None, scores.clone()))
    fused = TopKTopP(top_k, top_p)(None, scores.clone())
    assert torch.equal(torch.isinf(fused), torch.isinf(expected))
    kept = ~torch.isinf(fused)
    assert torch.equal(fused[kept], scores[kept])
    assert kept.sum(-1).min() >= 1


def test_stop_when_asks_only_after_its_interval_and_then_ends_every_row():
    import torch

    asked = []
    criterion = StopWhen(lambda: asked.append(1) or len(asked) >= 2, interval=0.0)
    ids = torch.zeros((3, 4), dtype=torch.long)

    first, second = criterion(ids, None), criterion(ids, None)

    assert not first.any() and second.all() and criterion.fired
    assert criterion(ids, None).all() and len(asked) == 2  # once fired, it asks no more
    patient = StopWhen(lambda: True, interval=3600.0)
    assert not patient(ids, None).any() and patient.asked == 0


@pytest.mark.slow
def test_a_stop_inside_one_generate_call_ends_it_early_and_returns_nothing(loaded_model):
    decoding = Decoding(samples=2, max_new_tokens=40)
    steps = []

    def stop() -> bool:  # asked once per decoding step (interval 0): True from the third step on
        steps.append(1)
        return len(steps) >= 3

    with pytest.raises(Interrupted) as raised:
        sample_continuations(
            loaded=loaded_model, contexts=["Alex said that"], decoding=decoding, seed=1, stop=stop, stop_interval=0.0
        )

    assert len(steps) == 3  # not the 40 steps the call would otherwise take
    assert "stopped after 3 new tokens" in str(raised.value)


@pytest.mark.slow
def test_a_stop_that_never_fires_changes_nothing(two_layer_model):
    decoding = Decoding(samples=2, max_new_tokens=8)
    plain = sample_continuations(loaded=two_layer_model, contexts=["Alex said that"], decoding=decoding, seed=4)
    polled = sample_continuations(
        loaded=two_layer_model,
        contexts=["Alex said that"],
        decoding=decoding,
        seed=4,
        stop=lambda: False,
        stop_interval=0.0,
    )
    assert polled == plain


def warped_distribution(scores, *, top_k, top_p, temperature=None, banned=()):
    """What transformers' sampling step draws from: min_new_tokens' ban, temperature, top-k, top-p, softmax."""
    import torch
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    scores = scores.clone()
    scores[:, list(banned)] = float("-inf")
    if temperature is not None:
        scores = TemperatureLogitsWarper(temperature)(None, scores)
    scores = TopPLogitsWarper(top_p)(None, TopKLogitsWarper(top_k)(None, scores))
    return torch.softmax(scores, dim=-1)


@pytest.mark.parametrize(
    ("top_k", "top_p", "temperature"), [(50, 0.95, None), (5, 0.7, None), (8, 1.0, 0.6), (30, 0.9, 1.7)]
)
def test_each_draw_follows_the_distribution_of_transformers_warpers(top_k, top_p, temperature):
    import torch

    torch.manual_seed(3)
    rows, draws, vocabulary = 3, 40_000, 60
    logits = torch.randn(rows, vocabulary) * 2
    banned = (int(logits[0].argmax()),)  # the end of sequence is often a likely token: it must still never come
    expected = warped_distribution(logits, top_k=top_k, top_p=top_p, temperature=temperature, banned=banned)

    drawn = draw_tokens(
        logits.repeat_interleave(draws, dim=0),
        decoding=Decoding(top_k=top_k, top_p=top_p),
        temperature=temperature,
        banned=banned,
    ).view(rows, draws)

    observed = torch.stack([torch.bincount(row, minlength=vocabulary) for row in drawn]).float() / draws
    # 40,000 draws: a frequency's standard error is at most 0.0025, so 0.015 is six of them.
    assert (observed - expected).abs().max() < 0.015
    assert observed[expected == 0].sum() == 0  # nothing outside top-k/top-p, and never a banned token


def test_a_banned_token_is_never_drawn_even_as_the_certain_favourite():
    import torch

    logits = torch.full((2_000, 40), -5.0)
    logits[:, 7] = 50.0  # all the mass, before the ban
    drawn = draw_tokens(logits, decoding=Decoding(top_k=50, top_p=0.95), banned=(7,))
    assert not (drawn == 7).any()
    assert drawn.unique().numel() > 20  # the rest of the vocabulary, evenly


def _loaded(**settings):
    from transformers import GenerationConfig

    return SimpleNamespace(model=SimpleNamespace(generation_config=GenerationConfig(**settings)))


def test_the_own_loop_is_used_only_where_it_draws_what_generate_would():
    assert own_loop_applies(_loaded(), Decoding())
    assert own_loop_applies(_loaded(temperature=0.7, repetition_penalty=1.0), Decoding())
    assert not own_loop_applies(_loaded(), Decoding(num_beams=2))
    assert not own_loop_applies(_loaded(), Decoding(top_k=0))  # top-p over the whole vocabulary: generate's path
    for setting in [
        {"repetition_penalty": 1.3},
        {"no_repeat_ngram_size": 3},
        {"min_p": 0.05},
        {"suppress_tokens": [5]},
        {"typical_p": 0.9},
    ]:
        assert not own_loop_applies(_loaded(**setting), Decoding()), setting


def _left_padded(tokenizer, contexts: list[str]):
    """The contexts as one batch, left padded as the sampling paths pad them."""
    previous, tokenizer.padding_side = tokenizer.padding_side, "left"
    try:
        return tokenizer(contexts, return_tensors="pt", padding=True)
    finally:
        tokenizer.padding_side = previous


def _greedy_pairs(loaded_model, encoded, length: int, *, may_end: bool = False) -> torch.Tensor:
    """Concord's own loop, greedy (top_k=1), two samples per context: the rows that `generate` must match."""
    decoding = Decoding(samples=2, max_new_tokens=length, top_k=1)
    return _sample_rows(loaded_model, encoded.input_ids, encoded.attention_mask, decoding, None, may_end=may_end)


@pytest.mark.slow
def test_the_own_loop_decodes_as_generate_does_on_left_padded_contexts(two_layer_model):
    """With top_k=1 both paths are greedy, so they must produce the same tokens (the cached prefill shared by the
    samples, the positions under left padding, the end-of-sequence ban)."""
    import torch

    tokenizer, model = two_layer_model.tokenizer, two_layer_model.model
    contexts = ["Alex said that", "After the long meeting about the budget, Sam told everyone that", "Yes,"]
    length = 12
    encoded = _left_padded(tokenizer, contexts)
    assert (encoded.attention_mask == 0).any()  # the contexts differ in length: some rows are padded

    with torch.inference_mode():
        own = _greedy_pairs(two_layer_model, encoded, length)
        expected = model.generate(
            **encoded,
            do_sample=False,
            max_new_tokens=length,
            min_new_tokens=length,
            pad_token_id=tokenizer.pad_token_id,
        )[:, encoded.input_ids.shape[1] :]

    assert own.shape == (len(contexts) * 2, length)
    assert torch.equal(own, expected.repeat_interleave(2, dim=0))


def test_pure_sampling_draws_from_the_whole_tempered_distribution():
    """The judge's sampling mode: no top-k, no top-p, a temperature."""
    import torch

    torch.manual_seed(5)
    rows, draws, vocabulary, temperature = 2, 40_000, 30, 0.7
    logits = torch.randn(rows, vocabulary) * 2
    expected = torch.softmax(logits / temperature, dim=-1)

    drawn = draw_tokens(
        logits.repeat_interleave(draws, dim=0), decoding=Decoding(top_k=0, top_p=1.0), temperature=temperature
    ).view(rows, draws)

    observed = torch.stack([torch.bincount(row, minlength=vocabulary) for row in drawn]).float() / draws
    assert (observed - expected).abs().max() < 0.015


@pytest.mark.slow
def test_rows_that_may_end_stop_at_the_end_of_sequence_as_generate_does(two_layer_model, monkeypatch):
    """The judge's answers: greedy (top_k=1), with a token the first row produces early made the end of sequence, so
    that row ends there and is padded after it, as in `generate`."""
    import torch

    tokenizer, model = two_layer_model.tokenizer, two_layer_model.model
    contexts = ["Alex said that", "After the long meeting about the budget, Sam told everyone that"]
    length = 10
    encoded = _left_padded(tokenizer, contexts)
    with torch.inference_mode():
        free = model.generate(**encoded, do_sample=False, max_new_tokens=length, pad_token_id=tokenizer.pad_token_id)
    first_row = free[0, encoded.input_ids.shape[1] :].tolist()
    at = next(i for i in range(1, len(first_row)) if first_row[i] not in first_row[:i])  # a token new in row 0
    end = first_row[at]
    monkeypatch.setattr(model.generation_config, "eos_token_id", end)

    with torch.inference_mode():
        own = _greedy_pairs(two_layer_model, encoded, length, may_end=True)
        expected = model.generate(
            **encoded, do_sample=False, max_new_tokens=length, eos_token_id=end, pad_token_id=tokenizer.pad_token_id
        )[:, encoded.input_ids.shape[1] :]

    assert torch.equal(own, expected.repeat_interleave(2, dim=0))
    assert own[0, at] == end and (own[0, at + 1 :] == tokenizer.pad_token_id).all()


def test_the_decoding_cache_repeats_each_row_for_its_samples_and_grows_in_place():
    """The sampling loop's cache for the decoding steps: the same keys and values as transformers' repeat of the rows
    then concatenation, step by step, without copying the cache each step."""
    import torch
    from transformers import DynamicCache

    from generation.engines.hf.shared_attention import cache_for_samples as _cache_for_samples

    keys, values = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4, 8)
    roomy, plain = DynamicCache(), DynamicCache()
    for cache in (roomy, plain):
        cache.update(keys, values, 0)
    _cache_for_samples(roomy, 3, room=2)
    plain.batch_repeat_interleave(3)
    assert torch.equal(roomy.layers[0].keys, plain.layers[0].keys)
    buffer = roomy.layers[0].keys.untyped_storage().data_ptr()
    for _ in range(2):
        new_keys, new_values = torch.randn(6, 3, 1, 8), torch.randn(6, 3, 1, 8)
        got, expected = roomy.update(new_keys, new_values, 0), plain.update(new_keys, new_values, 0)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
        assert roomy.layers[0].keys.untyped_storage().data_ptr() == buffer  # written in place
    assert roomy.get_seq_length() == 6
    with pytest.raises(AssertionError):  # no room for a third step
        roomy.update(torch.randn(6, 3, 1, 8), torch.randn(6, 3, 1, 8), 0)


def test_the_shared_context_attention_is_attention_over_each_rows_whole_cache():
    """A decoding step's attention through the shared context (each context's keys once, then the row's own) equals
    torch's attention over the row's whole cache: the context repeated for its samples, its padding masked, then the
    row's own tokens; grouped query heads read their key head."""
    import types

    import torch
    import torch.nn.functional as F
    from transformers import DynamicCache

    from generation.engines.hf.shared_attention import _attention, cache_share_context

    contexts, samples, heads, group, width, own, dim = 2, 3, 2, 3, 5, 2, 8
    keys, values = torch.randn(contexts, heads, width, dim), torch.randn(contexts, heads, width, dim)
    padding = torch.ones(contexts, width, dtype=torch.long)
    padding[1, :2] = 0  # the second context is left padded
    cache = DynamicCache()
    cache.update(keys, values, 0)
    assert cache_share_context(cache, padding, samples, room=own)
    rows = contexts * samples
    for _ in range(own):
        new_keys, new_values = torch.randn(rows, heads, 1, dim), torch.randn(rows, heads, 1, dim)
        own_keys, own_values = cache.update(new_keys, new_values, 0)
    assert cache.get_seq_length() == width + own
    query = torch.randn(rows, heads * group, 1, dim)
    got, _ = _attention(types.SimpleNamespace(layer_idx=0), query, own_keys, own_values, None, scaling=0.3,
                        concord_shared=cache)  # fmt: skip

    whole_keys = torch.cat([keys.repeat_interleave(samples, 0), own_keys], dim=2).repeat_interleave(group, 1)
    whole_values = torch.cat([values.repeat_interleave(samples, 0), own_values], dim=2).repeat_interleave(group, 1)
    seen = torch.cat([padding.repeat_interleave(samples, 0), torch.ones(rows, own, dtype=torch.long)], -1).bool()
    expected = F.scaled_dot_product_attention(query, whole_keys, whole_values, attn_mask=seen[:, None, None], scale=0.3)
    assert got.shape == (rows, 1, heads * group, dim)
    assert torch.allclose(got, expected.transpose(1, 2), atol=1e-6)


def test_without_the_shared_cache_the_attention_is_sdpas():
    import types

    import torch

    from generation.engines.hf.shared_attention import _attention

    query, keys, values = torch.randn(2, 4, 3, 8), torch.randn(2, 2, 3, 8), torch.randn(2, 2, 3, 8)
    module = types.SimpleNamespace(layer_idx=0, num_key_value_groups=2, is_causal=True)
    got, _ = _attention(module, query, keys, values, None, scaling=0.25)
    expected = torch.nn.functional.scaled_dot_product_attention(
        query, keys.repeat_interleave(2, 1), values.repeat_interleave(2, 1), is_causal=True, scale=0.25
    )
    assert torch.allclose(got, expected.transpose(1, 2), atol=1e-6)


# Three groups of different widths (so different padding) and sizes, each with its own seed, all narrower than the
# new tokens (a wider context decodes from the shared context, one call at a time).
GROUPS = [
    (["Alex said that", "After the meeting, Sam told everyone that", "Yes,", "Kai left"], 7),
    (["Yes,", "Robin thinks", "The nurse left early because", "Then", "Noor wrote that"], 8),
    (["Kai went home because", "Alex", "It was late and", "Sam said"], 9),
]
SHAPE = (4, 5, 4)  # contexts per group


def spy_on_grouped_rows(monkeypatch) -> list[int]:
    """The number of groups of each grouped decoding loop run from now on."""
    from generation.engines.hf import sampling

    calls: list[int] = []
    real = sampling._grouped_rows

    def spy(loaded, batches, generators, decoding, criterion):
        calls.append(len(batches))
        return real(loaded, batches, generators, decoding, criterion)

    monkeypatch.setattr(sampling, "_grouped_rows", spy)
    return calls


@pytest.mark.slow
@pytest.mark.parametrize(
    "decoding",
    [Decoding(samples=3, max_new_tokens=12), Decoding(samples=3, max_new_tokens=12, top_k=0, top_p=1.0)],
    ids=["top-k-top-p", "pure"],
)
def test_groups_decoded_as_one_batch_give_each_group_the_text_of_its_own_call(two_layer_model, monkeypatch, decoding):
    """A chunk's settings are decoded together: each group's continuations are, token for token, those of one
    `sample_continuations` call with the group's contexts as one batch and its seed."""
    calls = spy_on_grouped_rows(monkeypatch)
    together = sample_groups(loaded=two_layer_model, groups=GROUPS, decoding=decoding)

    assert calls == [3]  # one decoding loop for the three groups
    own = [
        sample_continuations(loaded=two_layer_model, contexts=contexts, decoding=decoding, seed=seed, batch_size=9)
        for contexts, seed in GROUPS
    ]
    assert together == own
    assert [len(texts) for group in together for texts in group] == [decoding.samples] * sum(SHAPE)
    assert (
        together[0]
        != sample_groups(loaded=two_layer_model, groups=[(GROUPS[0][0], 70), GROUPS[1]], decoding=decoding)[0]
    )


@pytest.mark.slow
def test_groups_are_sampled_one_call_at_a_time_where_they_may_not_share_a_batch(two_layer_model, monkeypatch):
    """A context as wide as the new tokens (decoded from its shared context), more rows than a batch may hold, a
    model that fails the grouped check, or a single group: one call per group, the same text."""
    from generation.engines.hf import sampling

    decoding = Decoding(samples=3, max_new_tokens=4)  # "After the meeting, Sam told everyone that" is wider
    calls = spy_on_grouped_rows(monkeypatch)
    own = [sample_continuations(loaded=two_layer_model, contexts=c, decoding=decoding, seed=s) for c, s in GROUPS]
    assert sample_groups(loaded=two_layer_model, groups=GROUPS, decoding=decoding) == own

    decoding = Decoding(samples=3, max_new_tokens=12)
    own = [sample_continuations(loaded=two_layer_model, contexts=c, decoding=decoding, seed=s) for c, s in GROUPS]
    limit = sampling.GROUPED_ROWS_MAX
    monkeypatch.setattr(sampling, "GROUPED_ROWS_MAX", 3 * sum(SHAPE) - 1)  # one row more than a batch may hold
    assert sample_groups(loaded=two_layer_model, groups=GROUPS, decoding=decoding) == own
    monkeypatch.setattr(sampling, "GROUPED_ROWS_MAX", limit)
    assert sample_groups(loaded=two_layer_model, groups=GROUPS[:1], decoding=decoding) == own[:1]
    checked = []
    monkeypatch.setattr(sampling, "grouped_ready", lambda loaded, *shape: checked.append(shape) or False)
    assert sample_groups(loaded=two_layer_model, groups=GROUPS, decoding=decoding) == own
    assert calls == [] and checked == [(SHAPE, 3)]


@pytest.mark.slow
def test_the_grouped_check_passes_for_the_default_model_and_fails_where_a_group_would_differ(loaded_model, monkeypatch):
    from generation.engines.hf import shared_attention

    # The grouped decoding runs on the shared-context attention, which this check switches the model to (as
    # `grouped_ready` does before it checks a shape).
    assert shared_attention.shared_attention_ready(loaded_model)
    assert shared_attention._grouped_agrees(loaded_model, SHAPE, 3)
    real = shared_attention._grouped_attention

    def off_by_a_bit(module, query, groups, **kwargs):  # what a layer that mixed the groups' rows would give
        output, weights = real(module, query, groups, **kwargs)
        return output * (1 + 1e-6), weights

    monkeypatch.setattr(shared_attention, "_grouped_attention", off_by_a_bit)
    assert not shared_attention._grouped_agrees(loaded_model, SHAPE, 3)


@pytest.mark.slow
def test_a_stop_ends_the_grouped_decoding_and_returns_nothing(two_layer_model, monkeypatch):
    calls = spy_on_grouped_rows(monkeypatch)
    steps = []

    def stop() -> bool:
        steps.append(1)
        return len(steps) >= 2

    with pytest.raises(Interrupted, match="stopped after 2 new tokens"):
        sample_groups(
            loaded=two_layer_model,
            groups=GROUPS,
            decoding=Decoding(samples=3, max_new_tokens=12),
            stop=stop,
            stop_interval=0.0,
        )
    assert calls == [3] and len(steps) == 2
