"""The decoding steps' key/value caches: each context copied for its samples (`cache_for_samples`), or read once
for all of them (`cache_share_context`, with the attention function below).

A sampling call gives every context `samples` rows. Their caches hold the same context (the prompt, for the judge)
followed by each row's own new tokens. Copied for each row, the context is read `samples` times by every layer at
every step. On a CPU, attention for one new token is bound by that reading, not by its arithmetic: for the judge's 16
prompts of about 200 tokens and 5 answers each, it was about 40% of a decoding step.

Here a layer keeps the context's keys and values once per context, as the prefill left them (left padded), and each
row's new tokens in a buffer of its own. The attention of a step scores a row's query against its context's keys
(one matrix product per context, for all its samples' queries at once) and against its own keys, takes one softmax
over both, and sums the two weighted values. That is the same attention as over the row's whole cache, up to the order
in which floating point adds.

It runs as an attention function registered with transformers (`ATTENTION`): the model's own layers call it, and it
is sdpa's unless a step passes the cache as `concord_shared`. A model is switched to it once it has been checked
(`shared_attention_ready`): its decoding logits must equal those of the copied cache, which a model whose layers do not
pass the step's keyword arguments through to attention, or whose cache is not plain, would not give.
"""

from __future__ import annotations

import functools
import logging
import weakref
from typing import Any

from generation.engines.hf.loading import LoadedModel

logger = logging.getLogger(__name__)

ATTENTION = "concord_shared_context"
_READY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> whether its steps use the shared context
# model -> {(contexts per group, samples, torch threads): whether such groups decode as one batch}
_GROUPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """sdpa's attention, or with `concord_shared` (a cache of `SharedContextLayer`s) and one query token per row,
    attention over the row's context (its layer's `context_keys`, read once for the context's samples) and its own
    keys (`key`, `value`: what the layer's update returned)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = kwargs.pop("concord_groups", None)
    if groups is not None:
        return _grouped_attention(module, query, groups, dropout=dropout, scaling=scaling, **kwargs)
    cache = kwargs.pop("concord_shared", None)
    if cache is None or query.shape[2] != 1:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    import torch

    layer = cache.layers[module.layer_idx]
    context_keys, context_values, bias = layer.context_keys, layer.context_values, layer.context_bias
    rows, query_heads, _, dim = query.shape
    contexts, heads, width, _ = context_keys.shape
    samples, group = rows // contexts, query_heads // heads  # query head h reads key head h // group
    scale = scaling if scaling is not None else dim**-0.5
    # Per context and key head, the queries of its samples and of the heads that share that key head, as one matrix.
    stacked = query.view(contexts, samples, heads, group, dim).transpose(1, 2).reshape(contexts, heads, -1, dim)
    on_context = torch.matmul(stacked, context_keys.transpose(-1, -2)) * scale + bias
    on_context = on_context.view(contexts, heads, samples, group, width).transpose(1, 2).reshape(rows, heads, group, -1)
    on_own = torch.matmul(query.view(rows, heads, group, dim), key.transpose(-1, -2)) * scale
    weights = torch.softmax(torch.cat([on_context, on_own], dim=-1), dim=-1, dtype=torch.float32).to(query.dtype)
    context_weights, own_weights = weights.split([width, weights.shape[-1] - width], dim=-1)
    context_weights = context_weights.view(contexts, samples, heads, group, width).transpose(1, 2)
    from_context = torch.matmul(context_weights.reshape(contexts, heads, -1, width), context_values)
    from_context = (
        from_context.view(contexts, heads, samples, group, dim).transpose(1, 2).reshape(rows, heads, group, dim)
    )
    output = from_context + torch.matmul(own_weights, value)
    return output.reshape(rows, query_heads, 1, dim).transpose(1, 2).contiguous(), None


def _grouped_attention(module, query, groups: GroupedCache, *, dropout: float, scaling, **kwargs):
    """sdpa's attention for each group's rows over that group's own cache, with the mask its own step would have
    (`GroupedCache.masks`): each group's numbers are those of its own forward pass."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    layer = groups.cache.layers[module.layer_idx]
    outputs = [
        sdpa_attention_forward(
            module, query[start:end], part.keys, part.values, mask, dropout=dropout, scaling=scaling, **kwargs
        )[0]
        for part, (start, end), mask in zip(layer.parts, groups.bounds, groups.masks, strict=True)
    ]
    return torch.cat(outputs, dim=0), None


