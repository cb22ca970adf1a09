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

from generation.engines.base import Interrupted
from generation.engines.hf.loading import LoadedModel
from generation.engines.hf.shared_attention import (
    GroupedCache,
    cache_for_samples,
    cache_share_context,
    grouped_ready,
    prefill,
    shared_attention_ready,
)

# How often a running `generate` call asks whether it should stop (a database read, for a job's cancel).
STOP_POLL_SECONDS = 1.0


class StopWhen:
    """Ends a sampling call once `stop()` is True, asking at most once per `interval` seconds (the first time after
    one decoding step). Called as a transformers stopping criterion (beam search's `generate`) or through `due()`
    (Concord's own sampling loop). `fired` says whether it ended the call."""

    def __init__(self, stop: Callable[[], bool], interval: float = STOP_POLL_SECONDS):
        self.stop, self.interval = stop, interval
        self.fired = False
        self.asked = 0  # times `stop` was called
        self._next = time.monotonic() + interval

    def due(self) -> bool:
        """Whether the call should end now (asks `stop` when its interval has passed)."""
        now = time.monotonic()
        if not self.fired and now >= self._next:
            self._next = now + self.interval
            self.asked += 1
            self.fired = bool(self.stop())
        return self.fired

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.full((input_ids.shape[0],), self.due(), dtype=torch.bool, device=input_ids.device)


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

        values, indices = top_k_top_p(scores, top_k=self.top_k, top_p=self.top_p)
        return torch.full_like(scores, float("-inf")).scatter(-1, indices, values)


def top_k_top_p(scores, *, top_k: int, top_p: float):
    """The k best scores of each row, largest first, with their token ids; those past the top-p mass set to -inf
    (a token stays iff the probability of the tokens ranked above it is below top_p, so the best always stays)."""
    import torch

    values, indices = torch.topk(scores, min(top_k, scores.shape[-1]), dim=-1)
    if top_p < 1.0:
        probs = torch.softmax(values.float(), dim=-1)
        above = torch.cumsum(probs, dim=-1) - probs  # mass of the better-ranked tokens
        values = values.masked_fill(above >= top_p, float("-inf"))
    return values, indices


def _generate_kwargs(
    loaded: LoadedModel, decoding: Decoding, *, temperature: float | None = None, may_end: bool = False
) -> dict:
    kwargs = {
        "do_sample": True,
        "max_new_tokens": decoding.max_new_tokens,
        "top_k": decoding.top_k,
        "top_p": decoding.top_p,
        "num_beams": decoding.num_beams,
        "pad_token_id": loaded.tokenizer.pad_token_id,
    }
    if not may_end:
        kwargs["min_new_tokens"] = decoding.max_new_tokens
    if temperature is not None:
        kwargs["temperature"] = temperature
    else:
        temperature = getattr(loaded.model.generation_config, "temperature", None)
    # Our processor runs before transformers' warpers, so it stands in for them only when no temperature would apply
    # first; beam search keeps transformers' own path.
    if decoding.top_k > 0 and decoding.num_beams == 1 and temperature in (None, 1.0):
        from transformers import LogitsProcessorList

        kwargs |= {"top_k": 0, "top_p": 1.0}
        kwargs["logits_processor"] = LogitsProcessorList([TopKTopP(decoding.top_k, decoding.top_p)])
    return kwargs


# Generation-config settings that would add a logits processor of their own, each with its neutral values. Concord's
# sampling loop applies temperature, top-k, top-p and min_new_tokens (the end-of-sequence ban) only, so a model whose
# generation config sets any of these is sampled by transformers' `generate` instead.
_NEUTRAL_SETTINGS: dict[str, tuple] = {
    "guidance_scale": (None, 1, 1.0),
    "sequence_bias": (None,),
    "repetition_penalty": (None, 1.0),
    "encoder_repetition_penalty": (None, 1.0),
    "no_repeat_ngram_size": (None, 0),
    "encoder_no_repeat_ngram_size": (None, 0),
    "bad_words_ids": (None,),
    "forced_bos_token_id": (None,),
    "forced_eos_token_id": (None,),
    "remove_invalid_values": (None, False),
    "exponential_decay_length_penalty": (None,),
    "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,),
    "top_h": (None,),
    "min_p": (None,),
    "typical_p": (None, 1.0),
    "epsilon_cutoff": (None, 0.0),
    "eta_cutoff": (None, 0.0),
    "watermarking_config": (None,),
    "renormalize_logits": (None, False),
}


