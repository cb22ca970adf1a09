"""Probability-based evaluation (docs/domain.md, 'The probability-based evaluation'; the paper's eq. 5), batched.

Each instance is scored by putting each of the 4 candidates of its mask's case into the text (capitalised by the rule)
and taking the causal LM's mean token loss of the whole sequence, exactly as `model(ids, labels=ids).loss` computes
it: tokens 1..T-1 are predicted from the ones before them; the first token of the sequence is not predicted.

The 4 candidate texts differ only from the mask on, so their token sequences share a prefix. We tokenize each full
text (tokenizing the pieces separately could merge tokens differently across the mask boundary), take the longest
common token prefix, run it once per instance (many instances per forward pass, left padded), then run the 4
candidates' remaining tokens from the prefix's key/value cache (all but the last: its output would predict nothing).
The loss of a sequence is the prefix's summed loss plus its suffix's summed loss over the number of predicted tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from generation.contexts import fill_mask
from generation.loading import LoadedModel
from generation.pronouns import BASES, Codebook


@dataclass(frozen=True)
class ScoreItem:
    text: str  # the instance text with its mask marker
    mask: str
    form: str  # the mask's case
    correct_form: str  # lower-case surface form that belongs at the mask
    codebook: Codebook


@dataclass(frozen=True)
class ScoreResult:
    losses: dict[str, float]  # base -> mean token loss
    prediction: str  # base of the lowest-loss candidate
    correct: bool


def candidate_texts(item: ScoreItem) -> list[tuple[str, str]]:
    """(base, full text) for the 4 candidates, in BASES order, capitalised when the mask starts a sentence."""
    return [(base, fill_mask(item.text, item.mask, surface)) for base, surface in item.codebook.candidates(item.form)]


def _result(item: ScoreItem, losses: dict[str, float]) -> ScoreResult:
    prediction = min(BASES, key=lambda base: losses[base])  # ties go to the first base in BASES order
    return ScoreResult(
        losses=losses,
        prediction=prediction,
        correct=item.codebook.surface(prediction, item.form) == item.correct_form.lower(),
    )


def sequence_loss(*, loaded: LoadedModel, text: str) -> float:
    """One text's mean token loss, the plain way (the reference the batched path must equal)."""
    import torch

    ids = loaded.tokenizer(text, return_tensors="pt").input_ids.to(loaded.device)
    with torch.inference_mode():
        return float(loaded.model(input_ids=ids, labels=ids).loss)


def score_one_at_a_time(*, loaded: LoadedModel, items: Sequence[ScoreItem]) -> list[ScoreResult]:
    """The plain loop: one forward pass per candidate. Used as the reference in tests and the benchmark."""
    return [
        _result(item, {base: sequence_loss(loaded=loaded, text=text) for base, text in candidate_texts(item)})
        for item in items
    ]


@dataclass
class _Prepared:
    index: int
    prefix: list[int]
    suffixes: list[list[int]]  # one per candidate


def _prepare(loaded: LoadedModel, candidates: Sequence[Sequence[str]]) -> list[_Prepared]:
    if not candidates:
        return []  # (the tokenizer fails on an empty batch: no generation of a chunk could be rewritten, say)
    width = len(candidates[0])
    if any(len(texts) != width for texts in candidates):
        raise ValueError("every entry must have the same number of candidate texts")
    encoded = loaded.tokenizer([text for texts in candidates for text in texts]).input_ids
    prepared = []
    for index, texts in enumerate(candidates):
        own = encoded[width * index : width * index + width]
        shared = 0
        shortest = min(len(ids) for ids in own)
        while shared < shortest and len({ids[shared] for ids in own}) == 1:
            shared += 1
        # Every candidate keeps at least one token of its own to run from the cache.
        shared = min(shared, shortest - 1)
        if shared < 1:
            raise ValueError(f"cannot score {texts[0]!r}: a candidate tokenizes to a single token")
        prepared.append(_Prepared(index, own[0][:shared], [ids[shared:] for ids in own]))
    return prepared


def _nll(logits, targets):
    """-log p(target) at each position: the log of the softmax's denominator less the target's logit, the value
    `log_softmax` would give without writing the whole vocabulary's log-probabilities for every position."""
    import torch

    logits = logits.float()
    return torch.logsumexp(logits, dim=-1) - logits.gather(-1, targets[..., None]).squeeze(-1)


