"""Generation-based evaluation (docs/domain.md, 'Decoding'): sample continuations of many contexts at once.

Contexts are left padded into one batch with an attention mask; every context gets `samples` rows. Exactly
`max_new_tokens` new tokens are generated (min = max, so end-of-sequence cannot stop a row early) and only those new
tokens are decoded, skipping special tokens. The random state is seeded before each call, so the same contexts with
the same seed give the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from generation.loading import LoadedModel


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
    *, loaded: LoadedModel, contexts: Sequence[str], decoding: Decoding, seed: int, batch_size: int | None = None
) -> list[list[str]]:
    """`decoding.samples` continuations per context (outer list in the order of `contexts`)."""
    import torch
    from transformers import set_seed

    tokenizer, model = loaded.tokenizer, loaded.model
    batch_size = batch_size or loaded.batch_size
    kwargs = _generate_kwargs(loaded, decoding)
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
