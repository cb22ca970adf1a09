"""Dataset kinds: how a template set is read, and what the rest of Concord needs to know about its datasets.

`DATASET_KINDS` (generation/datasets/registry.py) is the one list of them, name -> `DatasetKindSpec`
(generation/datasets/base.py); `dataset_kind(name)` looks one up by its name or by the kind a Dataset is stored as.
`import_dataset` takes its KIND choices from it and calls the spec's entry; the job parameters read a kind's
`settings`; the chunk runner, Prob-TANGO and the job pages read `scores_per_generation`; scoring, the stored
codebook, referents, the generations import's heuristic and judges read its `codebook` (labels.py for a dataset
label's); the generations import reads the seed's masks from `seed_masks`; `export_instances` (export.py) writes
its `export_columns`. No caller branches on a kind's name. Only code that is about one kind by nature imports that
kind's module: Prob-TANGO's rewriting and the TANGO report (TANGO's codebook and stored kind), and the demo (its
datasets); tests/generation/test_dataset_kinds.py counts the kind names left outside this package (at most 3).

- misgendered.py: MISGENDERED, templates x families x names drawn as the seed draws them;
- ruff.py: RUFF, one row per sentence and declared pronoun;
- ruff_distractors.py: RUFF with distractors (stored as RUFF), with distractor_sources.py and distractor_rows.py;
- tango.py: TANGO's misgendering subset, continued whole and scored by Prob-TANGO;
- templates.py: your own codebook and templates, with templates_files.py;
- pairs.py: the stereotype pair benchmarks CrowS-Pairs and StereoSet, stored as `Pair` rows (`spec.pairs`).
- gifi.py: GIFI's four template files and its 11-family codebook and detector (its released generation files:
  generation/services/gifi_generations.py).

They share files.py (reading, errors as file:line, the import signature) and writing.py (one transaction per
import, idempotent). This package's __init__ imports nothing, so that generation/models can take `DatasetKind` from
base.py.

A new kind is one module here declaring its `DatasetKindSpec`, and one line in registry.py. A kind whose datasets
are stored under a `Dataset.kind` of their own also adds that value to `DatasetKind` (base.py), with the migration
of the field's choices that the database needs.
"""