def own_loop_applies(loaded: LoadedModel, decoding: Decoding) -> bool:
    """Whether Concord's sampling loop gives what `generate` would: sampling (one beam) with top-k, or pure sampling
    (no top-k, no top-p), and no other logits processor in the model's generation config."""
    if decoding.num_beams != 1 or (decoding.top_k <= 0 and decoding.top_p < 1.0):
        return False
    config = loaded.model.generation_config
    return all(getattr(config, name, None) in neutral for name, neutral in _NEUTRAL_SETTINGS.items())


def _eos_ids(loaded: LoadedModel) -> list[int]:
    eos = loaded.model.generation_config.eos_token_id
    return [] if eos is None else [eos] if isinstance(eos, int) else list(eos)


def draw_tokens(
    logits, *, decoding: Decoding, temperature: float | None = None, banned: Sequence[int] = (), generator=None
):
    """One sampled token per row, as transformers' sampling step draws it after its processors: the `banned` ids
    (end of sequence, before min_new_tokens) removed, temperature, top-k, top-p, then a draw from the renormalised
    distribution. The draw is over the k best tokens only: on a CPU, softmax and the multinomial draw over the whole
    vocabulary for every row and step cost about as much as the model's forward pass once many rows are batched.
    The random numbers come from `generator` (torch's default one when None).
    """
    import torch

    scores = logits.float()
    if banned:
        scores = scores.index_fill(-1, torch.tensor(list(banned), device=scores.device), float("-inf"))
    if temperature is not None:
        scores = scores / temperature
    if decoding.top_k <= 0 and decoding.top_p >= 1.0:  # pure sampling (the judge's): the whole distribution
        # By the inverse of each row's cumulative distribution: one uniform draw per row finds the first token whose
        # running total exceeds it (a token of probability 0 adds nothing, so it is never found). The same
        # distribution as torch.multinomial, which on a CPU takes about as long as a decoding step over the vocabulary.
        # Summed in double precision, so that the smallest probabilities are not lost in the running total.
        running = torch.cumsum(torch.softmax(scores, dim=-1), dim=-1, dtype=torch.float64)
        drawn = (
            torch.rand((scores.shape[0], 1), dtype=torch.float64, device=scores.device, generator=generator)
            * running[:, -1:]
        )
        return torch.searchsorted(running, drawn, right=True).squeeze(-1).clamp(max=scores.shape[-1] - 1)
    values, indices = top_k_top_p(scores, top_k=decoding.top_k, top_p=decoding.top_p)
    choice = torch.multinomial(torch.softmax(values, dim=-1), 1, generator=generator)
    return indices.gather(-1, choice).squeeze(-1)


def _temperature(model, temperature: float | None) -> float | None:
    """The temperature a draw divides by (`temperature`, else the model's own), None where it is 1."""
    if temperature is None:
        temperature = model.generation_config.temperature
    return None if temperature in (None, 1.0) else float(temperature)


