"""Generation-based evaluation (docs/domain.md, 'Decoding'): sample continuations of many contexts at once.

Contexts are left padded into one batch with an attention mask; every context gets `samples` rows. Exactly
`max_new_tokens` new tokens are generated (min = max, so end-of-sequence cannot stop a row early) and only those new
tokens are decoded, skipping special tokens. The random state is seeded before each call, so the same contexts with
the same seed give the same text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from generation.loading import LoadedModel

# How often a running `generate` call asks whether it should stop (a database read, for a job's cancel).
STOP_POLL_SECONDS = 1.0


class Interrupted(Exception):
    """The sampling call stopped before its last token because `stop()` said so: its text is discarded."""


class StopWhen:
    """A transformers stopping criterion that ends the whole `generate` call once `stop()` is True, asking at most
    once per `interval` seconds (the first time after one decoding step). `fired` says whether it ended the call."""

    def __init__(self, stop: Callable[[], bool], interval: float = STOP_POLL_SECONDS):
        self.stop, self.interval = stop, interval
        self.fired = False
        self.asked = 0  # times `stop` was called
        self._next = time.monotonic() + interval

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        now = time.monotonic()
        if not self.fired and now >= self._next:
            self._next = now + self.interval
            self.asked += 1
            self.fired = bool(self.stop())
        return torch.full((input_ids.shape[0],), self.fired, dtype=torch.bool, device=input_ids.device)


@dataclass(frozen=True)
class Decoding:
    samples: int = 5
    max_new_tokens: int = 50
    top_k: int = 50
    top_p: float = 0.95
    num_beams: int = 1


class TopKTopP:
    """Top-k then top-p (nucleus) filtering in one step, on the k best logits only.

    The same tokens survive as with transformers' TopKLogitsWarper followed by TopPLogitsWarper (top-p then sees a
    distribution with k tokens left): a token is kept iff the probability of the tokens ranked above it is below
    top_p. Transformers' top-p sorts the whole vocabulary for every row and step, which on a CPU costs about as much
    as the model's forward pass once many rows are batched; sorting k values does not.
    """

    def __init__(self, top_k: int, top_p: float):
        self.top_k, self.top_p = top_k, top_p

    def __call__(self, input_ids, scores):
        import torch

        values, indices = torch.topk(scores, min(self.top_k, scores.shape[-1]), dim=-1)  # sorted, largest first
        probs = torch.softmax(values.float(), dim=-1)
        above = torch.cumsum(probs, dim=-1) - probs  # mass of the better-ranked tokens
        if self.top_p < 1.0:
            values = values.masked_fill(above >= self.top_p, float("-inf"))  # the best token always stays
        return torch.full_like(scores, float("-inf")).scatter(-1, indices, values)


def _generate_kwargs(loaded: LoadedModel, decoding: Decoding) -> dict:
    kwargs = {
        "do_sample": True,
        "max_new_tokens": decoding.max_new_tokens,
        "min_new_tokens": decoding.max_new_tokens,
        "top_k": decoding.top_k,
        "top_p": decoding.top_p,
        "num_beams": decoding.num_beams,
        "pad_token_id": loaded.tokenizer.pad_token_id,
    }
    temperature = getattr(loaded.model.generation_config, "temperature", None)
    # Our processor runs before transformers' warpers, so it stands in for them only when no temperature would apply
    # first; beam search keeps transformers' own path.
    if decoding.top_k > 0 and decoding.num_beams == 1 and temperature in (None, 1.0):
        from transformers import LogitsProcessorList

        kwargs |= {"top_k": 0, "top_p": 1.0}
        kwargs["logits_processor"] = LogitsProcessorList([TopKTopP(decoding.top_k, decoding.top_p)])
    return kwargs


def sample_continuations(
    *,
    loaded: LoadedModel,
    contexts: Sequence[str],
    decoding: Decoding,
    seed: int,
    batch_size: int | None = None,
    stop: Callable[[], bool] | None = None,
    stop_interval: float = STOP_POLL_SECONDS,
) -> list[list[str]]:
    """`decoding.samples` continuations per context (outer list in the order of `contexts`).

    With `stop`, a call in progress asks it between decoding steps (at most once per `stop_interval` seconds) and
    raises Interrupted once it is True: a cancelled job stops within about a second, not after the last token.
    """
    import torch
    from transformers import StoppingCriteriaList, set_seed

    tokenizer, model = loaded.tokenizer, loaded.model
    batch_size = batch_size or loaded.batch_size
    kwargs = _generate_kwargs(loaded, decoding)
    criterion = StopWhen(stop, stop_interval) if stop is not None else None
    if criterion is not None:
        kwargs["stopping_criteria"] = StoppingCriteriaList([criterion])
    results: list[list[str]] = []
    set_seed(seed)
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"  # new tokens must follow every context directly
    try:
        with torch.inference_mode():
            for start in range(0, len(contexts), batch_size):
                batch = list(contexts[start : start + batch_size])
                encoded = tokenizer(batch, return_tensors="pt", padding=True).to(loaded.device)
                input_ids, attention_mask = encoded.input_ids, encoded.attention_mask
                if decoding.num_beams == 1:
                    extra = {"num_return_sequences": decoding.samples}
                else:
                    # Beam search returns at most num_beams sequences per row: repeat the rows instead.
                    input_ids = input_ids.repeat_interleave(decoding.samples, dim=0)
                    attention_mask = attention_mask.repeat_interleave(decoding.samples, dim=0)
                    extra = {}
                output = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs, **extra)
                if criterion is not None and criterion.fired:
                    raise Interrupted(f"stopped after {output.shape[1] - input_ids.shape[1]} new tokens")
                texts = tokenizer.batch_decode(output[:, input_ids.shape[1] :], skip_special_tokens=True)
                for row in range(len(batch)):
                    results.append(texts[row * decoding.samples : (row + 1) * decoding.samples])
    finally:
        tokenizer.padding_side = previous_side
    return results


def sample_one_context(*, loaded: LoadedModel, context: str, decoding: Decoding, seed: int) -> list[str]:
    """The plain loop's step (the benchmark's baseline): one plain `generate` call of all samples for one context."""
    import torch
    from transformers import set_seed

    set_seed(seed)
    encoded = loaded.tokenizer(context, return_tensors="pt").to(loaded.device)
    with torch.inference_mode():
        output = loaded.model.generate(
            **encoded,
            do_sample=True,
            max_new_tokens=decoding.max_new_tokens,
            min_new_tokens=decoding.max_new_tokens,
            top_k=decoding.top_k,
            top_p=decoding.top_p,
            num_beams=decoding.num_beams,
            num_return_sequences=decoding.samples,
            pad_token_id=loaded.tokenizer.pad_token_id,
        )
    return loaded.tokenizer.batch_decode(output[:, encoded.input_ids.shape[1] :], skip_special_tokens=True)
