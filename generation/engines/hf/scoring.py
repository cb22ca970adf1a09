"""Probability-based evaluation (docs/domain.md, 'The probability-based evaluation'; the paper's eq. 5), batched.

Each instance is scored by putting each of the 4 candidates of its mask's case into the text (capitalised by the rule)
and taking the causal LM's mean token loss of the whole sequence, exactly as `model(ids, labels=ids).loss` computes
it: tokens 1..T-1 are predicted from the ones before them; the first token of the sequence is not predicted.

The 4 candidate texts differ only from the mask on, so their token sequences share a prefix; instances of one template
share more (RUFF puts the same sentence under all four pronouns). We tokenize each full text (tokenizing the pieces
separately could merge tokens differently across the mask boundary) and lay the token sequences of a run of
instances out as a tree (a trie): every distinct token-after-a-given-history is one node, run once. A tree goes through
the model as one row whose attention mask lets each node see its ancestors only, with its depth as its position, so
each node's output is the one it would have in its own sequence. A sequence's loss is the sum of its nodes' losses
over the number of predicted tokens. A leaf's output would predict nothing, so leaves are not run; and the language
model head runs only on the nodes whose output predicts a token.

Models whose attention takes no such mask (flash attention, say) are scored the earlier way, and every model is checked
against it once (`_tree_agrees`): the shared prefix runs once, and the candidates' own tokens from its key/value cache.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from generation.engines.base import (
    DEFAULT_PROB_SCORE,
    PROB_SCORES,
    ScoreItem,
    ScoreResult,
    candidate_texts,
    score_result,
)
from generation.engines.hf import shared_attention
from generation.engines.hf.loading import LoadedModel

logger = logging.getLogger(__name__)

# The scoring rules (PROB_SCORES), the instance and its result are the engine interface's (generation/engines/base.py).


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


def _score_batch_cached(
    loaded: LoadedModel, batch: list[_Prepared], *, suffix_only: bool = False, summed: bool = False
) -> list[list[float]]:
    """Mean token loss of each full sequence (with `summed`, the summed loss), or with `suffix_only` of each
    candidate's own tokens: the prefixes in one forward pass, then the candidates' own tokens from the prefixes'
    key/value cache (models without tree masks)."""
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
    if summed:
        return total.view(size, n).tolist()
    predicted = (shared + lengths - 1).to(total.device)  # tokens 1..T-1 of each full sequence
    return (total / predicted).view(size, n).tolist()


# A row of the tree pass holds the trees of consecutive entries up to this many distinct nodes (an entry larger than
# that gets a row of its own): the matrix products grow with the number of nodes, attention with the square of a row.
# Measured side by side (benchmarks/README.md, "Generation" and "LLM judge"): 384 for the candidates' sequences
# (16 RUFF instances make two balanced rows; one wide row was slower), 640 for suffixes after long prefixes (the
# judge's prompts: the samples of one context share their prompt's opening in one row).
ROW_NODES = 384
SUFFIX_ROW_NODES = 640
# Rows of the language model head computed at once (each row is a vocabulary's worth of logits).
HEAD_ROWS = 512
# A call's entries that all open with at least this many tokens (the judge's prompts: the task and its options) run
# that opening once, and every row of the tree pass reads it from its key/value cache.
OPENING_MIN_TOKENS = 16


# The openings last run, kept per model and reused by a call that opens with the same tokens (a judge run's chunks all
# open with its template's task and options): the same numbers, since a pass copies an opening's cache before use.
OPENINGS_KEPT = 4
_OPENINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> OrderedDict(tokens -> _Opening)


@dataclass
class _Opening:
    """The tokens every entry of a call opens with, run once: a one-row key/value cache that each tree pass copies
    for its rows (its nodes then sit at positions after the opening and see all of it)."""

    tokens: list[int]
    cache: Any  # transformers' DynamicCache of one row


def _opening(loaded: LoadedModel, prefixes: Sequence[Sequence[int]]) -> _Opening | None:
    """The tokens all `prefixes` open with, run once, when there are at least OPENING_MIN_TOKENS of them; each prefix
    keeps one token of its own or more (its last position predicts its suffixes' first tokens)."""
    import torch

    shortest = min(len(prefix) for prefix in prefixes)
    first = prefixes[0]
    shared = 0
    while shared < shortest - 1 and all(prefix[shared] == first[shared] for prefix in prefixes):
        shared += 1
    if shared < OPENING_MIN_TOKENS:
        return None
    tokens = list(first[:shared])
    key, kept = tuple(tokens), _OPENINGS.setdefault(loaded.model, OrderedDict())
    if key in kept:
        kept.move_to_end(key)
        return kept[key]
    with torch.inference_mode():
        out = loaded.model.base_model(input_ids=torch.tensor([tokens], device=loaded.device), use_cache=True)
    opening = kept[key] = _Opening(tokens, out.past_key_values)
    while len(kept) > OPENINGS_KEPT:
        kept.popitem(last=False)
    return opening


@dataclass
class _Tree:
    """The token sequences of some entries as one trie: node i holds `tokens[i]` after the history of its ancestors."""

    tokens: list[int]
    parents: list[int]  # -1 for a first token
    depths: list[int]
    children: list[dict[int, int]]
    roots: dict[int, int]
    paths: list[list[list[int]]]  # per entry, per sequence: its node indices, first token first
    entries: list[_Prepared]

    @classmethod
    def empty(cls) -> _Tree:
        return cls([], [], [], [], {}, [], [])

    def add(self, entry: _Prepared) -> None:
        paths = []
        for suffix in entry.suffixes:
            path: list[int] = []
            below, parent = self.roots, -1
            for token in [*entry.prefix, *suffix]:
                node = below.get(token)
                if node is None:
                    node = below[token] = len(self.tokens)
                    self.tokens.append(token)
                    self.parents.append(parent)
                    self.depths.append(len(path))
                    self.children.append({})
                path.append(node)
                below, parent = self.children[node], node
            paths.append(path)
        self.paths.append(paths)
        self.entries.append(entry)

    def new_nodes(self, entry: _Prepared) -> int:
        """How many nodes `add(entry)` would add: its sequences' histories that the tree does not hold yet."""
        added = 0
        fresh: dict[int, dict] = {}  # per existing node's children (by id), a trie of the nodes the entry adds there
        for suffix in entry.suffixes:
            below: dict = self.roots
            new: dict | None = None
            for token in [*entry.prefix, *suffix]:
                if new is None:
                    node = below.get(token)
                    if node is not None:
                        below = self.children[node]
                        continue
                    new = fresh.setdefault(id(below), {})
                if token not in new:
                    new[token] = {}
                    added += 1
                new = new[token]
        return added


def _pack(entries: list[_Prepared], limit: int) -> list[_Tree]:
    """The entries in their order as trees of at most `limit` distinct nodes (an entry larger than that alone)."""
    trees: list[_Tree] = []
    tree = _Tree.empty()
    for entry in entries:
        if tree.entries and len(tree.tokens) + tree.new_nodes(entry) > limit:
            trees.append(tree)
            tree = _Tree.empty()
        tree.add(entry)
    trees.append(tree)
    return trees


def _trees(batch: list[_Prepared], budget: int | None = None) -> list[_Tree]:
    """The batch's entries, sorted by their tokens so that entries which open alike sit side by side, as trees of at
    most `budget` (ROW_NODES) distinct nodes (shared prefixes count once: the samples of one context share their
    prompt's opening), as many as that takes and about equally full, since every row is padded to the widest."""
    budget = budget or ROW_NODES
    entries = sorted(batch, key=lambda p: p.prefix)
    trees = _pack(entries, budget)
    if len(trees) > 1:
        limit = -(-sum(len(tree.tokens) for tree in trees) // len(trees))
        while limit < budget:
            balanced = _pack(entries, limit)
            if len(balanced) <= len(trees):
                return balanced
            limit += max(1, limit // 20)
    return trees


def _tree_inputs(loaded: LoadedModel, trees: list[_Tree], *, leaves: bool = False):
    """The model's input for the trees, one row each: the ids and depths of the nodes that are run (those with
    children: a leaf's output would predict nothing; every node with `leaves`), the mask (a node sees its ancestors
    and itself, a padding slot itself only), and per tree each run node's column."""
    import torch

    runs = [[node for node in range(len(tree.tokens)) if leaves or tree.children[node]] for tree in trees]
    width = max(len(run) for run in runs)
    ids = torch.full((len(trees), width), loaded.tokenizer.pad_token_id, dtype=torch.long)
    positions = torch.zeros((len(trees), width), dtype=torch.long)
    allowed = torch.eye(width, dtype=torch.bool).repeat(len(trees), 1, 1)
    columns = []
    for row, (tree, run) in enumerate(zip(trees, runs, strict=True)):
        column_of = {node: column for column, node in enumerate(run)}
        columns.append(column_of)
        ids[row, : len(run)] = torch.tensor([tree.tokens[node] for node in run])
        positions[row, : len(run)] = torch.tensor([tree.depths[node] for node in run])
        for column, node in enumerate(run):  # parents come before their children, so a parent's row is complete
            if tree.parents[node] >= 0:
                allowed[row, column] = allowed[row, column_of[tree.parents[node]]]
                allowed[row, column, column] = True
    return ids, positions, allowed[:, None], columns


def _tree_forward(loaded: LoadedModel, trees: list[_Tree], *, opening: _Opening | None, leaves: bool, use_cache: bool):
    """One pass of the trees through the model's body, one row each (a node attends to its ancestors and itself, at
    its depth's position), after the `opening` when given: every node also sees it, from a copy of its cache, and its
    position counts from the opening's end. Returns the model's output, a row's width and per tree each run node's
    column (`_tree_inputs`)."""
    import copy

    import torch

    model, device = loaded.model, loaded.device
    ids, positions, mask, columns = _tree_inputs(loaded, trees, leaves=leaves)
    mask = mask.to(device)
    cache = None
    if opening is not None:
        cache = copy.deepcopy(opening.cache)
        cache.batch_repeat_interleave(len(trees))
        seen = torch.ones((*mask.shape[:3], len(opening.tokens)), dtype=torch.bool, device=device)
        mask = torch.cat([seen, mask], dim=-1)
        positions = positions + len(opening.tokens)
    if getattr(model.config, "_attn_implementation", "eager") == "eager":  # eager attention adds a float mask
        mask = torch.zeros(mask.shape, dtype=model.dtype, device=device).masked_fill(
            ~mask, torch.finfo(model.dtype).min
        )
    out = model.base_model(
        input_ids=ids.to(device),
        attention_mask=mask,
        position_ids=positions.to(device),
        past_key_values=cache,
        use_cache=use_cache or cache is not None,
    )
    return out, ids.shape[1], columns


def _score_batch_tree(
    loaded: LoadedModel,
    batch: list[_Prepared],
    *,
    suffix_only: bool = False,
    summed: bool = False,
    opening: _Opening | None = None,
) -> list[list[float]]:
    """Mean token loss of each full sequence (with `summed`, the summed loss), or with `suffix_only` of each
    candidate's own tokens, in one forward pass of the batch's trees (one row each; a node attends to its ancestors
    and itself, at its depth's position). With an `opening` (suffix_only only), the entries' prefixes are what
    follows it: every node also sees the opening, from its cache, and its position counts from the opening's end."""
    import torch

    model, device = loaded.model, loaded.device
    trees = _trees(batch, SUFFIX_ROW_NODES if suffix_only else ROW_NODES)
    # With an opening, a full sequence's first own token would be predicted by the opening's last position.
    assert opening is None or suffix_only
    out, width, columns = _tree_forward(loaded, trees, opening=opening, leaves=False, use_cache=False)
    hidden = out.last_hidden_state.reshape(len(trees) * width, -1)

    def counted(entry: _Prepared, path: list[int]) -> list[int]:
        """The nodes of a sequence whose token's loss counts: all but the first, or only the candidate's own."""
        return path[len(entry.prefix) if suffix_only else 1 :]

    # Each counted node once, its loss taken from its parent's output; each parent through the head once.
    needed = [
        (t, node)
        for t, tree in enumerate(trees)
        for node in sorted(
            {
                node
                for entry, paths in zip(tree.entries, tree.paths, strict=True)
                for path in paths
                for node in counted(entry, path)
            }
        )
    ]
    flat = torch.tensor([t * width + columns[t][trees[t].parents[node]] for t, node in needed], device=device)
    tokens = torch.tensor([trees[t].tokens[node] for t, node in needed], device=device)
    parents, rows = torch.unique(flat, return_inverse=True)
    states = hidden[parents]
    nll = torch.empty(len(needed), device=device)
    head = model.get_output_embeddings()
    for start in range(0, len(states), HEAD_ROWS):
        logits = head(states[start : start + HEAD_ROWS]).float()
        here = ((rows >= start) & (rows < start + HEAD_ROWS)).nonzero().squeeze(-1)
        local = rows[here] - start
        nll[here] = torch.logsumexp(logits, dim=-1)[local] - logits[local, tokens[here]]
    node_loss = dict(zip(needed, nll.tolist(), strict=True))

    losses = {}
    for t, tree in enumerate(trees):
        for entry, paths in zip(tree.entries, tree.paths, strict=True):
            own = [counted(entry, path) for path in paths]
            losses[id(entry)] = [
                sum(node_loss[t, node] for node in nodes) / (1 if summed else len(nodes)) for nodes in own
            ]
    return [losses[id(entry)] for entry in batch]


def prefill_tree(loaded: LoadedModel, prompts: Sequence[Sequence[int]], opening: _Opening | None = None):
    """Run the prompts' token ids as trees (what prompts share runs once: the samples of one context share their
    prompt's opening) after the `opening` (from its cache), for sampling to continue from. Returns a key/value cache
    with one row per prompt (its own tokens' keys and values, gathered from its tree's row, left padded), the
    matching attention mask, each prompt's last position and the logits that follow its last token. None where the
    model's cache is not a plain one (a sliding window, say)."""
    import torch
    from transformers.cache_utils import DynamicLayer

    model, device = loaded.model, loaded.device
    entries = [_Prepared(index, list(ids), [[]]) for index, ids in enumerate(prompts)]
    trees = _trees(entries, SUFFIX_ROW_NODES)
    out, _, columns = _tree_forward(loaded, trees, opening=opening, leaves=True, use_cache=True)
    seen = len(opening.tokens) if opening is not None else 0
    cache = out.past_key_values
    if not all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None])):
        return None
    # Each prompt's slots: the opening's, then its path's columns in its tree's row, left padded to the longest.
    placed = {}
    for t, tree in enumerate(trees):
        for entry, (path,) in zip(tree.entries, tree.paths, strict=True):
            placed[entry.index] = (t, [seen + columns[t][node] for node in path])
    width = seen + max(len(slots) for _, slots in placed.values())
    index = torch.zeros((len(prompts), width), dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    rows = torch.tensor([placed[p][0] for p in range(len(prompts))])
    for p in range(len(prompts)):
        slots = [*range(seen), *placed[p][1]]
        index[p, width - len(slots) :] = torch.tensor(slots)
        attention[p, width - len(slots) :] = 1
    rows, index = rows.to(device), index.to(device)
    for layer in cache.layers:  # (trees, heads, slots, dim) -> (prompts, heads, width, dim)
        layer.keys = layer.keys[rows[:, None], :, index].permute(0, 2, 1, 3).contiguous()
        layer.values = layer.values[rows[:, None], :, index].permute(0, 2, 1, 3).contiguous()
    hidden = out.last_hidden_state[rows, index[:, -1] - seen]
    logits = model.get_output_embeddings()(hidden)
    last = attention.sum(-1, keepdim=True) - 1
    return cache, attention.to(device), last.to(device), logits


_TREE_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> whether its tree pass is right
_CHECK_TEXTS = [
    ["Robin said that he would bake.", "Robin said that she would bake.", "Robin said that xe would bake."],
    ["Robin baked bread for him.", "Robin baked bread for them.", "Robin baked bread for xem."],
]


def _tree_agrees(loaded: LoadedModel) -> bool:
    """Whether the tree pass gives this model's losses (once per loaded model, against the cached pass): a model whose
    attention ignores a 4D mask, or whose head does more than a linear map (soft-capped logits, say), does not."""
    import torch

    if loaded.model in _TREE_CHECKED:
        return _TREE_CHECKED[loaded.model]
    if getattr(loaded.model.config, "_attn_implementation", "eager") not in (
        "eager",
        "sdpa",
        shared_attention.ATTENTION,
    ):
        _TREE_CHECKED[loaded.model] = False
        return False
    prepared = _prepare(loaded, _CHECK_TEXTS)
    with torch.inference_mode():
        try:
            tree = _score_batch_tree(loaded, prepared)
        except Exception:  # noqa: BLE001 - any model that cannot take the tree pass is scored the other way
            logger.info("%s: the tree pass failed; scoring from a prefix cache", loaded.name, exc_info=True)
            tree = None
        cached = _score_batch_cached(loaded, prepared)
    tolerance = 1e-3 if loaded.model.dtype == torch.float32 else 3e-2
    agrees = tree is not None and all(
        abs(a - b) <= tolerance
        for row, other in zip(tree, cached, strict=True)
        for a, b in zip(row, other, strict=True)
    )
    if tree is not None and not agrees:
        logger.info("%s: the tree pass differs from the cached pass; scoring from a prefix cache", loaded.name)
    _TREE_CHECKED[loaded.model] = agrees
    return agrees


def _score_batch(
    loaded: LoadedModel, batch: list[_Prepared], *, suffix_only: bool = False, summed: bool = False
) -> list[list[float]]:
    """Mean token loss of each full sequence (with `summed`, the summed loss), or with `suffix_only` of each
    candidate's own tokens."""
    if _tree_agrees(loaded):
        return _score_batch_tree(loaded, batch, suffix_only=suffix_only, summed=summed)
    return _score_batch_cached(loaded, batch, suffix_only=suffix_only, summed=summed)


def _batch_order(loaded: LoadedModel):
    """How entries are sorted before they are cut into batches: by their tokens for the tree pass (entries that open
    alike, such as the judge's prompts for the samples of one context, land in one batch and share nodes), by their
    prefix's length for the cached pass (similar lengths pad less)."""
    if _tree_agrees(loaded):
        return lambda p: p.prefix
    return lambda p: len(p.prefix)


def score_candidates(
    *,
    loaded: LoadedModel,
    candidates: Sequence[Sequence[str]],
    batch_size: int | None = None,
    prob_score: str = DEFAULT_PROB_SCORE,
) -> list[list[float]]:
    """Mean token loss of every candidate text (or summed, `prob_score="sum"`), batched: each entry's candidates (the
    same number for every entry) share their common token prefix, which runs once. Results come back in the order of
    `candidates`."""
    if prob_score not in PROB_SCORES:
        raise ValueError(f"unknown prob_score {prob_score!r}: use one of {', '.join(PROB_SCORES)}")
    import torch

    batch_size = batch_size or loaded.batch_size
    prepared = sorted(_prepare(loaded, candidates), key=_batch_order(loaded))
    losses: list[list[float] | None] = [None] * len(candidates)
    with torch.inference_mode():
        for start in range(0, len(prepared), batch_size):
            batch = prepared[start : start + batch_size]
            for p, result in zip(batch, _score_batch(loaded, batch, summed=prob_score == "sum"), strict=True):
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
    prepared.sort(key=_batch_order(loaded))
    with torch.inference_mode():
        opening = _opening(loaded, [p.prefix for p in prepared]) if _tree_agrees(loaded) else None
        if opening is not None:  # the trees hold what follows the opening
            cut = len(opening.tokens)
            prepared = [_Prepared(p.index, p.prefix[cut:], p.suffixes) for p in prepared]
        for start in range(0, len(prepared), batch_size):
            batch = prepared[start : start + batch_size]
            if opening is not None:
                scored = _score_batch_tree(loaded, batch, suffix_only=True, opening=opening)
            else:
                scored = _score_batch(loaded, batch, suffix_only=True)
            for p, result in zip(batch, scored, strict=True):
                losses[p.index] = result
    return losses


def score_instances(
    *, loaded: LoadedModel, items: Sequence[ScoreItem], batch_size: int | None = None
) -> list[ScoreResult]:
    """Score many instances, batched (items of one scoring rule and one number of candidates together); results
    come back in the order of `items`."""
    results: list[ScoreResult | None] = [None] * len(items)
    groups: dict[tuple[str, int], list[int]] = {}
    texts = [candidate_texts(item) for item in items]
    for index, item in enumerate(items):
        groups.setdefault((item.prob_score, len(texts[index])), []).append(index)
    for (prob_score, _), indices in groups.items():
        losses = score_candidates(
            loaded=loaded,
            candidates=[[text for _, text in texts[i]] for i in indices],
            batch_size=batch_size,
            prob_score=prob_score,
        )
        for i, item_losses in zip(indices, losses, strict=True):
            bases = [base for base, _ in texts[i]]
            results[i] = score_result(items[i], dict(zip(bases, item_losses, strict=True)))
    return cast(list[ScoreResult], results)