def _sample_rows(
    loaded: LoadedModel,
    input_ids,
    attention_mask,
    decoding: Decoding,
    criterion: StopWhen | None,
    *,
    temperature: float | None = None,
    may_end: bool = False,
    prefilled=None,
):
    """`decoding.samples` rows of exactly `max_new_tokens` new tokens per context row (rows in context order).

    Each context is run once (transformers' `generate` would run it once per sample), and its key/value cache and
    last logits are then repeated for the samples; after that one token per step for every row.
    `temperature` stands in for the model's own. With `may_end` (the judge's answers) the end of sequence may be drawn:
    a row that draws it is done and gets padding after it, as `generate` pads it, and the call ends once every row is
    done, so its rows may be shorter than `max_new_tokens`.
    `prefilled` (`scoring.prefill_tree`'s cache, mask, last positions and logits) stands in for running the contexts
    here, and `input_ids` and `attention_mask` are then unused.
    """
    import torch

    model = loaded.model
    temperature = _temperature(model, temperature)
    eos = _eos_ids(loaded)
    banned = [] if may_end else eos  # min_new_tokens = max_new_tokens: the end of sequence is never drawn
    samples, length = decoding.samples, decoding.max_new_tokens

    if prefilled is None:
        cache, last_logits, last = prefill(model, input_ids, attention_mask)
    else:
        cache, attention_mask, last, last_logits = prefilled
    logits = last_logits.repeat_interleave(samples, dim=0)
    # Each context's keys and values read once for its samples (`shared_attention`) where the context is what a step
    # mostly reads (the judge's prompts, a few answer tokens), else copied for each row (a generation's short context
    # and its 50 new tokens: the shared step's extra products cost more than the reading they save).
    shared = (
        attention_mask.shape[-1] >= length
        and shared_attention_ready(loaded)
        and cache_share_context(cache, attention_mask, samples, room=length)
    )
    if not shared:
        cache_for_samples(cache, samples, room=length)
        mask = attention_mask.repeat_interleave(samples, dim=0)
        ones = torch.ones((mask.shape[0], 1), dtype=mask.dtype, device=mask.device)
    position = last.repeat_interleave(samples, dim=0)
    new = torch.empty((logits.shape[0], length), dtype=torch.long, device=loaded.device)
    done = torch.zeros(logits.shape[0], dtype=torch.bool, device=loaded.device)
    ends = torch.tensor(eos, dtype=torch.long, device=loaded.device)
    for step in range(length):
        token = draw_tokens(logits, decoding=decoding, temperature=temperature, banned=banned)
        if may_end:
            token = token.masked_fill(done, loaded.tokenizer.pad_token_id)
            done |= torch.isin(token, ends)
        new[:, step] = token
        if criterion is not None and criterion.due():
            raise Interrupted(f"stopped after {step + 1} new tokens")
        if step + 1 == length:
            break
        if may_end and bool(done.all()):
            return new[:, : step + 1]
        position = position + 1
        if shared:  # the context's padding is masked by the shared layers; a row's own tokens are all seen
            out = model(
                input_ids=new[:, step : step + 1], position_ids=position, past_key_values=cache, concord_shared=cache
            )
        else:
            mask = torch.cat([mask, ones], dim=-1)
            out = model(
                input_ids=new[:, step : step + 1],
                attention_mask=mask,
                position_ids=position,
                past_key_values=cache,
                use_cache=True,
            )
        logits = out.logits[:, -1]
    return new


