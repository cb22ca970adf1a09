"""The hf engine (generation/engines/__init__.py, `ENGINES`): transformers in the worker's own process.

- `loading`: a registered model loaded once per process and kept (tokenizer, weights, device, batch size);
- `sampling`: batched sampling of a chunk's contexts, seeded, stoppable between decoding steps;
- `scoring`: the prefix-shared probability scorer, which every engine's jobs use;
- `engine`: the sampler the registry names.

This package imports none of its modules itself, so that naming a module here loads only what that module needs; it
only sets MKL's reproducibility (below).
"""

import os

# Intel's MKL (torch's BLAS on x86) picks a matrix product's kernel by the number of rows, and on some CPUs (seen on a
# Xeon with AVX-512 and AMX) a row's sums then round differently in a product of 12 rows than in one of 39. Strict
# conditional numerical reproducibility makes every row's result independent of the rows beside it, with no loss
# measured through the generation bench (benchmarks/README.md): batched scoring and grouped decoding give each row the
# bits of its own call, and grouped decoding passes its check there too (`shared_attention.grouped_ready`). MKL reads
# it at its first product, so it is set here, before any module of this engine runs one; a value set by the user is
# kept.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")
