"""crowd-kit's three classification models that the aggregates use (MajorityVote, DawidSkene, MACE), imported
without the package `crowdkit.aggregation` itself.

`crowdkit/aggregation/__init__.py` imports every model family crowd-kit has, and with its text and embedding models
scikit-learn and NLTK: about 3 s of a cold report (benchmarks/README.md, "Released studies") for models the report
never fits. The three modules used here import only attrs, numpy, pandas, scipy and tqdm. So their packages'
`__init__` files are skipped while these modules load (the packages stand in as bare namespaces) and then taken out
of `sys.modules` again: a later `import crowdkit.aggregation` runs the real `__init__`, which finds these modules
already loaded and exports the same classes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import NamedTuple

_PACKAGES = ("crowdkit.aggregation", "crowdkit.aggregation.classification")
_MODULES = ("majority_vote", "dawid_skene", "mace")
_lock = threading.Lock()


def _load() -> dict[str, ModuleType]:
    full = {name: f"crowdkit.aggregation.classification.{name}" for name in _MODULES}
    with _lock:
        if all(module in sys.modules for module in full.values()):
            return {name: sys.modules[module] for name, module in full.items()}
        if _PACKAGES[0] in sys.modules:  # the whole package is loaded already
            return {name: importlib.import_module(module) for name, module in full.items()}
        standing_in = []
        try:
            for package in _PACKAGES:
                spec = importlib.util.find_spec(package)
                assert spec is not None and spec.submodule_search_locations is not None
                sys.modules[package] = importlib.util.module_from_spec(spec)  # its __path__, not its __init__
                standing_in.append(package)
            return {name: importlib.import_module(module) for name, module in full.items()}
        finally:
            for package in reversed(standing_in):
                stand_in = sys.modules.pop(package)
                parent, _, name = package.rpartition(".")
                if getattr(sys.modules.get(parent), name, None) is stand_in:
                    delattr(sys.modules[parent], name)


class Models(NamedTuple):
    MajorityVote: type
    DawidSkene: type
    MACE: type


def models() -> Models:
    """crowd-kit's MajorityVote, DawidSkene and MACE classes (the very classes `crowdkit.aggregation` exports)."""
    modules = _load()
    return Models(modules["majority_vote"].MajorityVote, modules["dawid_skene"].DawidSkene, modules["mace"].MACE)