def sample_continuations(
    *,
    loaded: LoadedModel,
    contexts: Sequence[str],
    decoding: Decoding,
    seed: int,
    batch_size: int | None = None,
    stop: Callable[[], bool] | None = None,
    stop_interval: float = STOP_POLL_SECONDS,
    temperature: float | None = None,
    may_end: bool = False,
    share_prefixes: bool = False,
) -> list[list[str]]:
    """`decoding.samples` continuations per context (outer list in the order of `contexts`).

    Sampling with top-k (or pure sampling) runs Concord's own loop (`_sample_rows`), unless the model's generation
    config asks for another logits processor; beam search and those models go through transformers' `generate`.
    With `stop`, a call in progress asks it between decoding steps (at most once per `stop_interval` seconds) and
    raises Interrupted once it is True: a cancelled job stops within about a second, not after the last token.
    `temperature` replaces the model's own; with `may_end` (the judge's answers) a continuation may end at the end of
    sequence, before `max_new_tokens`. With `share_prefixes` (the judge's prompts, in Concord's own loop, for a model
    that takes the tree pass), the tokens every context opens with run once for the call (`scoring._opening`, at least
    OPENING_MIN_TOKENS of them) and each batch's contexts as trees (`scoring.prefill_tree`: the samples of one
    generation context share their prompts' part); the numbers differ from the padded batch's in the last bits only.
    """
    import torch
    from transformers import StoppingCriteriaList, set_seed

    tokenizer, model = loaded.tokenizer, loaded.model
    batch_size = batch_size or loaded.batch_size
    own = own_loop_applies(loaded, decoding)
    kwargs = {} if own else _generate_kwargs(loaded, decoding, temperature=temperature, may_end=may_end)
    criterion = StopWhen(stop, stop_interval) if stop is not None else None
    if criterion is not None and not own:
        kwargs["stopping_criteria"] = StoppingCriteriaList([criterion])
    results: list[list[str]] = []
    set_seed(seed)
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"  # new tokens must follow every context directly
    try:
        with torch.inference_mode():
            every, opening = None, None
            if own and share_prefixes and contexts:
                from generation.engines.hf import scoring

                if scoring._tree_agrees(loaded):
                    every = tokenizer(list(contexts)).input_ids
                    opening = scoring._opening(loaded, every)
            for start in range(0, len(contexts), batch_size):
                batch = list(contexts[start : start + batch_size])
                prefilled = None
                if every is not None:
                    cut = len(opening.tokens) if opening is not None else 0
                    rests = [ids[cut:] for ids in every[start : start + batch_size]]
                    prefilled = scoring.prefill_tree(loaded, rests, opening)
                if prefilled is None:
                    encoded = tokenizer(batch, return_tensors="pt", padding=True).to(loaded.device)
                    input_ids, attention_mask = encoded.input_ids, encoded.attention_mask
                else:
                    input_ids = attention_mask = None
                if own:
                    new_tokens = _sample_rows(
                        loaded,
                        input_ids,
                        attention_mask,
                        decoding,
                        criterion,
                        temperature=temperature,
                        may_end=may_end,
                        prefilled=prefilled,
                    )
                else:
                    if decoding.num_beams == 1:
                        extra = {"num_return_sequences": decoding.samples}
                    else:  # beam search returns at most num_beams sequences per row: repeat the rows instead
                        input_ids = input_ids.repeat_interleave(decoding.samples, dim=0)
                        attention_mask = attention_mask.repeat_interleave(decoding.samples, dim=0)
                        extra = {}
                    output = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs, **extra)
                    if criterion is not None and criterion.fired:
                        raise Interrupted(f"stopped after {output.shape[1] - input_ids.shape[1]} new tokens")
                    new_tokens = output[:, input_ids.shape[1] :]
                texts = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
                for row in range(len(batch)):
                    results.append(texts[row * decoding.samples : (row + 1) * decoding.samples])
    finally:
        tokenizer.padding_side = previous_side
    return results


def _grouped_rows(
    loaded: LoadedModel, batches: list, generators: list, decoding: Decoding, criterion: StopWhen | None
) -> list:
    """`_sample_rows` for several groups of left-padded contexts (`batches`: each group's input ids and attention
    mask; `generators`: each group's random generator) in one decoding loop, each group's tokens its own call's.
    Each group is run once as its own call runs it, keeps its own cache and draws from its own generator, and a step
    runs every group's rows through the model together (`shared_attention.GroupedCache`: attention per group, with
    the group's own mask). For a model and shape of groups checked by `grouped_ready`, a row's matrix products give
    the same numbers in the larger batch, so every group gets the tokens its own call would give."""
    import torch

    temperature = _temperature(loaded.model, None)
    banned = _eos_ids(loaded)  # min_new_tokens = max_new_tokens: the end of sequence is never drawn
    length = decoding.max_new_tokens
    grouped = GroupedCache(loaded.model, batches, decoding.samples, room=length)
    logits = grouped.first_logits
    new = torch.empty((grouped.rows, length), dtype=torch.long, device=loaded.device)
    for step in range(length):
        for rows, scores, generator in zip(grouped.split(new), logits, generators, strict=True):
            rows[:, step] = draw_tokens(
                scores, decoding=decoding, temperature=temperature, banned=banned, generator=generator
            )
        if criterion is not None and criterion.due():
            raise Interrupted(f"stopped after {step + 1} new tokens")
        if step + 1 == length:
            break
        logits = grouped.split(grouped.step(new[:, step : step + 1]))
    return grouped.split(new)