@functools.cache
def _registered() -> str:
    """The attention function and its mask (sdpa's) registered with transformers, once per process."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(ATTENTION, _attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, sdpa_mask)
    return ATTENTION


@functools.cache
def _roomy_layer_class():
    """transformers' DynamicLayer with room for the positions still to come (made once, on first use: transformers is
    imported only when a model runs)."""
    from transformers.cache_utils import DynamicLayer

    class RoomyLayer(DynamicLayer):
        """A filled layer's copy for the decoding steps, each row repeated for its samples, with room for every token
        still to come: a step writes its keys and values in place, where DynamicLayer concatenates (copying every
        row's whole cache each step). The same numbers as repeating the rows, then concatenating."""

        seen: int  # positions filled
        buffers: list  # [keys, values], each (rows x samples, heads, filled + room, dim)

        @classmethod
        def of(cls, layer, samples: int, room: int) -> RoomyLayer:
            roomy = cls()
            roomy.dtype, roomy.device, roomy.is_initialized = layer.keys.dtype, layer.keys.device, True
            roomy.seen = layer.keys.shape[-2]
            roomy.buffers = []
            for states in (layer.keys, layer.values):
                rows, heads, seen, dim = states.shape
                buffer = states.new_empty((rows, samples, heads, seen + room, dim))
                buffer[:, :, :, :seen] = states[:, None]
                roomy.buffers.append(buffer.view(rows * samples, heads, seen + room, dim))
            roomy.keys, roomy.values = (buffer[:, :, : roomy.seen] for buffer in roomy.buffers)
            return roomy

        def update(self, key_states, value_states, *args, **kwargs):
            end = self.seen + key_states.shape[-2]
            assert end <= self.buffers[0].shape[-2]  # the loop asks for no more than its room
            self.buffers[0][:, :, self.seen : end] = key_states
            self.buffers[1][:, :, self.seen : end] = value_states
            self.seen = end
            self.keys, self.values = self.buffers[0][:, :, :end], self.buffers[1][:, :, :end]
            return self.keys, self.values

    return RoomyLayer


def cache_for_samples(cache, samples: int, room: int) -> None:
    """Repeat the cache's rows for their samples, with room for `room` more positions where a layer is a plain
    DynamicLayer (any other kind is repeated as it is and grows its own way)."""
    from transformers.cache_utils import DynamicLayer

    for index, layer in enumerate(cache.layers):
        if type(layer) is DynamicLayer and layer.is_initialized:
            cache.layers[index] = _roomy_layer_class().of(layer, samples, room)
        else:
            layer.batch_repeat_interleave(samples)


@functools.cache
def _layer_class():
    """The roomy layer holding the context once and each row's new tokens (made on first use, as the roomy one)."""

    class SharedContextLayer(_roomy_layer_class()):  # type: ignore[misc]  # made on first use
        """A filled layer's keys and values kept per context (`context_keys`, `context_values`, with `context_bias`
        masking its padding), and a buffer per row for the new tokens, written in place by the roomy layer's
        `update`: `keys` and `values` are the row's own. Its sequence length counts both."""

        context_keys: Any  # (contexts, heads, width, dim)
        context_values: Any
        context_bias: Any  # (contexts, 1, 1, width): 0 for a token, the dtype's minimum for padding

        @classmethod
        def of(cls, layer, bias, samples: int, room: int) -> SharedContextLayer:  # type: ignore[override]
            shared = cls()
            shared.dtype, shared.device, shared.is_initialized = layer.keys.dtype, layer.keys.device, True
            shared.context_keys, shared.context_values, shared.context_bias = layer.keys, layer.values, bias
            rows, heads, _, dim = layer.keys.shape
            shared.buffers = [layer.keys.new_empty((rows * samples, heads, room, dim)) for _ in range(2)]
            shared.seen = 0
            shared.keys, shared.values = (buffer[:, :, :0] for buffer in shared.buffers)
            return shared

        def get_seq_length(self) -> int:
            return self.context_keys.shape[-2] + self.seen

        def get_mask_sizes(self, query_length: int, *args, **kwargs) -> tuple[int, int]:
            return self.get_seq_length() + query_length, 0

    return SharedContextLayer


def cache_share_context(cache, attention_mask, samples: int, room: int) -> bool:
    """Turn a filled cache of one row per context (`attention_mask`: its padding) into one whose layers keep each
    context once for its `samples` rows, with room for `room` new tokens per row. False, and the cache untouched,
    where a layer is not a plain DynamicLayer (a sliding window, say)."""
    import torch
    from transformers.cache_utils import DynamicLayer

    if not all(type(layer) is DynamicLayer and layer.is_initialized for layer in cache.layers):
        return False
    dtype = cache.layers[0].keys.dtype
    bias = torch.zeros(attention_mask.shape, dtype=dtype, device=attention_mask.device)
    bias = bias.masked_fill(attention_mask == 0, torch.finfo(dtype).min)[:, None, None, :]
    for index, layer in enumerate(cache.layers):
        cache.layers[index] = _layer_class().of(layer, bias, samples, room)
    return True


def prefill(model, input_ids, attention_mask):
    """Run left-padded contexts once: their key/value cache, each row's last logits and last position."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # left padding: a context counts from its first token
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    return cache, out.logits[:, -1], positions[:, -1:]


@functools.cache
def _grouped_layer_class():
    """A layer of a `GroupedCache`: each group's own layer, written by its rows (made on first use, as the others)."""
    from transformers.cache_utils import DynamicLayer

    class GroupedLayer(DynamicLayer):
        """The layer of several groups of rows run as one batch: a step's keys and values are written into each
        group's own layer (`parts`, rows `bounds`); the grouped attention reads them there, so `update` returns its
        input unchanged. Its sequence length is the longest group's."""

        parts: list
        bounds: list[tuple[int, int]]

        @classmethod
        def of(cls, parts: list, bounds: list[tuple[int, int]]) -> GroupedLayer:
            grouped = cls()
            grouped.parts, grouped.bounds = parts, bounds
            grouped.dtype, grouped.device, grouped.is_initialized = parts[0].dtype, parts[0].device, True
            return grouped

        def update(self, key_states, value_states, *args, **kwargs):
            for part, (start, end) in zip(self.parts, self.bounds, strict=True):
                part.update(key_states[start:end], value_states[start:end])
            return key_states, value_states

        def get_seq_length(self) -> int:
            return max(part.get_seq_length() for part in self.parts)

    return GroupedLayer


class GroupedCache:
    """Several groups of left-padded contexts decoded as one batch (`generation.engines.hf.sampling.sample_groups`),
    `samples` rows per context. Each group is prefilled as its own call would do it and keeps its own cache (its own
    padding, its own width), with room for `room` new tokens; a step (`step`) runs every group's rows through the
    model's layers at once, and attention per group with the mask the group's own forward pass would make. Passed to
    the model as its cache and as `concord_groups`."""

    def __init__(self, model, batches: list, samples: int, room: int):
        """`batches`: each group's (input ids, attention mask). `first_logits` holds each group's rows' logits for
        their first draw."""
        from transformers import DynamicCache

        self.model = model
        self.caches, self.first_logits, self.attention_masks, self.positions = [], [], [], []
        self.bounds: list[tuple[int, int]] = []
        for input_ids, attention_mask in batches:
            cache, last_logits, last = prefill(model, input_ids, attention_mask)
            cache_for_samples(cache, samples, room=room)
            start = self.bounds[-1][1] if self.bounds else 0
            self.bounds.append((start, start + last_logits.shape[0] * samples))
            self.caches.append(cache)
            self.first_logits.append(last_logits.repeat_interleave(samples, dim=0))
            self.attention_masks.append(attention_mask.repeat_interleave(samples, dim=0))
            self.positions.append(last.repeat_interleave(samples, dim=0))
        self.cache = DynamicCache()
        self.cache.layers = [
            _grouped_layer_class().of([cache.layers[index] for cache in self.caches], self.bounds)
            for index in range(len(self.caches[0].layers))
        ]
        self.masks: list = [None] * len(self.caches)  # each group's attention mask for the step under way
        self.rows = self.bounds[-1][1] if self.bounds else 0

    def step(self, input_ids):
        """One decoding step of every row (`input_ids`: one new token each): the last logits, (rows, vocabulary)."""
        import torch
        from transformers.masking_utils import create_causal_mask

        model = self.model
        self.attention_masks = [
            torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1) for mask in self.attention_masks
        ]
        self.positions = [position + 1 for position in self.positions]
        hidden = model.config.hidden_size
        self.masks = [
            create_causal_mask(
                config=model.config,
                inputs_embeds=torch.empty((mask.shape[0], 1, hidden), dtype=model.dtype, device=mask.device),
                attention_mask=mask,
                past_key_values=cache,
                position_ids=position,
            )
            for cache, mask, position in zip(self.caches, self.attention_masks, self.positions, strict=True)
        ]
        return model(
            input_ids=input_ids,
            position_ids=torch.cat(self.positions),
            past_key_values=self.cache,
            use_cache=True,
            concord_groups=self,
        ).logits[:, -1]

    def split(self, rows) -> list:
        """A tensor of every row, cut into its groups' rows."""
        return [rows[start:end] for start, end in self.bounds]


