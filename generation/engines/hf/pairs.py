"""Scores of stereotype pairs (docs/domain.md, 'Stereotype pair benchmarks'): the log-probability a model gives each
sentence of a pair, higher meaning likelier.

- A causal LM (`text_log_probs`, the hf engine's `score_texts`): the sum of the sentence's token log-probabilities,
  each given the tokens before it, the first given BOS (the tokenizer's BOS, else its EOS). It runs through the
  probability scoring's batched pass (`score_suffixes`: BOS is every entry's prefix, the sentence its suffix). A
  `pair_score` job's causal method goes through the model's engine (vLLM through this one, an endpoint through its
  prompt log-probs).
- A masked LM (`pll_pair_scores`), CrowS-Pairs' pseudo-log-likelihood: the tokens the two sentences share
  (difflib's matching blocks over the token ids, with the special tokens at both ends left out, as its metric.py
  does) are masked one at a time and the log-probability of each, in its place, summed. PLL-word-l2r (Kauf & Ivanova
  2023) also masks the tokens to the right of the target within the same word. Every masked copy is one row of a
  padded batch.

Masked LMs load with transformers' AutoModelForMaskedLM from the registry row's source (`masked_model_load`), cached
in the process as causal models are.
"""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from django.conf import settings

from generation.engines.hf.loading import LoadedModel, ModelLoadError, _cache_key, _dtype, model_source, resolve_device
from generation.engines.hf.scoring import score_suffixes
from generation.models import LanguageModel
from generation.models.pairs import PLL, PLL_WORD_L2R

_masked: OrderedDict[tuple, LoadedModel] = OrderedDict()
_lock = threading.Lock()


def text_log_probs(*, loaded: LoadedModel, texts: Sequence[str], batch_size: int | None = None) -> list[float]:
    """Each text's summed token log-probability under a causal LM, the first token given BOS, in the order of
    `texts` (the hf engine's `score_texts`)."""
    tokenizer = loaded.tokenizer
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if bos is None:
        raise ModelLoadError(f"model {loaded.name}: its tokenizer has neither a BOS nor an EOS token to start from")
    if not texts:
        return []
    encoded = tokenizer(list(texts), add_special_tokens=False).input_ids
    means = score_suffixes(
        loaded=loaded, prefixes=[[bos]] * len(texts), suffixes=[[ids] for ids in encoded], batch_size=batch_size
    )
    # score_suffixes gives the mean token loss of each suffix: its sum is minus the summed log-probability.
    return [-mean[0] * len(ids) for mean, ids in zip(means, encoded, strict=True)]


def causal_pair_scores(
    *, loaded: LoadedModel, pairs: Sequence[tuple[str, str]], batch_size: int | None = None
) -> list[tuple[float, float]]:
    """(log p(stereotypical), log p(anti-stereotypical)) of each pair under a causal LM, in the order of `pairs`."""
    sums = text_log_probs(loaded=loaded, texts=[text for pair in pairs for text in pair], batch_size=batch_size)
    return [(sums[2 * i], sums[2 * i + 1]) for i in range(len(pairs))]


def shared_positions(first: Sequence[int], second: Sequence[int]) -> tuple[list[int], list[int]]:
    """The positions of the tokens both sequences share (difflib's equal blocks over the ids, compared as strings as
    CrowS-Pairs' metric.py does), less the first and the last (the special tokens at both ends)."""
    matcher = difflib.SequenceMatcher(None, [str(x) for x in first], [str(x) for x in second])
    one: list[int] = []
    two: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            one += range(i1, i2)
            two += range(j1, j2)
    return one[1:-1], two[1:-1]


def _masked_rows(ids: list[int], words: list[int | None] | None, targets: list[int], mask_id: int) -> list[list[int]]:
    """One copy of the sentence per target, the target masked (and, for PLL-word-l2r, the tokens to its right
    within its word)."""
    rows = []
    for target in targets:
        row = list(ids)
        row[target] = mask_id
        if words is not None and words[target] is not None:
            for right in range(target + 1, len(ids)):
                if words[right] != words[target]:
                    break
                row[right] = mask_id
        rows.append(row)
    return rows


