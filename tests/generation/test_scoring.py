"""Batched probability scoring equals the plain one-at-a-time loss (`model(ids, labels=ids).loss`), both on the default
model cut to two layers (`two_layer_model`); the default model itself takes the tree pass."""

import pytest

from benchmarks.reference import sequence_loss
from generation.datasets.registry import codebook_for
from generation.engines.hf.scoring import (
    ScoreItem,
    candidate_texts,
    score_candidates,
    score_instances,
    score_suffixes,
)
from generation.models import Instance
from generation.pronouns import BASES

pytestmark = pytest.mark.slow


def items_for(instances):
    return [
        ScoreItem(
            text=i.text,
            mask=i.template.mask,
            form=i.template.form,
            correct_form=i.correct_form,
            codebook=codebook_for(i.dataset.kind),
        )
        for i in instances
    ]


def misgendered_sample(dataset):
    """One instance of every case, so that every candidate set (and capitalised masks) is covered."""
    chosen = []
    for form in ("nom", "acc", "pos_dep", "pos_ind", "ref"):
        chosen += list(Instance.objects.filter(dataset=dataset, template__form=form).order_by("ordinal")[:1])
    return chosen


class TestBatchedScoring:
    def test_it_equals_one_at_a_time_scoring_on_ruff_instances(self, two_layer_model, demo_ruff):
        # Every other of the first nine (RUFF puts each sentence under four pronouns in a row): three sentences, two of
        # them under two pronouns, in two batches of batch_size 4. Five, since each costs the plain loop four passes.
        instances = list(Instance.objects.filter(dataset=demo_ruff).select_related("template", "dataset")[:9:2])
        assert len({i.template_id for i in instances}) == 3
        self.assert_equal_to_plain_loop(two_layer_model, items_for(instances))

    def test_it_equals_one_at_a_time_scoring_on_misgendered_instances(self, two_layer_model, demo_misgendered):
        instances = misgendered_sample(demo_misgendered)
        assert any(text[0].isupper() for item in items_for(instances) for _, text in candidate_texts(item))
        self.assert_equal_to_plain_loop(two_layer_model, items_for(instances))

    def assert_equal_to_plain_loop(self, two_layer_model, items):
        # batch_size 4 mixes prefix lengths within a batch (left padding) and spans several batches.
        batched = score_instances(loaded=two_layer_model, items=items, batch_size=4)
        assert len(batched) == len(items)
        for item, result in zip(items, batched, strict=True):
            plain = {base: sequence_loss(loaded=two_layer_model, text=text) for base, text in candidate_texts(item)}
            assert set(result.losses) == set(BASES)
            for base in BASES:
                assert result.losses[base] == pytest.approx(plain[base], abs=1e-3)
            assert result.prediction == min(BASES, key=plain.__getitem__)
            assert result.correct == (item.codebook.surface(result.prediction, item.form) == item.correct_form)

    def test_it_returns_results_in_the_order_given(self, two_layer_model, demo_ruff):
        instances = list(Instance.objects.filter(dataset=demo_ruff).select_related("template", "dataset")[:6])
        items = items_for(instances)
        forward = score_instances(loaded=two_layer_model, items=items, batch_size=3)
        backward = score_instances(loaded=two_layer_model, items=items[::-1], batch_size=3)
        for a, b in zip(forward, backward[::-1], strict=True):
            assert a.prediction == b.prediction
            assert a.losses == pytest.approx(b.losses, abs=1e-3)


def test_candidates_that_end_in_one_token_of_their_own_are_scored_exactly(two_layer_model):
    """A candidate whose only own token is its last is scored from the prefix alone (the last token of every
    candidate is never run, its output predicting nothing); mixed with longer ones in one batch and alone."""
    candidates = [
        ["Alex waved at him", "Alex waved at her"],  # differ in the last token only
        ["We like it a lot.", "We like them a lot."],
        ["Sam thanked him", "Sam thanked them"],
    ]
    for batch in (candidates, [candidates[0], candidates[2]]):
        scored = score_candidates(loaded=two_layer_model, candidates=batch, batch_size=3)
        plain = [[sequence_loss(loaded=two_layer_model, text=text) for text in texts] for texts in batch]
        assert scored == [pytest.approx(row, abs=1e-4) for row in plain]


def test_no_candidates_give_no_losses(two_layer_model):
    assert score_candidates(loaded=two_layer_model, candidates=[]) == []


