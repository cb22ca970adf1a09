"""The worked example of the researcher's guide, "Bring your own study": demo/byos/'s hand-written generations import
as the guide says, with the verdicts worked out by hand from docs/domain.md's rules."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Pool, PoolItem
from tests.conftest import DEMO

BYOS = DEMO / "byos"
# By hand: the first form of the codebook in each generation decides; `em` and `eir` are e's and ey's alike; "Ey'll"
# and "Xe’d" count as ey and xe; "She'd" is split by the tokenizer; an unstated pronoun gets no verdict.
EXPECTED = {
    "n01": True, "n02": False, "n03": True, "n04": True, "n05": True, "n06": False, "n07": True, "n08": True,
    "n09": True, "n10": False, "n11": None, "n12": None, "j01": True, "j02": False, "j03": None,
}  # fmt: skip


@pytest.mark.django_db
def test_the_guides_example_imports_with_the_verdicts_worked_by_hand(tmp_path):
    out = io.StringIO()
    call_command(
        "import_generations", str(BYOS / "generations.csv"), str(BYOS / "generations.jsonl"), "--pool", "byos",
        "--labels", "misgendering,correct", "--codebook", str(BYOS / "codebook.csv"), "--json", stdout=out,
    )  # fmt: skip
    call_command("export_pool", "--pool", "byos", "--out", str(tmp_path / "items.csv"), stdout=io.StringIO())

    assert json.loads(out.getvalue().splitlines()[-1]) == {"pool": "byos", "items": 15, "heuristic_mismatches": 0}
    assert dict(PoolItem.objects.values_list("external_id", "heuristic_correct")) == EXPECTED
    assert Pool.objects.get(name="byos").labels == ["misgendering", "correct"]
    assert len((tmp_path / "items.csv").read_text(encoding="utf-8").splitlines()) == 16


@pytest.mark.django_db
def test_the_guides_imported_study_travels_in_a_bundle_that_verifies(tmp_path):
    """A free-text pool (a pronoun left unstated, codebook families such as ey), its people's labels and its API
    judge's labels export as a study bundle that verifies on an empty database and imports as a copy."""
    call_command(
        "import_generations", str(BYOS / "generations.csv"), str(BYOS / "generations.jsonl"), "--pool", "byos",
        "--labels", "misgendering,correct", "--codebook", str(BYOS / "codebook.csv"), stdout=io.StringIO(),
    )  # fmt: skip
    call_command("import_labels", str(BYOS / "labels.csv"), "--pool", "byos", stdout=io.StringIO())
    call_command(
        "import_judge_labels", str(BYOS / "judge.csv"), "--pool", "byos", "--judge", "api-judge",
        "--model-id", "gpt-4o", stdout=io.StringIO(),
    )  # fmt: skip
    bundle = tmp_path / "byos.zip"
    call_command("export_study", "--pool", "byos", "--out", str(bundle), stdout=io.StringIO())

    out = io.StringIO()
    call_command("verify_study", str(bundle), stdout=out)
    verdict = json.loads(out.getvalue().splitlines()[-1])
    assert verdict["differ"] == [] and verdict["equal"] == verdict["figures"] > 100
    call_command("import_study", str(bundle), "--pool", "byos-copy", stdout=io.StringIO())
    copy = Pool.objects.get(name="byos-copy")
    assert sorted(copy.items.values_list("pronoun", flat=True)) == sorted(
        Pool.objects.get(name="byos").items.values_list("pronoun", flat=True)
    )
    assert copy.labels == ["misgendering", "correct"]
