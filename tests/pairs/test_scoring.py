"""Pair scores against plain loops written here: a causal LM's summed log-probability (BOS first), CrowS-Pairs'
pseudo-log-likelihood (one shared token masked at a time) and PLL-word-l2r, on tiny models built from configs."""

from __future__ import annotations

import difflib

import pytest

from tests.pairs.conftest import registered

PAIRS = [
    ("the mother is caring .", "the father is caring ."),
    ("women are bad at chess .", "men are bad at chess ."),
    ("the nurse said she fixed it .", "the engineer said he fixed it ."),
    ("the aunts bakes", "the uncles bakes"),
    ("the nurse said she fixed it .", "the nurse said he fixed it ."),
]


def _causal_loop(model, tokenizer, text: str) -> float:
    import torch

    ids = [tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False).input_ids]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    total = 0.0
    for t in range(1, len(ids)):
        total += torch.log_softmax(logits[t - 1].double(), dim=-1)[ids[t]].item()
    return total


def _pll_loop(model, tokenizer, first: str, second: str, *, l2r: bool) -> tuple[float, float]:
    """As CrowS-Pairs' metric.py: shared token positions from difflib's equal opcodes, skip the first and last,
    mask one at a time (PLL-word-l2r: also the tokens right of it in its word), sum log p of the original token."""
    import torch

    one, two = tokenizer(first), tokenizer(second)
    matcher = difflib.SequenceMatcher(None, [str(x) for x in one.input_ids], [str(x) for x in two.input_ids])
    template1, template2 = [], []
    for op in matcher.get_opcodes():
        if op[0] == "equal":
            template1 += list(range(op[1], op[2]))
            template2 += list(range(op[3], op[4]))
    scores = []
    for encoded, template in ((one, template1), (two, template2)):
        words = encoded.word_ids()
        total = 0.0
        for i in range(1, len(template) - 1):
            position = template[i]
            masked = list(encoded.input_ids)
            masked[position] = tokenizer.mask_token_id
            if l2r:
                right = position + 1
                while right < len(masked) and words[right] is not None and words[right] == words[position]:
                    masked[right] = tokenizer.mask_token_id
                    right += 1
            with torch.no_grad():
                logits = model(torch.tensor([masked])).logits[0]
            total += torch.log_softmax(logits[position].double(), dim=-1)[encoded.input_ids[position]].item()
        scores.append(total)
    return scores[0], scores[1]


@pytest.mark.django_db
@pytest.mark.parametrize("l2r", [False, True])
def test_it_computes_crows_pairs_pll_as_a_plain_loop_does(tiny_bert_dir, l2r):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from generation.engines.hf.pairs import masked_model_load, pll_pair_scores

    loaded = masked_model_load(language_model=registered("tiny-bert", tiny_bert_dir))
    got = pll_pair_scores(loaded=loaded, pairs=PAIRS, word_l2r=l2r, batch_size=3)
    model = AutoModelForMaskedLM.from_pretrained(tiny_bert_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    expected = [_pll_loop(model, tokenizer, a, b, l2r=l2r) for a, b in PAIRS]
    assert got == [pytest.approx(pair, abs=1e-4) for pair in expected]


@pytest.mark.django_db
def test_it_masks_more_with_word_l2r_where_a_word_has_pieces(tiny_bert_dir):
    from generation.engines.hf.pairs import masked_model_load, pll_pair_scores

    loaded = masked_model_load(language_model=registered("tiny-bert", tiny_bert_dir))
    assert loaded.tokenizer.tokenize("the nurse")[1:] == ["nu", "##rse"]
    plain = pll_pair_scores(loaded=loaded, pairs=PAIRS[4:], word_l2r=False)
    l2r = pll_pair_scores(loaded=loaded, pairs=PAIRS[4:], word_l2r=True)
    assert plain != l2r


@pytest.mark.django_db
def test_it_sums_a_causal_lms_token_log_probabilities_from_bos(tiny_gpt2_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from generation.engines.hf.loading import model_load
    from generation.engines.hf.pairs import causal_pair_scores

    loaded = model_load(language_model=registered("tiny-gpt2", tiny_gpt2_dir))
    got = causal_pair_scores(loaded=loaded, pairs=PAIRS, batch_size=3)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2_dir)
    expected = [(_causal_loop(model, tokenizer, a), _causal_loop(model, tokenizer, b)) for a, b in PAIRS]
    assert got == [pytest.approx(pair, abs=1e-4) for pair in expected]


@pytest.mark.slow
def test_it_sums_the_default_models_log_probabilities_from_bos(two_layer_model):
    from generation.engines.hf.pairs import causal_pair_scores

    got = causal_pair_scores(loaded=two_layer_model, pairs=PAIRS[:2], batch_size=2)
    expected = [(_causal_loop(two_layer_model.model, two_layer_model.tokenizer, a),
                 _causal_loop(two_layer_model.model, two_layer_model.tokenizer, b)) for a, b in PAIRS[:2]]  # fmt: skip
    assert got == [pytest.approx(pair, abs=1e-3) for pair in expected]
