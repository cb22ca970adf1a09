"""The researcher's guide's worked example, "Bring your own study", for labels: demo/byos/'s people's labels and API
judge's labels import as the guide shows, again without change, a contradiction is refused by line, and the judge's
agreement with the people is scikit-learn's and irrCAC's over the pool's two labels."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score

from tests.conftest import DEMO

BYOS = DEMO / "byos"
pytestmark = pytest.mark.django_db


def _run(*args) -> list[str]:
    out = io.StringIO()
    call_command(*map(str, args), stdout=out)
    return out.getvalue().strip().splitlines()


def test_the_guides_label_example(tmp_path):
    from analysis.report.build import report_data
    from annotation.models import Pool

    _run("import_generations", BYOS / "generations.csv", BYOS / "generations.jsonl", "--pool", "byos", "--labels",
         "misgendering,correct", "--codebook", BYOS / "codebook.csv")  # fmt: skip
    first = _run("import_labels", BYOS / "labels.csv", "--pool", "byos")
    assert first[0] == "pool byos: 45 labels by 3 annotators: 45 new, 0 replaced, 0 completed, 0 already there"
    again = _run("import_labels", BYOS / "labels.csv", "--pool", "byos")
    assert json.loads(again[-1])["unchanged"] == 45

    edited = tmp_path / "labels-edited.csv"
    text = (BYOS / "labels.csv").read_text(encoding="utf-8")
    edited.write_text(text.replace("n05,ana-1,correct", "n05,ana-1,misgendering"), encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        _run("import_labels", edited, "--pool", "byos")
    assert (
        "labels-edited.csv:6: item 'n05', annotator 'ana-1': stored label 'correct', the file says 'misgendering' "
        "(import with replace to overwrite)" in str(refused.value)
    )

    judged = _run(
        "import_judge_labels", BYOS / "judge.csv", "--pool", "byos", "--judge", "api-judge", "--model-id", "gpt-4o",
        "--description", "GPT-4o via the API, temperature 0", "--prompt-file", BYOS / "judge-prompt.txt",
    )  # fmt: skip
    run = json.loads(judged[-1])["run"]
    assert judged[0] == f"run {run}: api-judge v1 on pool byos, 15 labels (15 with probabilities, 15 with a confidence)"
    assert json.loads(judged[-1]) == {"run": run, "labels": 15}

    with (BYOS / "labels.csv").open(encoding="utf-8") as handle:
        people: dict[str, list[str]] = {}
        for row in csv.DictReader(handle):
            people.setdefault(row["item"], []).append(row["label"])
    with (BYOS / "judge.csv").open(encoding="utf-8") as handle:
        judge = {row["item"]: row["label"] for row in csv.DictReader(handle)}
    human = {item: Counter(labels).most_common(1)[0][0] for item, labels in people.items()}  # 3 raters, 2 labels
    items = sorted(human)
    report = report_data(pool=Pool.objects.get(name="byos"))
    (row,) = [a for a in report["judge_verdict"][0]["agreement"] if a["against"] == "human"]
    labels = ["misgendering", "correct"]
    a, b = [judge[i] for i in items], [human[i] for i in items]
    assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=labels))
    ac1 = CAC(pd.DataFrame({"judge": a, "human": b}), categories=labels).gwet()["est"]["coefficient_value"]
    assert row["gwet_ac1"] == pytest.approx(float(ac1), abs=1e-5)
