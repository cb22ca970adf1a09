"""GIFI's named scorers on a tiny classifier written here (a local directory, as a researcher may name one): the
sentiment's sign rule and the toxicity's `toxic` label, against the model's own softmax computed with torch."""

from __future__ import annotations

import pytest

from analysis.gifi.scorers import ScorerUnavailable, sentiment_scorer, toxicity_scorer

WORDS = ["good", "bad", "day", "map", "awful", "fine", "the", "a"]
TEXTS = ["good day", "bad map", "the awful day", "a fine map"]

pytestmark = pytest.mark.models


def tiny_classifier(path, labels: list[str], seed: int):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    vocab = path / "vocab.txt"
    path.mkdir()
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab))
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=32, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )  # fmt: skip
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer


def probabilities(model, tokenizer, texts):
    import torch

    with torch.no_grad():
        logits = model(**tokenizer(texts, return_tensors="pt", padding=True)).logits
    return torch.softmax(logits, dim=-1).tolist()


def test_sentiment_is_plus_or_minus_the_labels_score_and_zero_when_neutral(tmp_path):
    labels = ["negative", "neutral", "positive"]
    model, tokenizer = tiny_classifier(tmp_path / "sentiment", labels, seed=1)

    scored = sentiment_scorer(str(tmp_path / "sentiment"))(TEXTS)

    for (value, label), probs in zip(scored, probabilities(model, tokenizer, TEXTS), strict=True):
        top = max(range(3), key=probs.__getitem__)
        assert label == labels[top]
        expected = {"negative": -probs[top], "neutral": 0.0, "positive": probs[top]}[labels[top]]
        assert value == pytest.approx(expected, abs=1e-5)


def test_toxicity_is_the_toxic_labels_probability(tmp_path):
    model, tokenizer = tiny_classifier(tmp_path / "toxicity", ["non_toxic", "toxic"], seed=2)

    scored = toxicity_scorer(str(tmp_path / "toxicity"))(TEXTS)

    for (value, label), probs in zip(scored, probabilities(model, tokenizer, TEXTS), strict=True):
        assert value == pytest.approx(probs[1], abs=1e-5)
        assert label == ("toxic" if probs[1] >= 0.5 else "not")


def test_a_classifier_without_a_toxic_label_is_refused(tmp_path):
    tiny_classifier(tmp_path / "other", ["cats", "dogs"], seed=3)
    with pytest.raises(ScorerUnavailable, match="no toxic label"):
        toxicity_scorer(str(tmp_path / "other"))(TEXTS)


@pytest.mark.parametrize("source", ["cardiffnlp/twitter-roberta-base-sentiment-latest", "no/such dir"])
def test_a_scorer_missing_here_is_refused_before_transformers_is_imported(source, tmp_path, monkeypatch):
    import sys

    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache
    monkeypatch.setitem(sys.modules, "transformers", None)  # importing it now would fail: it must not be reached
    with pytest.raises(ScorerUnavailable, match=r"is not installed here: put it in the Hugging Face cache"):
        sentiment_scorer(source)


def test_a_model_id_in_the_cache_goes_on_to_transformers(tmp_path, monkeypatch):
    import sys

    import huggingface_hub.constants

    snapshot = tmp_path / "models--org--tiny" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ScorerUnavailable, match=r"needs transformers"):
        sentiment_scorer("org/tiny")
