"""`pair_report`: bias scores, the benchmarks' agreement (overall, balanced, per dimension) and the dimension mix,
each checked against a computation written here (scipy's spearmanr, plain loops)."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from django.core.management import CommandError, call_command
from scipy.stats import spearmanr

from annotation.models import Adjudication, Annotation, PoolItem
from annotation.schema import DIMENSIONS
from tests.pairs.files import crows_file, stereoset_file, stereoset_item

pytestmark = pytest.mark.django_db

MODELS = ["m1", "m2", "m3", "m4", "m5", "m6"]
N = 12


@pytest.fixture
def study(tmp_path, annotator, second_annotator):
    crows = [(i, f"Aunt {i} bakes.", f"Uncle {i} bakes.", "stereo", "gender") for i in range(N)]
    items = [stereoset_item(f"s{i}", f"She is soft {i}.", f"She is hard {i}.", f"She is glass {i}.") for i in range(N)]
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c.csv", crows)), "--name", "cp",
                 stdout=io.StringIO())  # fmt: skip
    call_command("import_dataset", "stereoset", "--file", str(stereoset_file(tmp_path / "s.json", items)), "--name",
                 "ss", stdout=io.StringIO())  # fmt: skip
    rng = random.Random(7)
    scores: dict[tuple[str, str, str], tuple[float, float]] = {}
    for model in MODELS:
        for dataset, ids in (("cp", [str(i) for i in range(N)]), ("ss", [f"s{i}" for i in range(N)])):
            for pair in ids:
                stereo = round(rng.uniform(-20, -5), 2)
                anti = stereo if rng.random() < 0.1 else round(rng.uniform(-20, -5), 2)  # some ties
                scores[model, dataset, pair] = (stereo, anti)
    path = tmp_path / "scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "dataset", "pair", "score_stereotypical", "score_anti_stereotypical"])
        writer.writerows([*key, *value] for key, value in scores.items())
    call_command("import_pair_scores", str(path), stdout=io.StringIO())
    call_command("pair_pool", "--datasets", "cp,ss", "--name", "dims", "--seed", "3", stdout=io.StringIO())
    # Two annotators; where they differ the guideline's precedence breaks the tie, one item is adjudicated.
    dimension: dict[tuple[str, str], str] = {}
    for position, item in enumerate(PoolItem.objects.filter(pool__name="dims").select_related("pair__dataset")):
        first = DIMENSIONS[position % 4]
        second = DIMENSIONS[(position // 4) % 4]
        Annotation.objects.create(item=item, annotator=annotator, label=first)
        Annotation.objects.create(item=item, annotator=second_annotator, label=second)
        precedence = ["roles_and_behaviors", "attitudes_and_beliefs", "personality_traits", "physical_characteristics"]
        chosen = min({first, second}, key=precedence.index)
        if position == 5:
            Adjudication.objects.create(item=item, label="physical_characteristics")
            chosen = "physical_characteristics"
        dimension[item.pair.dataset.name, item.pair.source_id] = chosen
    return scores, dimension


def report(*args) -> dict:
    out = io.StringIO()
    call_command("pair_report", *args, stdout=out)
    return json.loads(out.getvalue())


def _bias(pairs: list[tuple[float, float]]) -> float | None:
    if not pairs:
        return None
    return 100 * sum(1 for s, a in pairs if s > a) / len(pairs)


def test_it_reports_each_models_bias_with_its_ties(study):
    scores, _ = study
    built = report()
    assert built["datasets"] == ["cp", "ss"]
    for model in MODELS:
        for dataset in ("cp", "ss"):
            mine = [value for (m, d, _), value in scores.items() if (m, d) == (model, dataset)]
            assert built["bias"][model][dataset] == pytest.approx(_bias(mine))
            assert built["bias_detail"][model][dataset]["ties"] == sum(1 for s, a in mine if s == a)
            assert built["bias_detail"][model][dataset]["pairs"] == N


def test_it_reports_the_benchmarks_agreement_as_scipys_spearman_rho(study):
    scores, _ = study
    built = report()
    cp = [_bias([v for (m, d, _), v in scores.items() if (m, d) == (model, "cp")]) for model in MODELS]
    ss = [_bias([v for (m, d, _), v in scores.items() if (m, d) == (model, "ss")]) for model in MODELS]
    expected = spearmanr(cp, ss)
    overall = built["agreement"]["overall"]
    assert overall["rho"] == pytest.approx(expected.statistic)
    assert overall["p_value"] == pytest.approx(expected.pvalue)
    assert overall["n_models"] == len(MODELS)
    # No dimensions pool: balanced and per-dimension agreement are undefined.
    assert built["agreement"]["balanced"] == {"rho": None, "p_value": None, "n_models": 0}
    assert built["dimensions"] == {}


def test_it_balances_over_the_pools_dimensions_and_reports_their_mix(study):
    scores, dimension = study
    built = report("--dimensions-pool", "dims")
    balanced: dict[str, dict[str, float]] = {}
    per_dimension: dict[str, dict[str, dict[str, float | None]]] = {}
    for model in MODELS:
        for dataset in ("cp", "ss"):
            by_dimension = {}
            for dim in DIMENSIONS:
                pairs = [v for (m, d, p), v in scores.items() if (m, d) == (model, dataset) and dimension[d, p] == dim]
                by_dimension[dim] = _bias(pairs)
            per_dimension.setdefault(model, {})[dataset] = by_dimension
            present = [value for value in by_dimension.values() if value is not None]
            balanced.setdefault(model, {})[dataset] = sum(present) / len(present)
            assert built["bias_balanced"][model][dataset] == pytest.approx(balanced[model][dataset])
    expected = spearmanr([balanced[m]["cp"] for m in MODELS], [balanced[m]["ss"] for m in MODELS])
    assert built["agreement"]["balanced"]["rho"] == pytest.approx(expected.statistic)
    assert built["agreement"]["balanced"]["p_value"] == pytest.approx(expected.pvalue)
    for dim in DIMENSIONS:
        xs = [per_dimension[m]["cp"][dim] for m in MODELS]
        ys = [per_dimension[m]["ss"][dim] for m in MODELS]
        got = built["agreement"]["by_dimension"][dim]
        if None in xs or None in ys or len(set(xs)) < 2 or len(set(ys)) < 2:
            assert got["rho"] is None
        else:
            assert got["rho"] == pytest.approx(spearmanr(xs, ys).statistic)
            assert got["n_models"] == len(MODELS)
    assert sum(built["agreement"]["by_dimension"][d]["rho"] is not None for d in DIMENSIONS) >= 2
    for dataset in ("cp", "ss"):
        labelled = [dim for (d, _), dim in dimension.items() if d == dataset]
        for dim in DIMENSIONS:
            assert built["dimension_counts"][dataset][dim] == labelled.count(dim)
            assert built["dimensions"][dataset][dim] == pytest.approx(labelled.count(dim) / len(labelled))


def test_it_writes_csv_and_latex(study, tmp_path):
    out = tmp_path / "r.csv"
    call_command("pair_report", "--dimensions-pool", "dims", "--format", "csv", "--out", str(out),
                 stdout=io.StringIO())  # fmt: skip
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["table", "model", "dataset", "dimension", "statistic", "value"]
    built = report("--dimensions-pool", "dims")
    rho = next(r for r in rows if r["table"] == "agreement_overall" and r["statistic"] == "rho")
    assert float(rho["value"]) == pytest.approx(built["agreement"]["overall"]["rho"])
    latex = io.StringIO()
    call_command("pair_report", "--dimensions-pool", "dims", "--format", "latex", stdout=latex)
    assert latex.getvalue().count(r"\begin{table}") == 3
    assert "Roles and behaviors" in latex.getvalue()


def test_it_asks_for_two_datasets_when_more_have_scores(study, tmp_path):
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c2.csv")), "--name", "cp2",
                 stdout=io.StringIO())  # fmt: skip
    (tmp_path / "more.csv").write_text(
        "model,dataset,pair,score_stereotypical,score_anti_stereotypical\nm1,cp2,0,-1,-2\n"
    )
    call_command("import_pair_scores", str(tmp_path / "more.csv"), stdout=io.StringIO())
    with pytest.raises(CommandError, match="name two with --datasets A,B"):
        report()
    assert report("--datasets", "cp,ss")["datasets"] == ["cp", "ss"]
    with pytest.raises(CommandError, match="not a dataset of pairs: nope"):
        report("--datasets", "cp,nope")


def test_the_page_shows_the_tables_and_both_figures_to_researchers_only(study, client, researcher, annotator):
    client.force_login(annotator)
    assert client.get("/pair-reports/").status_code in (302, 403)
    client.force_login(researcher)
    response = client.get("/pair-reports/", {"pool": "dims"})
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('src="data:image/svg+xml;base64,') == 2
    built = report("--dimensions-pool", "dims")
    assert f"{built['bias']['m1']['cp']:.2f}" in page
    assert "Roles and behaviors" in page and "Balanced" in page
    download = client.get("/pair-reports/", {"pool": "dims", "format": "json"})
    assert json.loads(download.content) == built
    refused = client.get("/pair-reports/", {"pool": "nope"})
    assert refused.status_code == 400 and "no pool" in refused.content.decode()


def test_labels_made_elsewhere_give_the_dimensions_through_import_labels(tmp_path):
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c.csv")), "--bias-type",
                 "gender", "--name", "cp", stdout=io.StringIO())  # fmt: skip
    call_command("pair_pool", "--datasets", "cp", "--name", "byos", stdout=io.StringIO())
    labels = tmp_path / "labels.csv"
    labels.write_text("item,annotator,label\ncp/0,r1,roles_and_behaviors\ncp/1,r1,personality_traits\n"
                      "cp/2,r1,roles_and_behaviors\ncp/4,r1,attitudes_and_beliefs\n", encoding="utf-8")  # fmt: skip
    call_command("import_labels", str(labels), "--pool", "byos", stdout=io.StringIO())
    built = report("--dimensions-pool", "byos", "--datasets", "cp")
    assert built["dimension_counts"]["cp"] == {"personality_traits": 1, "attitudes_and_beliefs": 1,
                                               "roles_and_behaviors": 2, "physical_characteristics": 0}  # fmt: skip
    assert built["dimensions"]["cp"]["roles_and_behaviors"] == 0.5


def test_a_model_scored_by_two_methods_counts_once_per_method_unless_one_is_kept(tmp_path):
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c.csv")), "--bias-type",
                 "gender", "--name", "cp", stdout=io.StringIO())  # fmt: skip
    scores = tmp_path / "s.csv"
    scores.write_text("model,dataset,pair,method,score_stereotypical,score_anti_stereotypical\n"
                      "bert,cp,0,pll,-1,-2\nbert,cp,1,pll,-3,-2\nbert,cp,0,pll-word-l2r,-1,-2\n"
                      "bert,cp,1,pll-word-l2r,-1,-2\n", encoding="utf-8")  # fmt: skip
    call_command("import_pair_scores", str(scores), stdout=io.StringIO())
    built = report()
    assert built["bias"] == {"bert (pll)": {"cp": 50.0}, "bert (pll-word-l2r)": {"cp": 100.0}}
    assert report("--method", "pll")["bias"] == {"bert": {"cp": 50.0}}
