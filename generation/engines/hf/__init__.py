"""The hf engine (generation/engines/__init__.py, `ENGINES`): transformers in the worker's own process.

- `loading`: a registered model loaded once per process and kept (tokenizer, weights, device, batch size);
- `sampling`: batched sampling of a chunk's contexts, seeded, stoppable between decoding steps;
- `scoring`: the prefix-shared probability scorer, which every engine's jobs use;
- `engine`: the sampler the registry names.

This package imports nothing itself, so that naming a module here loads only what that module needs.
"""