# The most rows decoded as one batch: beyond it the groups are sampled one call each. A batch this large already runs
# its matrix products at nearly the rate of a larger one, and the caches of every row are held at once.
GROUPED_ROWS_MAX = 400


def _grouped_applies(loaded: LoadedModel, decoding: Decoding, widths: list[int], contexts: tuple[int, ...]) -> bool:
    """Whether groups of contexts (their padded `widths`, their numbers of `contexts`) may decode as one batch
    (`_grouped_rows`) and give what their own calls give: more than one group, at most GROUPED_ROWS_MAX rows,
    Concord's own loop, a CPU (each group's generator is torch's CPU one, as its own call's `set_seed` makes it),
    contexts narrower than the new tokens (a wider one is decoded from the shared context, `_sample_rows`), and a
    model checked for this shape of groups (`grouped_ready`)."""
    return (
        len(widths) > 1
        and sum(contexts) * decoding.samples <= GROUPED_ROWS_MAX
        and all(0 < width < decoding.max_new_tokens for width in widths)
        and loaded.device.type == "cpu"
        and own_loop_applies(loaded, decoding)
        and grouped_ready(loaded, contexts, decoding.samples)
    )


def sample_groups(
    *,
    loaded: LoadedModel,
    groups: Sequence[tuple[Sequence[str], int]],
    decoding: Decoding,
    stop: Callable[[], bool] | None = None,
    stop_interval: float = STOP_POLL_SECONDS,
) -> list[list[list[str]]]:
    """Each group's continuations (a group: contexts and their seed), exactly as `sample_continuations` gives them
    for the group's contexts as one batch with its seed: a job's chunk samples each setting so. Where the groups may
    decode together (`_grouped_applies`), their rows run through the model as one batch, whose larger matrix products
    a CPU runs faster per row (benchmarks/README.md); else one call per group. `stop` as in `sample_continuations`."""
    import torch
    from transformers import set_seed

    tokenizer = loaded.tokenizer
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"  # new tokens must follow every context directly
    try:
        encoded = [tokenizer(list(contexts), return_tensors="pt", padding=True) for contexts, _ in groups if contexts]
    finally:
        tokenizer.padding_side = previous_side
    if len(encoded) < len(groups) or not _grouped_applies(
        loaded,
        decoding,
        [batch.input_ids.shape[1] for batch in encoded],
        tuple(len(contexts) for contexts, _ in groups),
    ):
        return [
            sample_continuations(
                loaded=loaded,
                contexts=contexts,
                decoding=decoding,
                seed=seed,
                batch_size=max(1, len(contexts)),
                stop=stop,
                stop_interval=stop_interval,
            )
            for contexts, seed in groups
        ]
    criterion = StopWhen(stop, stop_interval) if stop is not None else None
    generators = [torch.Generator(device=loaded.device).manual_seed(seed) for _, seed in groups]
    batches = [(batch.input_ids.to(loaded.device), batch.attention_mask.to(loaded.device)) for batch in encoded]
    with torch.inference_mode():
        new_tokens = _grouped_rows(loaded, batches, generators, decoding, criterion)
    # The random state as the last group's own call leaves it.
    set_seed(groups[-1][1])
    torch.set_rng_state(generators[-1].get_state())
    results = []
    for (contexts, _), tokens in zip(groups, new_tokens, strict=True):
        texts = tokenizer.batch_decode(tokens, skip_special_tokens=True)
        results.append([texts[row * decoding.samples : (row + 1) * decoding.samples] for row in range(len(contexts))])
    return results