def _score_batch(loaded: LoadedModel, batch: list[_Prepared], *, suffix_only: bool = False) -> list[list[float]]:
    """Mean token loss of each full sequence, or with `suffix_only` of each candidate's own tokens."""
    import torch

    model, device = loaded.model, loaded.device
    pad_id = loaded.tokenizer.pad_token_id
    size = len(batch)
    n = len(batch[0].suffixes)  # candidates per entry

    # The shared prefixes, left padded so that every row's last token sits in the last column.
    width = max(len(p.prefix) for p in batch)
    prefix_ids = torch.full((size, width), pad_id, dtype=torch.long)
    prefix_mask = torch.zeros((size, width), dtype=torch.long)
    for row, p in enumerate(batch):
        prefix_ids[row, width - len(p.prefix) :] = torch.tensor(p.prefix)
        prefix_mask[row, width - len(p.prefix) :] = 1
    prefix_ids, prefix_mask = prefix_ids.to(device), prefix_mask.to(device)
    positions = (prefix_mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=prefix_ids, attention_mask=prefix_mask, position_ids=positions, use_cache=True)
    # Token t is predicted by position t-1; both must be real tokens (the first token is never predicted).
    target_nll = _nll(out.logits[:, :-1], prefix_ids[:, 1:])
    valid = (prefix_mask[:, 1:] * prefix_mask[:, :-1]).bool()
    prefix_sum = torch.where(valid, target_nll, torch.zeros_like(target_nll)).sum(-1)  # (size,)
    suffixes = [suffix for p in batch for suffix in p.suffixes]
    lengths = torch.tensor([len(s) for s in suffixes])
    shared = torch.tensor([len(p.prefix) for p in batch]).repeat_interleave(n)
    # The prefix's last position predicts each candidate's first own token.
    firsts = torch.tensor([suffix[0] for suffix in suffixes], device=device)
    suffix_sum = _nll(out.logits[:, -1].repeat_interleave(n, dim=0), firsts)
    cache = out.past_key_values
    del out

    # The candidates' own tokens but the last (whose output would predict nothing), right padded, run from the
    # prefix cache repeated n times: position j predicts token j+1.
    length = max(len(s) for s in suffixes) - 1
    if length > 0:
        inputs = torch.full((n * size, length), pad_id, dtype=torch.long)
        targets = torch.zeros((n * size, length), dtype=torch.long)
        input_mask = torch.zeros((n * size, length), dtype=torch.long)
        for row, suffix in enumerate(suffixes):
            inputs[row, : len(suffix) - 1] = torch.tensor(suffix[:-1], dtype=torch.long)
            targets[row, : len(suffix) - 1] = torch.tensor(suffix[1:], dtype=torch.long)
            input_mask[row, : len(suffix) - 1] = 1
        inputs, targets, input_mask = inputs.to(device), targets.to(device), input_mask.to(device)
        cache.batch_repeat_interleave(n)
        out = model(
            input_ids=inputs,
            attention_mask=torch.cat([prefix_mask.repeat_interleave(n, dim=0), input_mask], dim=-1),
            position_ids=(shared[:, None] + torch.arange(length)[None, :]).to(device),
            past_key_values=cache,
            cache_position=torch.arange(width, width + length, device=device),
            use_cache=True,
        )
        rest_nll = _nll(out.logits, targets)
        suffix_sum = suffix_sum + torch.where(input_mask.bool(), rest_nll, torch.zeros_like(rest_nll)).sum(-1)
    if suffix_only:
        return (suffix_sum / lengths.to(suffix_sum.device)).view(size, n).tolist()
    total = prefix_sum.repeat_interleave(n) + suffix_sum
    predicted = (shared + lengths - 1).to(total.device)  # tokens 1..T-1 of each full sequence
    return (total / predicted).view(size, n).tolist()


def score_candidates(
    *, loaded: LoadedModel, candidates: Sequence[Sequence[str]], batch_size: int | None = None
) -> list[list[float]]:
    """Mean token loss of every candidate text, batched: each entry's candidates (the same number for every entry)
    share their common token prefix, which runs once. Results come back in the order of `candidates`."""
    import torch

    batch_size = batch_size or loaded.batch_size
    prepared = sorted(_prepare(loaded, candidates), key=lambda p: len(p.prefix))  # similar lengths pad less
    losses: list[list[float] | None] = [None] * len(candidates)
    with torch.inference_mode():
        for start in range(0, len(prepared), batch_size):
            batch = prepared[start : start + batch_size]
            for p, result in zip(batch, _score_batch(loaded, batch), strict=True):
                losses[p.index] = result
    assert all(loss is not None for loss in losses)  # every entry was prepared and scored once
    return cast(list[list[float]], losses)


def score_suffixes(
    *,
    loaded: LoadedModel,
    prefixes: Sequence[Sequence[int]],
    suffixes: Sequence[Sequence[Sequence[int]]],
    batch_size: int | None = None,
) -> list[list[float]]:
    """Mean token loss of each suffix's own tokens given its entry's prefix, on token ids the caller made (the LLM
    judge: the prompt's ids, then each option's ids). Every entry has the same number of suffixes, none empty; the
    prefix runs once per entry and the suffixes from its cache. Results come back in the order of `prefixes`."""
    import torch

    batch_size = batch_size or loaded.batch_size
    prepared = [
        _Prepared(index, list(prefix), [list(suffix) for suffix in own])
        for index, (prefix, own) in enumerate(zip(prefixes, suffixes, strict=True))
    ]
    if any(not p.prefix or not p.suffixes or not all(p.suffixes) for p in prepared):
        raise ValueError("every prefix and every suffix needs at least one token")
    if len({len(p.suffixes) for p in prepared}) > 1:
        raise ValueError("every entry must have the same number of suffixes")
    losses: list[list[float]] = [[] for _ in prepared]
    prepared.sort(key=lambda p: len(p.prefix))  # similar lengths pad less
    with torch.inference_mode():
        for start in range(0, len(prepared), batch_size):
            batch = prepared[start : start + batch_size]
            for p, result in zip(batch, _score_batch(loaded, batch, suffix_only=True), strict=True):
                losses[p.index] = result
    return losses


def score_instances(
    *, loaded: LoadedModel, items: Sequence[ScoreItem], batch_size: int | None = None
) -> list[ScoreResult]:
    """Score many instances, batched; results come back in the order of `items`."""
    candidates = [[text for _, text in candidate_texts(item)] for item in items]
    losses = score_candidates(loaded=loaded, candidates=candidates, batch_size=batch_size)
    return [
        _result(item, dict(zip(BASES, item_losses, strict=True)))
        for item, item_losses in zip(items, losses, strict=True)
    ]