def pll_pair_scores(
    *,
    loaded: LoadedModel,
    pairs: Sequence[tuple[str, str]],
    word_l2r: bool = False,
    batch_size: int | None = None,
) -> list[tuple[float, float]]:
    """(PLL(stereotypical), PLL(anti-stereotypical)) of each pair under a masked LM (see the module docstring)."""
    import torch

    tokenizer = loaded.tokenizer
    if tokenizer.mask_token_id is None:
        raise ModelLoadError(f"model {loaded.name}: its tokenizer has no mask token (is it a masked LM?)")
    if word_l2r and not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"model {loaded.name}: PLL-word-l2r needs a fast tokenizer (it reads word boundaries)")
    texts = [text for pair in pairs for text in pair]
    encoded = tokenizer(texts)
    ids = [list(row) for row in encoded.input_ids]
    words = [encoded.word_ids(i) for i in range(len(texts))] if word_l2r else [None] * len(texts)
    # (sentence index, target position, masked row) for every masked copy of every sentence
    work: list[tuple[int, int, list[int]]] = []
    for pair in range(len(pairs)):
        targets = shared_positions(ids[2 * pair], ids[2 * pair + 1])
        for side in (0, 1):
            sentence = 2 * pair + side
            rows = _masked_rows(ids[sentence], words[sentence], targets[side], tokenizer.mask_token_id)
            work += [(sentence, target, row) for target, row in zip(targets[side], rows, strict=True)]
    totals = [0.0] * len(texts)
    work.sort(key=lambda entry: len(entry[2]))  # similar lengths pad less
    size = batch_size or loaded.batch_size
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    with torch.inference_mode():
        for start in range(0, len(work), size):
            batch = work[start : start + size]
            width = max(len(row) for _, _, row in batch)
            input_ids = torch.tensor([row + [pad] * (width - len(row)) for _, _, row in batch], device=loaded.device)
            mask = torch.tensor(
                [[1] * len(row) + [0] * (width - len(row)) for _, _, row in batch], device=loaded.device
            )
            logits = loaded.model(input_ids=input_ids, attention_mask=mask).logits.float()
            index = torch.arange(len(batch), device=loaded.device)
            positions = torch.tensor([target for _, target, _ in batch], device=loaded.device)
            chosen = torch.log_softmax(logits[index, positions], dim=-1)
            wanted = torch.tensor([ids[sentence][target] for sentence, target, _ in batch], device=loaded.device)
            for (sentence, _, _), value in zip(batch, chosen[index, wanted].tolist(), strict=True):
                totals[sentence] += value
    return [(totals[2 * i], totals[2 * i + 1]) for i in range(len(pairs))]


def _masked_load(language_model: LanguageModel) -> LoadedModel:
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    source, extra = model_source(language_model=language_model)
    device = resolve_device(language_model.device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **extra)
        model = AutoModelForMaskedLM.from_pretrained(source, dtype=_dtype(language_model.dtype, device), **extra)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model {language_model.name}: cannot load {source} as a masked LM: {exc}") from exc
    model.to(device)
    model.eval()
    return LoadedModel(
        name=language_model.name, model=model, tokenizer=tokenizer, device=device, batch_size=language_model.batch_size
    )


def masked_model_load(*, language_model: LanguageModel) -> LoadedModel:
    """The registry row loaded as a masked LM, from the process cache when it is there."""
    key = _cache_key(language_model)
    with _lock:
        loaded = _masked.get(key)
        if loaded is None:
            loaded = _masked_load(language_model)
            _masked[key] = loaded
            while len(_masked) > settings.CONCORD_MODEL_CACHE_SIZE:
                _masked.popitem(last=False)
        _masked.move_to_end(key)
        loaded.batch_size = language_model.batch_size
        return loaded


def _pll(word_l2r: bool):
    def score(language_model: LanguageModel, pairs: Sequence[tuple[str, str]], batch_size: int | None):
        loaded = masked_model_load(language_model=language_model)
        return pll_pair_scores(loaded=loaded, pairs=pairs, word_l2r=word_l2r, batch_size=batch_size)

    return score


# How each masked-LM method of PAIR_METHODS scores pairs with a registered model (the causal method goes through the
# model's engine, `score_texts`: generation/jobs/pair_kind.py).
PAIR_SCORERS: dict[str, Callable[[LanguageModel, Sequence[tuple[str, str]], int | None], list[tuple[float, float]]]]
PAIR_SCORERS = {PLL: _pll(False), PLL_WORD_L2R: _pll(True)}


def pair_scores_compute(
    *, language_model: LanguageModel, method: str, pairs: Sequence[tuple[str, str]], batch_size: int | None = None
) -> list[tuple[float, float]]:
    """The pairs' scores by a registered masked LM under pll or pll-word-l2r."""
    return PAIR_SCORERS[method](language_model, pairs, batch_size)