def test_suffix_scores_equal_the_plain_mean_loss_of_each_suffix_after_its_prompt(two_layer_model):
    """The judge's case: each option's own tokens scored after its prompt (prompts of different lengths, options of
    one token and of several, in one batch)."""
    import torch

    tokenizer = two_layer_model.tokenizer
    prompts = [tokenizer(f"Answer yes or no. Is the sky {word}?").input_ids for word in ("blue", "green", "red")]
    prompts.append(tokenizer("Something else entirely:").input_ids)
    options = [tokenizer(" yes").input_ids, tokenizer(" no, not at all").input_ids]

    scored = score_suffixes(loaded=two_layer_model, prefixes=prompts, suffixes=[options] * len(prompts), batch_size=8)

    for prompt, row in zip(prompts, scored, strict=True):
        for option, loss in zip(options, row, strict=True):
            ids = torch.tensor([prompt + option])
            with torch.inference_mode():
                logprobs = torch.log_softmax(two_layer_model.model(input_ids=ids).logits[0].float(), dim=-1)
            own = range(len(prompt), len(prompt) + len(option))
            expected = -sum(float(logprobs[t - 1, ids[0, t]]) for t in own) / len(option)
            assert loss == pytest.approx(expected, abs=1e-4)


class TestTreePass:
    """The batch's token sequences as one trie per row: each distinct token-after-a-history is run once."""

    def test_the_default_model_takes_the_tree_pass(self, loaded_model, monkeypatch):
        import generation.engines.hf.scoring as scoring

        ran = []
        original = scoring._score_batch_tree
        monkeypatch.setattr(scoring, "_score_batch_tree", lambda *a, **k: ran.append(1) or original(*a, **k))
        assert scoring._tree_agrees(loaded_model)
        score_candidates(loaded=loaded_model, candidates=[["Sam said he left.", "Sam said she left."]])
        assert ran

    def test_entries_that_open_alike_share_nodes_and_score_as_the_plain_loop(self, two_layer_model):
        """RUFF's layout (one sentence under several pronouns), a sequence that is a prefix of another, an entry
        twice, and two candidates that are the same text."""
        from generation.engines.hf.scoring import _prepare, _trees

        candidates = [
            ["The nurse thought that he was late. He said so.", "The nurse thought that he was late. She said so."],
            ["The nurse thought that she was late. He said so.", "The nurse thought that she was late. She said so."],
            ["Sam saw it", "Sam saw it again and again"],
            ["Sam saw it", "Sam saw it again and again"],
            ["Robin baked for them.", "Robin baked for them."],
        ]
        prepared = _prepare(two_layer_model, candidates)
        (tree,) = _trees(prepared)
        sequences = [p.prefix + suffix for p in prepared for suffix in p.suffixes]
        histories = {tuple(sequence[: i + 1]) for sequence in sequences for i in range(len(sequence))}
        assert len(tree.tokens) == len(histories) < sum(map(len, sequences)) - 20  # one node per distinct history
        scored = score_candidates(loaded=two_layer_model, candidates=candidates, batch_size=8)
        plain = [[sequence_loss(loaded=two_layer_model, text=text) for text in texts] for texts in candidates]
        assert scored == [pytest.approx(row, abs=1e-4) for row in plain]

    def test_rows_split_at_the_node_budget_and_keep_the_order_given(self, two_layer_model, monkeypatch):
        import generation.engines.hf.scoring as scoring

        monkeypatch.setattr(scoring, "ROW_NODES", 12)
        candidates = [[f"{name} said that {p} would come." for p in ("he", "she", "xe")] for name in "ABCDE"]
        assert len(scoring._trees(scoring._prepare(two_layer_model, candidates))) == 5
        scored = score_candidates(loaded=two_layer_model, candidates=candidates, batch_size=5)
        plain = [[sequence_loss(loaded=two_layer_model, text=text) for text in texts] for texts in candidates]
        assert scored == [pytest.approx(row, abs=1e-4) for row in plain]

    def test_a_model_whose_attention_takes_no_tree_mask_is_not_given_one(self, two_layer_model, monkeypatch):
        import weakref

        import generation.engines.hf.scoring as scoring

        monkeypatch.setattr(scoring, "_TREE_CHECKED", weakref.WeakKeyDictionary())
        monkeypatch.setattr(scoring, "_score_batch_tree", lambda *a, **k: pytest.fail("the tree pass ran"))
        monkeypatch.setattr(two_layer_model.model.config, "_attn_implementation", "flash_attention_2")
        assert not scoring._tree_agrees(two_layer_model)

    def test_a_tree_pass_that_disagrees_with_the_cached_pass_is_not_used(self, two_layer_model, monkeypatch):
        """What a model whose head does more than a linear map (soft-capped logits) would give."""
        import weakref

        import generation.engines.hf.scoring as scoring

        monkeypatch.setattr(scoring, "_TREE_CHECKED", weakref.WeakKeyDictionary())
        original = scoring._score_batch_tree
        off = lambda *a, **k: [[loss + 0.05 for loss in row] for row in original(*a, **k)]  # noqa: E731
        monkeypatch.setattr(scoring, "_score_batch_tree", off)
        assert not scoring._tree_agrees(two_layer_model)
        # scored from the prefix cache instead, which the offset does not reach
        candidates = [["Sam said he left.", "Sam said she left."]]
        plain = [[sequence_loss(loaded=two_layer_model, text=text) for text in texts] for texts in candidates]
        assert score_candidates(loaded=two_layer_model, candidates=candidates) == [pytest.approx(plain[0], abs=1e-4)]
