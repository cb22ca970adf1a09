"""crowd-kit's three aggregation models load without the package `crowdkit.aggregation` (whose `__init__` imports
scikit-learn and NLTK for models the aggregates never fit), and are the very classes that package exports once it is
imported after them (common/crowd_kit.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
from common.crowd_kit import models
first = models()
before = {name: name in sys.modules for name in ("sklearn", "nltk", "crowdkit.aggregation")}
from crowdkit.aggregation import MACE, DawidSkene, MajorityVote, GLAD
import crowdkit.aggregation.classification.mace as mace_module
print(json.dumps({
    "before": before,
    "same": [first.MACE is MACE, first.DawidSkene is DawidSkene, first.MajorityVote is MajorityVote,
             mace_module.MACE is MACE, models().MACE is MACE],
    "glad": GLAD.__name__,
}))
"""


@pytest.mark.slow  # starts a Python process: a fresh one is the only place with nothing imported yet
def test_the_models_load_without_the_package_and_are_the_classes_it_exports():
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["before"] == {"sklearn": False, "nltk": False, "crowdkit.aggregation": False}
    assert figures["same"] == [True] * 5
    assert figures["glad"] == "GLAD"  # the real package, with its other models, imports after them
