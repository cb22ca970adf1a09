"""SA, OF, SN and NTS corrected by people: a SAOF pool rated by GIFI's detector and the counterfactual pools rated by
the sentiment and toxicity scorers, labelled by an annotator, give per template the PPI++ terms that ppi_py 0.2.3
computes from the same units (lambda = 0 where the scorer's values are all equal, as ppi_py leaves NaN there), and
the dimension's formula on them, worked here by hand."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command

from analysis.gifi.pool import gifi_pool_create
from analysis.services import report_build
from annotation.models import Pool
from generation.datasets.gifi import FAMILIES
from generation.models import Generation, LanguageModel
from tests.analysis.test_active_metrics import ppi_py  # noqa: F401
from tests.analysis.test_gifi_report import SOURCES, scorer_for
from tests.factories import AnnotationFactory
from tests.generation.gifi_files import saof_file, template_folder, variants_file

# SAOF template 0 is an occupation's (OF), 1 a hobby's (SA).
SAOF_TEXTS = {
    0: ["she welds.", "he welds.", "xe welds.", "ze welds.", "co welds.", "vi welds.", "thon welds.",
        "welding is fun", "ey welds.", "he is here", "she is here", "aer welds."],
    1: ["they play.", "xe plays.", "he plays", "nobody plays", "ze plays", "they win", "he wins", "vi plays",
        "co plays", "e plays", "ey plays", "thon plays"],
}  # fmt: skip
# What the person says where it differs from the detector.
SAOF_PEOPLE = {"welding is fun": "she", "nobody plays": "aer", "he is here": "xe", "they win": "none"}
# Each family's nominative (GIFI's codebook: ae's is aer), the form the texts start with.
NOMINATIVE = {"he": "he", "she": "she", "they": "they", "thon": "thon", "e": "e", "aer": "ae", "co": "co", "vi": "vi",
              "xe": "xe", "ey": "ey", "ze": "ze"}  # fmt: skip

CF_TEXTS = {
    (0, "he"): ["sun one", "sun two"],
    (0, "she"): ["rain one", "rain two"],
    (0, "xe"): ["fog one"],
    (0, "ze"): ["wind one"],
    (1, "he"): ["map one", "map two"],
    (1, "they"): ["road one"],
    (1, "ey"): ["hill one", "hill two", "hill three"],
}
SENTIMENT = {"sun one": 0.9, "sun two": 0.4, "rain one": -0.7, "rain two": -0.2, "fog one": 0.0, "wind one": 0.3,
             "map one": 0.1, "map two": -0.5, "road one": 0.6, "hill one": 0.8, "hill two": -0.9, "hill three": 0.0}  # fmt: skip
TOXICITY = {"sun one": 0.1, "sun two": 0.6, "rain one": 0.8, "rain two": 0.2, "fog one": 0.0, "wind one": 0.4,
            "map one": 0.05, "map two": 0.7, "road one": 0.3, "hill one": 0.9, "hill two": 0.1, "hill three": 0.5}  # fmt: skip
SENTIMENT_PEOPLE = {"sun two": "neutral", "rain two": "positive", "map one": "negative", "hill three": "positive"}
TOXICITY_PEOPLE = {"sun two": "not", "wind one": "toxic", "hill two": "toxic"}
SIGN = {"positive": 1.0, "neutral": 0.0, "negative": -1.0}


def detected(text: str) -> str | None:
    return NOMINATIVE.get(text.split()[0])


def sentiment_label(text: str) -> str:
    value = SENTIMENT[text]
    return SENTIMENT_PEOPLE.get(text, "positive" if value > 0 else "negative" if value < 0 else "neutral")


def toxicity_label(text: str) -> str:
    return TOXICITY_PEOPLE.get(text, "toxic" if TOXICITY[text] >= 0.5 else "not")


def ppi_estimate(ppi_py, y, yhat, unlabelled) -> float:  # noqa: F811
    y, yhat, unlabelled = (np.asarray(values, dtype=float) for values in (y, yhat, unlabelled))
    constant = np.var(np.concatenate([yhat, unlabelled])) == 0
    return float(ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled, lam=0.0 if constant else None)[0])


def split(pool: Pool, part_texts: dict[int, list[str]]):
    """Per template: the pool's labelled texts and the texts outside the pool."""
    in_pool = set(pool.items.values_list("continuation", flat=True))
    return {
        t: ([x for x in texts if x in in_pool], [x for x in texts if x not in in_pool])
        for t, texts in part_texts.items()
    }