_CHECK_TEXTS = ["Robin said that", "Yesterday Alex went to the market because"]


def shared_attention_ready(loaded: LoadedModel) -> bool:
    """Whether this model's decoding steps may read the shared context (checked once per loaded model, against the
    context copied for each row): the model is switched to the shared attention function when they agree."""
    if loaded.model in _READY:
        return _READY[loaded.model]
    model = loaded.model
    implementation = getattr(model.config, "_attn_implementation", None)
    ready = False
    if implementation == ATTENTION:
        ready = True
    elif implementation == "sdpa":
        try:
            model.set_attn_implementation(_registered())
            ready = _agrees(loaded)
        except Exception:  # noqa: BLE001 - any model that cannot take it decodes the copied way
            logger.info(
                "%s: the shared-context attention failed; decoding from copied caches", loaded.name, exc_info=True
            )
            ready = False
        if not ready:
            model.set_attn_implementation(implementation)
            logger.info("%s: decoding from copied caches", loaded.name)
    _READY[loaded.model] = ready
    return ready


def _agrees(loaded: LoadedModel) -> bool:
    """Two decoding steps of two left-padded contexts with three rows each: the logits through the shared context
    equal those through the context repeated for each row."""
    import copy

    import torch

    model, tokenizer, samples = loaded.model, loaded.tokenizer, 3
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        encoded = tokenizer(_CHECK_TEXTS, return_tensors="pt", padding=True).to(loaded.device)
    finally:
        tokenizer.padding_side = previous_side
    mask = encoded.attention_mask
    with torch.inference_mode():
        cache, _, last = prefill(model, encoded.input_ids, mask)
        copied, shared = copy.deepcopy(cache), cache
        copied.batch_repeat_interleave(samples)  # transformers' own: the context copied for each row
        if not cache_share_context(shared, mask, samples, room=2):
            return False
        rows = mask.repeat_interleave(samples, dim=0)
        position = last.repeat_interleave(samples, dim=0)
        tokens = torch.arange(10, 10 + rows.shape[0], device=loaded.device)[:, None]
        tolerance = 1e-4 if model.dtype == torch.float32 else 3e-2
        for _ in range(2):
            rows = torch.cat([rows, torch.ones_like(rows[:, :1])], dim=-1)
            position = position + 1
            expected = model(
                input_ids=tokens, attention_mask=rows, position_ids=position, past_key_values=copied
            ).logits
            got = model(input_ids=tokens, position_ids=position, past_key_values=shared, concord_shared=shared).logits
            if not torch.allclose(expected, got, atol=tolerance, rtol=0):
                return False
            tokens = tokens + 1
    return True


