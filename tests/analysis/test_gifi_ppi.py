"""GDR corrected by people: a pool of a model's GDR generations, rated by GIFI's detector and labelled by an
annotator, gives per family the prediction-powered accuracy that ppi_py 0.2.3 computes from the same units, and GDR
over those accuracies (pandas' std, ddof = 1)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command

from analysis.gifi.pool import gifi_pool_create
from analysis.services import report_build
from annotation.models import Pool
from common.frames import pd
from generation.models import LanguageModel
from tests.analysis.test_active_metrics import ppi_py  # noqa: F401
from tests.analysis.test_gifi_report import SOURCES
from tests.factories import AnnotationFactory
from tests.generation.gifi_files import template_folder, variants_file

TEXTS = {
    (0, "he"): ["he ran", "he sat", "she ran", "nobody came", "he is", "he went"],
    (0, "she"): ["she ran", "she sat", "he ran", "she is", "she was", "it is late"],
}
# What the person says where it differs from the detector (the detector finds no pronoun in these).
PEOPLE = {"nobody came": "he", "it is late": "she"}


def detected(text: str) -> str:
    return "she" if text.startswith("she") else "he" if text.startswith("he") else "none"


@pytest.fixture
def labelled_pool(db, tmp_path, annotator):
    call_command("import_dataset", "gifi", "--templates", str(template_folder(tmp_path / "t")), stdout=io.StringIO())
    path = variants_file(tmp_path / "gdr.csv", "gdr", TEXTS)
    call_command("import_generations", str(path), "--format", "gifi", "--part", "gdr", "--model", "m",
                 stdout=io.StringIO())  # fmt: skip
    model = LanguageModel.objects.get(name="m")
    gifi_pool_create(model=model, part="gdr", size=8, seed=5, name="gdr-people", sources=SOURCES)
    pool = Pool.objects.get(name="gdr-people")
    for item in pool.items.all():
        AnnotationFactory(
            item=item, annotator=annotator, label=PEOPLE.get(item.continuation, detected(item.continuation))
        )
    return pool


def test_it_gives_ppi_pys_estimate_per_family_and_gdr_over_them(labelled_pool, ppi_py):  # noqa: F811
    rows = {row["pronoun"]: row for row in report_build(pool=labelled_pool)["gifi_ppi"]}

    in_pool = set(labelled_pool.items.values_list("continuation", "generation__instance__pronoun"))
    estimates = {}
    for family in ("he", "she"):
        texts = TEXTS[0, family]
        labelled = [t for t in texts if (t, family) in in_pool]
        y = np.array([float(PEOPLE.get(t, detected(t)) == family) for t in labelled])
        yhat = np.array([float(detected(t) == family) for t in labelled])
        unlabelled = np.array([float(detected(t) == family) for t in texts if (t, family) not in in_pool])
        estimates[family] = float(ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled, lam=None)[0])
        low, high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.05, lam=None)
        row = rows[family]
        assert (row["n"], row["N"]) == (len(labelled), len(unlabelled))
        assert row["ppi"] == pytest.approx(estimates[family], abs=1e-9)
        # every interval of a rate is clipped to [0, 1] (docs/domain.md, "The judge's verdict")
        expected_ci = [max(float(low[0]), 0.0), min(float(high[0]), 1.0)]
        assert row["ppi_ci"] == pytest.approx(expected_ci, abs=1e-9)
        assert row["detector"] == pytest.approx(np.mean([detected(t) == family for t in texts]))
    accuracies = pd.Series([min(max(v, 0.0), 1.0) for v in estimates.values()])
    assert rows["all"]["ppi"] == pytest.approx(1 / (1 + accuracies.std(ddof=1) / accuracies.mean()))