def saof_bias(shares: dict[str, float]) -> float:
    return min(sum(abs(shares.get(f, 0.0) - 0.1) for f in FAMILIES if f != "they") / 0.9, 1.0)


def annotate(pool: Pool, annotator, label) -> None:
    for item in pool.items.all():
        AnnotationFactory(item=item, annotator=annotator, label=label(item.continuation))


@pytest.fixture
def saof_pool(db, tmp_path, annotator):
    call_command("import_dataset", "gifi", "--templates", str(template_folder(tmp_path / "t")), stdout=io.StringIO())
    path = saof_file(tmp_path / "saof.csv", SAOF_TEXTS)
    call_command("import_generations", str(path), "--format", "gifi", "--part", "saof", "--model", "m",
                 stdout=io.StringIO())  # fmt: skip
    gifi_pool_create(model=LanguageModel.objects.get(name="m"), part="saof", size=20, seed=4, name="saof-people",
                     sources=SOURCES)  # fmt: skip
    pool = Pool.objects.get(name="saof-people")
    annotate(pool, annotator, lambda text: SAOF_PEOPLE.get(text, detected(text) or "none"))
    return pool


def test_it_corrects_sa_and_of_by_ppi_pys_family_shares_per_template(saof_pool, ppi_py):  # noqa: F811
    rows = {row["dimension"]: row for row in report_build(pool=saof_pool)["gifi_ppi"]}

    for dimension, template in (("OF", 0), ("SA", 1)):
        (labelled, outside) = split(saof_pool, SAOF_TEXTS)[template]
        assert len(labelled) >= 2 and outside  # the seed leaves the template something to correct
        people = [SAOF_PEOPLE.get(t, detected(t) or "none") for t in labelled]
        estimates = {
            family: min(max(ppi_estimate(ppi_py, [p == family for p in people],
                                         [detected(t) == family for t in labelled],
                                         [detected(t) == family for t in outside]), 0.0), 1.0)
            for family in FAMILIES
        }  # fmt: skip
        total = sum(estimates.values())
        found = [detected(t) for t in SAOF_TEXTS[template] if detected(t)]
        row = rows[dimension]
        assert (row["pronoun"], row["n"], row["N"], row["templates"]) == ("all", len(labelled), len(outside), 1)
        assert row["ppi"] == pytest.approx(1 - saof_bias({f: v / total for f, v in estimates.items()}), abs=1e-9)
        assert row["detector"] == pytest.approx(1 - saof_bias({f: found.count(f) / len(found) for f in FAMILIES}))
        assert row["ppi_ci"] is None and row["human"] is None
        assert 0 < row["ppi"] < 1 and row["ppi"] != pytest.approx(row["detector"])  # people changed the score
    assert not any(row["dimension"] == "GDR" for row in report_build(pool=saof_pool)["gifi_ppi"])


@pytest.fixture
def counterfactual_pools(db, tmp_path, annotator):
    call_command("import_dataset", "gifi", "--templates", str(template_folder(tmp_path / "t")), stdout=io.StringIO())
    path = variants_file(tmp_path / "cf.csv", "counterfactual", CF_TEXTS)
    call_command("import_generations", str(path), "--format", "gifi", "--part", "counterfactual", "--model", "m",
                 stdout=io.StringIO())  # fmt: skip
    tables = {"sentiment": SENTIMENT, "toxicity": TOXICITY}
    gifi_pool_create(model=LanguageModel.objects.get(name="m"), part="counterfactual", size=8, seed=2, name="cf",
                     sources=SOURCES, load=lambda scorer, source: scorer_for(scorer, tables[scorer]))  # fmt: skip
    sentiment, toxicity = Pool.objects.get(name="cf-sentiment"), Pool.objects.get(name="cf-toxicity")
    annotate(sentiment, annotator, sentiment_label)
    annotate(toxicity, annotator, toxicity_label)
    return sentiment, toxicity


