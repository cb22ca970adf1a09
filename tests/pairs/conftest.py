"""Tiny models built here from a config with random weights (no hub, no download): a BERT masked LM and a GPT-2
causal LM sharing a WordPiece tokenizer whose vocabulary covers the test sentences, with words split into pieces so
that PLL-word-l2r has something to mask."""

from __future__ import annotations

import pytest

WORDS = ["the", "mother", "father", "aunt", "uncle", "is", "was", "cold", "bakes", "cook", 
         "she", "he", "fixed", "it", "said", "a", "good", "bad", "at", "chess", "women", "men", "are", "."]  # fmt: skip
PIECES = ["##s", "##ing", "##er", "##ly", "nu", "##rse", "engin", "##eer", "car"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *PIECES]


def _tokenizer(directory):
    from transformers import BertTokenizerFast

    # BOS is [CLS]: the causal model's first token (docs/domain.md, 'Stereotype pair benchmarks').
    vocab = {token: index for index, token in enumerate(VOCAB)}
    return BertTokenizerFast(vocab=vocab, do_lower_case=True, bos_token="[CLS]", eos_token="[SEP]")


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    directory = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = _tokenizer(directory)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=48, max_position_embeddings=64)  # fmt: skip
    BertForMaskedLM(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    directory = tmp_path_factory.mktemp("tiny-gpt2")
    tokenizer = _tokenizer(directory)
    torch.manual_seed(1)
    config = GPT2Config(vocab_size=len(VOCAB), n_embd=32, n_layer=2, n_head=2, n_positions=64,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)  # fmt: skip
    GPT2LMHeadModel(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def registered(name: str, directory) -> object:
    from generation.models import LanguageModel

    return LanguageModel.objects.create(name=name, source_kind="path", source=str(directory), device="cpu",
                                        batch_size=4)  # fmt: skip