def grouped_ready(loaded: LoadedModel, contexts: tuple[int, ...], samples: int) -> bool:
    """Whether this model may decode groups of these numbers of contexts, `samples` rows each, as one batch
    (`GroupedCache`) and give each group's rows the very logits of the group's own steps. Checked once per model,
    shape of groups and number of torch threads: it must take the registered attention function
    (`shared_attention_ready`), and two decoding steps of groups of that shape must agree to the last bit. The
    matrix product a CPU library picks can depend on the number of rows and threads (a few rows take another path,
    whose sums may round differently), so a shape that was not checked is not trusted."""
    import torch

    key = (contexts, samples, torch.get_num_threads())
    verdicts = _GROUPED.setdefault(loaded.model, {})
    if key not in verdicts:
        ready = False
        if shared_attention_ready(loaded):
            try:
                ready = _grouped_agrees(loaded, contexts, samples)
            except Exception:  # noqa: BLE001 - a model whose layers cannot take it decodes each group on its own
                logger.info("%s: the grouped decoding failed; one call per group", loaded.name, exc_info=True)
        verdicts[key] = ready
    return bool(verdicts[key])


_GROUP_TEXTS = ["Robin said that", "Yesterday Alex went to the market because", "Sam thinks that", "Yes,"]


def _grouped_agrees(loaded: LoadedModel, contexts: tuple[int, ...], samples: int) -> bool:
    """Two decoding steps of groups of `contexts` short texts (of different widths), `samples` rows each: the logits
    of the rows decoded as one batch equal those of each group's own steps."""
    import torch

    model, tokenizer = loaded.model, loaded.tokenizer
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        batches = [
            tokenizer(
                [_GROUP_TEXTS[(group + index) % len(_GROUP_TEXTS)] for index in range(count)],
                return_tensors="pt",
                padding=True,
            ).to(loaded.device)
            for group, count in enumerate(contexts)
        ]
    finally:
        tokenizer.padding_side = previous_side
    with torch.inference_mode():
        grouped = GroupedCache(model, [(batch.input_ids, batch.attention_mask) for batch in batches], samples, room=2)
        caches, masks, positions = [], [], []  # each group's own, stepped as its own call steps them
        for batch in batches:
            cache, _, last = prefill(model, batch.input_ids, batch.attention_mask)
            cache_for_samples(cache, samples, room=2)
            caches.append(cache)
            masks.append(batch.attention_mask.repeat_interleave(samples, dim=0))
            positions.append(last.repeat_interleave(samples, dim=0))
        tokens = 10 + torch.arange(grouped.rows, device=loaded.device)[:, None] % 1000
        for _ in range(2):
            masks = [torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1) for mask in masks]
            positions = [position + 1 for position in positions]
            expected = [
                model(
                    input_ids=ids, attention_mask=mask, position_ids=position, past_key_values=cache, use_cache=True
                ).logits[:, -1]
                for cache, mask, position, ids in zip(caches, masks, positions, grouped.split(tokens), strict=True)
            ]
            if not torch.equal(torch.cat(expected), grouped.step(tokens)):
                return False
            tokens = tokens + 1
    return True