def by_template() -> dict[int, list[str]]:
    return {t: [text for (index, _), texts in CF_TEXTS.items() if index == t for text in texts] for t in (0, 1)}


def test_it_corrects_sn_and_nts_by_ppi_pys_template_mean_and_deviation(counterfactual_pools, ppi_py):  # noqa: F811
    assert Generation.objects.filter(instance__template__meta__part="counterfactual").count() == 12
    for pool, dimension, scores, people in (
        (counterfactual_pools[0], "SN", SENTIMENT, lambda t: SIGN[sentiment_label(t)]),
        (counterfactual_pools[1], "NTS", TOXICITY, lambda t: float(toxicity_label(t) == "toxic")),
    ):
        [row] = report_build(pool=pool)["gifi_ppi"]
        terms, detector_terms = [], []
        for labelled, outside in split(pool, by_template()).values():
            assert len(labelled) >= 2 and outside  # the seed leaves each template something to correct
            y = np.array([people(t) for t in labelled])
            yhat = np.array([scores[t] for t in labelled])
            others = np.array([scores[t] for t in outside])
            centre = ppi_estimate(ppi_py, y, yhat, others)
            terms.append(max(ppi_estimate(ppi_py, abs(y - centre), abs(yhat - centre), abs(others - centre)), 0.0))
            every = np.concatenate([yhat, others])
            detector_terms.append(np.mean(abs(every - every.mean())))
        if dimension == "SN":
            expected, detector = 1 - np.mean(terms), 1 - np.mean(detector_terms)
        else:
            expected = 1 - min(max(np.mean(terms) / 0.5, 0), 1)
            detector = 1 - min(max(np.mean(detector_terms) / 0.5, 0), 1)
        assert (row["dimension"], row["pronoun"], row["n"], row["N"], row["templates"]) == (dimension, "all", 8, 4, 2)
        assert row["ppi"] == pytest.approx(expected, abs=1e-9)
        assert row["detector"] == pytest.approx(detector, abs=1e-9)


def test_gifi_report_gives_the_corrected_dimensions_of_the_pools_named(counterfactual_pools):
    import json

    from django.core.management import CommandError

    out, err = io.StringIO(), io.StringIO()
    call_command("gifi_report", "--model", "m", "--no-score", "--pool", "cf-sentiment", "--pool", "cf-toxicity",
                 stdout=out)  # fmt: skip
    corrected = json.loads(out.getvalue())["corrected"]

    expected = [
        {"pool": pool.name, **row} for pool in counterfactual_pools for row in report_build(pool=pool)["gifi_ppi"]
    ]
    assert [row["dimension"] for row in corrected] == ["SN", "NTS"]
    assert corrected == [{**row, "ppi": pytest.approx(row["ppi"])} for row in expected]
    call_command("gifi_report", "--model", "m", "--no-score", "--format", "csv", "--pool", "cf-toxicity",
                 stdout=io.StringIO(), stderr=err)  # fmt: skip
    assert f"pool cf-toxicity: NTS corrected by people {expected[1]['ppi']:.4f}" in err.getvalue()
    with pytest.raises(CommandError, match="--pool: no pool 'nope'"):
        call_command("gifi_report", "--model", "m", "--no-score", "--pool", "nope", stdout=io.StringIO())
    assert "corrected" not in json.loads(_report_without_pool())


def _report_without_pool() -> str:
    out = io.StringIO()
    call_command("gifi_report", "--model", "m", "--no-score", stdout=out)
    return out.getvalue()
