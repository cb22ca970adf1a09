"""Studies of any shape (docs/domain.md, "Scales" and "Headline figures"): an ordinal pool whose labels are written as
people wrote them ("Very good", "Excellent!"), three annotators on every item and an API judge, imported from files;
an interval pool of two fixed annotators. Every figure is checked against an independent computation: scikit-learn's
weighted kappa, krippendorff's alpha at the pool's level, Light's kappa as the mean of scikit-learn's pairwise kappas,
and the Alternative Annotator Test with the reference code's `neg_rmse` alignment written out here. Shuffling the
files' rows changes no figure."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
import re
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from annotation.models import INTERVAL, ORDINAL
from tests.analysis.test_verdict_metrics import _reference_by_procedure
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = [pytest.mark.django_db, pytest.mark.filterwarnings("ignore")]

ORDER = ["poor", "fair", "Good", "Very good", "Excellent!"]  # declared order, not alphabetical
ANNOTATORS = ["ann-a", "ann-b", "ann-c"]
ITEMS = 60


def _command(name: str, *args) -> dict:
    out = io.StringIO()
    call_command(name, *map(str, args), stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _ratings(seed: int) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Per item, three annotators' labels near a seeded truth, and the judge's."""
    rng = random.Random(seed)
    people, judge = {}, {}
    for n in range(ITEMS):
        truth = rng.randrange(len(ORDER))
        people[f"item-{n}"] = {
            name: ORDER[min(max(truth + rng.choice([-1, 0, 0, 0, 1]), 0), len(ORDER) - 1)] for name in ANNOTATORS
        }
        judge[f"item-{n}"] = ORDER[min(max(truth + rng.choice([-2, -1, 0, 0, 1]), 0), len(ORDER) - 1)]
    return people, judge


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _build(folder: Path, *, name: str, shuffle: int | None = None, positive_at_least: str = ""):
    people, judge = _ratings(11)
    pool = PoolFactory(name=name, labels=list(ORDER), scale=ORDINAL, positive_at_least=positive_at_least)
    # The items in one order: the pool's order is the bootstrap's (docs/domain.md, "Multi-rater statistics").
    for item in people:
        PoolItemFactory(pool=pool, external_id=item, dataset="study", continuation=f"text of {item}")
    order = list(people)
    if shuffle is not None:
        random.Random(shuffle).shuffle(order)
    rows = [[item, annotator, label] for item in order for annotator, label in people[item].items()]
    if shuffle is not None:
        random.Random(shuffle + 1).shuffle(rows)
    _command(
        "import_labels", _write(folder / f"{name}-people.csv", ["item", "annotator", "label"], rows), "--pool", name
    )
    judged = [[item, judge[item]] for item in order]
    _command(
        "import_judge_labels", _write(folder / f"{name}-judge.csv", ["item", "label"], judged), "--pool", name,
        "--judge", "api-judge",
    )  # fmt: skip
    from analysis.report.build import report_data

    return people, judge, report_data(pool=pool)


@pytest.fixture(scope="module")
def built(module_db, tmp_path_factory):
    folder = tmp_path_factory.mktemp("scales")
    with module_db():
        in_order = _build(folder, name="rows-in-order", positive_at_least="Very good")
        return in_order, _build(folder, name="shuffled", shuffle=5)


def _by_person(people: dict[str, dict[str, str]], names: list[str]) -> dict[str, list[str]]:
    return {name: [people[item][name] for item in sorted(people)] for name in names}


def test_it_gives_each_pair_weighted_kappa_over_the_declared_order(built):
    (people, _, report), _ = built
    pairs = {(r["annotator_1"], r["annotator_2"]): r for r in report["inter_annotator"]["pronoun_label"]["pairwise"]}
    by_person = _by_person(people, ANNOTATORS)
    rank = {label: i for i, label in enumerate(ORDER)}
    assert len(pairs) == 3
    # the pseudonyms keep the file's names as their tail (annotation.services.label_import.imported_username)
    name_of = {username: next(n for n in ANNOTATORS if username.endswith(n)) for pair in pairs for username in pair}
    for (a, b), row in pairs.items():
        left, right = by_person[name_of[a]], by_person[name_of[b]]
        for weights in ("linear", "quadratic"):
            expected = cohen_kappa_score(left, right, labels=ORDER, weights=weights)
            assert row[f"weighted_kappa_{weights}"] == pytest.approx(expected)
        differences = np.array([rank[x] - rank[y] for x, y in zip(left, right, strict=True)], dtype=float)
        assert row["mae"] == pytest.approx(np.abs(differences).mean())
        assert row["rmse"] == pytest.approx(np.sqrt((differences**2).mean()))
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(left, right, labels=ORDER))


def test_the_headline_counts_every_pair_and_gives_lights_kappa_and_ordinal_alpha(built):
    (people, _, report), _ = built
    block = report["inter_annotator"]["pronoun_label"]
    pairs = [x == y for given in people.values() for x, y in itertools.combinations(given.values(), 2)]
    assert (block["n_items"], block["n_pairs"]) == (ITEMS, 3 * ITEMS)
    assert block["raw_agreement"] == pytest.approx(np.mean(pairs))
    by_person = _by_person(people, ANNOTATORS)
    kappas = [
        cohen_kappa_score(by_person[a], by_person[b], labels=ORDER) for a, b in itertools.combinations(ANNOTATORS, 2)
    ]
    assert block["kappa_method"] == "light"
    assert block["cohen_kappa"] == pytest.approx(np.mean(kappas))
    quadratic = [
        cohen_kappa_score(by_person[a], by_person[b], labels=ORDER, weights="quadratic")
        for a, b in itertools.combinations(ANNOTATORS, 2)
    ]
    assert block["weighted_kappa_quadratic"] == pytest.approx(np.mean(quadratic))
    data = np.array([[ORDER.index(label) for label in by_person[name]] for name in ANNOTATORS], dtype=float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=range(len(ORDER)))
    assert block["krippendorff_alpha"] == pytest.approx(expected)
    assert block["krippendorff_alpha_all"] == pytest.approx(expected)
    nominal = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert not math.isclose(expected, nominal)  # the level is not nominal's


def _neg_rmse(x: float, rest: list[float]) -> float:
    """The reference code's `neg_rmse` scoring function: minus the root mean squared error against the others."""
    return -float(np.sqrt(np.mean((np.array(rest) - x) ** 2)))


def _reference_alt_test_neg_rmse(llm: dict, humans: dict, epsilon: float, q: float = 0.05, min_instances: int = 30):
    h_set: dict = {}
    for h, anns in humans.items():
        for i in anns:
            h_set.setdefault(i, []).append(h)
    keep = {i for i in h_set if len(h_set[i]) >= 2 and i in llm}
    p_values, advantage = [], []
    for h in humans:
        instances = [i for i in humans[h] if i in keep]
        if len(instances) < min_instances:
            continue
        llm_wins, human_wins = [], []
        for i in instances:
            rest = [humans[k][i] for k in h_set[i] if k != h]
            human_score, llm_score = _neg_rmse(humans[h][i], rest), _neg_rmse(llm[i], rest)
            llm_wins.append(1 if llm_score >= human_score else 0)
            human_wins.append(1 if human_score >= llm_score else 0)
        d = [x - y for x, y in zip(human_wins, llm_wins, strict=True)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p_values.append(float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue))
        advantage.append(float(np.mean(llm_wins)))
    rejected = _reference_by_procedure(p_values, q)
    return {"omega": len(rejected) / len(p_values), "rho": float(np.mean(advantage)), "p": sorted(p_values)}


def test_the_alt_test_aligns_ordinal_labels_by_negative_rmse_of_their_ranks(built):
    (people, judge, report), _ = built
    (row,) = report["judge_verdict"]
    rank = {label: float(i) for i, label in enumerate(ORDER)}
    humans = {name: {item: rank[people[item][name]] for item in people} for name in ANNOTATORS}
    llm = {item: rank[label] for item, label in judge.items()}
    test = row["alt_test"]
    for epsilon in (0.0, 0.15, 0.3):
        expected = _reference_alt_test_neg_rmse(llm, humans, epsilon)
        assert test["omega_by_epsilon"][f"{epsilon:.2f}"] == pytest.approx(expected["omega"])
        given = sorted(a["p_value"] for a in test["annotators_by_epsilon"][f"{epsilon:.2f}"])
        assert given == pytest.approx(expected["p"])
    assert test["rho"] == pytest.approx(_reference_alt_test_neg_rmse(llm, humans, 0.15)["rho"])


def test_judge_vs_human_compares_with_the_median_and_adds_mae_and_rmse(built):
    (people, judge, report), _ = built
    (row,) = report["judge_verdict"]
    human = next(a for a in row["agreement"] if a["against"] == "human")
    rank = {label: i for i, label in enumerate(ORDER)}
    items = sorted(people)
    median = [sorted(rank[label] for label in people[item].values())[1] for item in items]  # three: the middle
    judged = [rank[judge[item]] for item in items]
    assert human["n"] == ITEMS
    assert human["mae"] == pytest.approx(np.mean(np.abs(np.array(judged) - median)))
    assert human["rmse"] == pytest.approx(np.sqrt(np.mean((np.array(judged) - median) ** 2)))
    expected = cohen_kappa_score(
        [judge[item] for item in items], [ORDER[m] for m in median], labels=ORDER, weights="linear"
    )
    assert human["weighted_kappa_linear"] == pytest.approx(expected)


def _figures(report: dict) -> dict:
    """Every figure of the agreement and the verdict, without the names that differ between two pools."""  # noqa: D401
    inter = {view: {k: v for k, v in block.items() if k != "pairwise"} for view, block in report["inter_annotator"].items()
             if view in ("pronoun_label", "pronoun_binary", "extraneous")}  # fmt: skip
    pairwise = [
        {k: v for k, v in row.items() if k not in ("annotator_1", "annotator_2")}
        for row in report["inter_annotator"]["pronoun_label"]["pairwise"]
    ]
    (verdict,) = report["judge_verdict"]
    test = {k: v for k, v in verdict["alt_test"].items() if k not in ("annotators", "annotators_by_epsilon", "skipped")}
    agreement = [{k: v for k, v in a.items() if k != "against"} for a in verdict["agreement"]]
    return {"inter": inter, "pairwise": pairwise, "alt_test": test, "agreement": agreement}


def test_no_figure_depends_on_the_order_of_the_label_files_rows(built):
    (_, _, report), (_, _, shuffled) = built
    assert _figures(shuffled) == _figures(report)


def test_the_labels_are_kept_as_written(built):
    (_, _, report), _ = built
    assert report["labels"] == ORDER
    assert report["inter_annotator"]["confusion"]["labels"] == ORDER


def test_an_interval_pool_of_two_fixed_annotators_gets_cohens_kappa_between_them_and_interval_alpha(tmp_path):
    values = ["1", "2", "3", "4", "5", "7"]  # unevenly spaced: interval alpha reads the values
    pool = PoolFactory(name="stars", labels=values, scale=INTERVAL)
    rng = random.Random(3)
    rows, a, b = [], [], []
    for n in range(40):
        PoolItemFactory(pool=pool, external_id=f"i{n}", dataset="study", continuation=f"text {n}")
        x, y = rng.choice(values), rng.choice(values)
        a.append(x)
        b.append(y)
        # the two annotators alternate who comes first in the file: nothing may depend on it
        rows += [[f"i{n}", "zed", y], [f"i{n}", "amy", x]] if n % 2 else [[f"i{n}", "amy", x], [f"i{n}", "zed", y]]
    _command("import_labels", _write(tmp_path / "p.csv", ["item", "annotator", "label"], rows), "--pool", "stars")
    from analysis.report.build import report_data

    block = report_data(pool=pool)["inter_annotator"]["pronoun_label"]
    assert block["kappa_method"] == "cohen"
    assert block["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=values))
    assert block["weighted_kappa_linear"] == pytest.approx(cohen_kappa_score(a, b, labels=values, weights="linear"))
    data = np.array([[float(v) for v in a], [float(v) for v in b]])
    assert block["krippendorff_alpha"] == pytest.approx(krippendorff.alpha(data, level_of_measurement="interval"))
    differences = np.array([float(x) - float(y) for x, y in zip(a, b, strict=True)])
    assert block["mae"] == pytest.approx(np.abs(differences).mean())


def test_rates_count_the_labels_at_or_above_the_threshold(built):
    (people, judge, report), _ = built
    assert report["rates_note"] is None
    (row,) = [r for r in report["prediction_powered"] if r["pronoun"] == "all"]
    high = {"Very good", "Excellent!"}
    median = {item: sorted(given.values(), key=ORDER.index)[1] for item, given in people.items()}
    # the items share one context (the factory's): one labelled unit, its Y the share of positive medians
    assert (row["n"], row["N"]) == (1, 0)
    assert row["human_rate"] == pytest.approx(np.mean([median[item] in high for item in people]))
    assert row["judge_rate"] == pytest.approx(np.mean([judge[item] in high for item in people]))


def test_without_a_positive_label_or_threshold_the_rates_tables_say_how_to_get_them(built, page_without_figures):
    from analysis.report.exports.render import report_render

    _, (_, _, report) = built
    assert report["prediction_powered"] == []
    assert "--positive-at-least" in report["rates_note"]
    page = report_render(report=report, fmt="html").body
    assert "--positive LABEL" in page
    latex = report_render(report=report, fmt="latex", table="prediction_powered").body
    assert "filled by no rates" in latex and "--positive-at-least" in latex


def test_labels_as_written_are_escaped_in_latex_and_html(tmp_path):
    from analysis.report.build import report_data
    from analysis.report.exports.render import report_render

    labels = ["50% & up", "<b>bold</b>", "x_y #1"]
    pool = PoolFactory(name="odd", labels=labels)
    rows = []
    for n in range(6):
        PoolItemFactory(pool=pool, external_id=f"o{n}", dataset="study", continuation=f"text {n}")
        rows += [[f"o{n}", "amy", labels[n % 3]], [f"o{n}", "zed", labels[(n // 2) % 3]]]
    _command("import_labels", _write(tmp_path / "p.csv", ["item", "annotator", "label"], rows), "--pool", "odd")
    report = report_data(pool=pool)
    latex = report_render(report=report, fmt="latex").body
    page = report_render(report=report, fmt="html").body
    assert "50% & up" not in latex and "<b>bold</b>" not in latex  # never unescaped
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    assert "50% &amp; up" in page


def test_q_and_min_items_reach_the_alternative_annotator_test(built):
    from analysis.report.build import report_data
    from analysis.selectors.verdict import verdict_parameters
    from annotation.models import Pool

    (people, judge, _), _ = built
    pool = Pool.objects.get(name="rows-in-order")
    (row,) = report_data(pool=pool, verdict=verdict_parameters(q=0.2, min_items=ITEMS + 1))["judge_verdict"]
    assert (row["q"], row["min_items"]) == (0.2, ITEMS + 1)
    # every annotator has ITEMS items: none is tested, and the note says what was needed
    assert row["alt_test"]["tested"] == 0 and row["alt_test"]["omega"] is None
    assert f"{ITEMS + 1} or more items" in row["alt_test"]["note"]
    rank = {label: float(i) for i, label in enumerate(ORDER)}
    humans = {name: {item: rank[people[item][name]] for item in people} for name in ANNOTATORS}
    llm = {item: rank[label] for item, label in judge.items()}
    (lenient,) = report_data(pool=pool, verdict=verdict_parameters(q=0.2))["judge_verdict"]
    assert lenient["alt_test"]["omega"] == pytest.approx(
        _reference_alt_test_neg_rmse(llm, humans, 0.15, q=0.2)["omega"]
    )


def test_lights_kappa_counts_every_pair_of_a_pool_of_more_raters_than_are_listed(
    tmp_path, monkeypatch, page_without_figures
):
    """Eight raters, each item rated by three to six of them: with the listing cap lowered to three raters, the pairs'
    rows are not listed, and Light's kappa is still the mean of scikit-learn's kappas over the pairs sharing at least
    30 items (some pairs share fewer)."""
    from analysis.report.build import report_data
    from analysis.report.exports.render import report_render
    from analysis.selectors import human

    monkeypatch.setattr(human, "PAIRWISE_MAX_RATERS", 3)
    raters = [f"r{n}" for n in range(8)]
    pool = PoolFactory(name="crowd", labels=list(ORDER), scale=ORDINAL)
    rng = random.Random(17)
    given: dict[str, dict[str, str]] = {}
    rows = []
    for n in range(90):
        item = f"c{n}"
        PoolItemFactory(pool=pool, external_id=item, dataset="study", continuation=f"text {n}")
        truth = rng.randrange(len(ORDER))
        chosen = rng.sample(raters[:6] if n % 3 else raters, rng.randint(3, 6))
        given[item] = {r: ORDER[min(max(truth + rng.choice([-1, 0, 0, 1]), 0), 4)] for r in chosen}
        rows += [[item, r, label] for r, label in given[item].items()]
    _command("import_labels", _write(tmp_path / "c.csv", ["item", "annotator", "label"], rows), "--pool", "crowd")
    report = report_data(pool=pool)
    block = report["inter_annotator"]["pronoun_label"]
    expected: dict[str, list[float]] = {"none": [], "linear": [], "quadratic": []}
    below = 0
    for a, b in itertools.combinations(raters, 2):
        shared = [item for item in given if a in given[item] and b in given[item]]
        if len(shared) < 30:
            below += shared != []
            continue
        left, right = [given[i][a] for i in shared], [given[i][b] for i in shared]
        for weights in expected:
            value = cohen_kappa_score(left, right, labels=ORDER, weights=None if weights == "none" else weights)
            expected[weights].append(value)
    assert below and expected["none"]  # some pairs are left out, some are averaged
    assert block["kappa_method"] == "light" and block["light_pairs"] == len(expected["none"])
    assert block["cohen_kappa"] == pytest.approx(np.mean(expected["none"]))
    assert block["weighted_kappa_linear"] == pytest.approx(np.mean(expected["linear"]))
    assert block["weighted_kappa_quadratic"] == pytest.approx(np.mean(expected["quadratic"]))
    assert block["pairwise"] == [] and "8 raters" in block["pairwise_note"]
    page = report_render(report=report, fmt="html").body
    assert "no pairs listed: the pool has 8 raters" in page
    table = report_render(report=report, fmt="csv", table="inter_annotator").body
    assert "no pairs listed" in table


def test_a_column_per_label_is_named_by_its_key_and_titled_as_written(tmp_path, page_without_figures):
    """Labels as a study wrote them: the CSV columns (label counts, the confusion table, the judge's per-class kappa)
    are the labels' derived keys, the page's column titles the labels as written."""
    from analysis.report.build import report_data
    from analysis.report.exports.render import report_render

    labels = ["Not misgendering", "Misgendering!", "n"]  # "n" is the count column's name: its key is n_2
    pool = PoolFactory(name="spelled", labels=labels, positive_label="Misgendering!")
    rng = random.Random(5)
    rows, judged = [], []
    for n in range(40):
        PoolItemFactory(pool=pool, external_id=f"s{n}", dataset="study", continuation=f"text {n}")
        rows += [[f"s{n}", name, rng.choice(labels)] for name in ("amy", "zed")]
        judged.append([f"s{n}", rng.choice(labels)])
    _command("import_labels", _write(tmp_path / "p.csv", ["item", "annotator", "label"], rows), "--pool", "spelled")
    _command(
        "import_judge_labels", _write(tmp_path / "j.csv", ["item", "label"], judged), "--pool", "spelled", "--judge",
        "api-judge",
    )  # fmt: skip
    report = report_data(pool=pool)
    keys = ["not_misgendering", "misgendering", "n_2"]
    (distribution,) = report["label_distribution"]
    assert set(keys) <= set(distribution) and not set(labels[:2]) & set(distribution)
    header = next(csv.reader(io.StringIO(report_render(report=report, fmt="csv", table="label_distribution").body)))
    assert set(keys) <= set(header)
    confusion = next(csv.reader(io.StringIO(report_render(report=report, fmt="csv", table="confusion").body)))
    assert confusion == ["first_annotator", *keys]
    (verdict,) = report["judge_verdict"]
    per_class = ["not_misgendering", "misgendering", "n"]  # after a prefix: no column of its own to take
    assert list(verdict["agreement"][0]["per_class_kappa"]) == per_class
    agreement = next(
        csv.reader(io.StringIO(report_render(report=report, fmt="csv", table="judge_verdict_agreement").body))
    )
    assert {f"per_class_kappa_{key}" for key in per_class} <= set(agreement)
    page = report_render(report=report, fmt="html").body
    assert re.search(r"<th[^>]*>\s*Not misgendering\s*</th>", page)
    assert re.search(r"<th[^>]*>\s*per class kappa Misgendering!\s*</th>", page)


def _normalised(report: dict, pool: str) -> object:
    """The whole report with what names the pool rather than the study taken out: the pool's name (in it and in
    its annotators' pseudonyms), its items' public ids (as the file's item ids) and the database's ids of its items
    and runs, each replaced by its rank."""
    from annotation.models import PoolItem

    text = json.dumps(report, sort_keys=True).replace(pool, "POOL")
    for public_id, external_id in PoolItem.objects.filter(pool__name=pool).values_list("public_id", "external_id"):
        text = text.replace(public_id, f"item:{external_id}")
    data = json.loads(text)
    ids: dict[str, set[int]] = {}

    def collect(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                collect(v, k)
        elif isinstance(value, list):
            for v in value:
                collect(v, key)
        elif key in ID_KEYS and isinstance(value, int):
            ids.setdefault(ID_KEYS[key], set()).add(value)

    def rank(value, key=None):
        if isinstance(value, dict):
            return {k: rank(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [rank(v, key) for v in value]
        if key in ID_KEYS and isinstance(value, int):
            return sorted(ids[ID_KEYS[key]]).index(value)
        return value

    collect(data)
    return rank(data)


ID_KEYS = {"id": "item", "item": "item", "item_id": "item", "run": "run", "judge_run": "run"}


def test_the_whole_report_is_the_same_whatever_the_order_of_the_files_rows(built, tmp_path):
    """The module's study (its rows in order) imported again, its people's and judge's rows in another order: every
    figure and row of the report is the same (docs/domain.md, "Headline figures": nothing depends on the order of
    rows)."""
    (_, _, first), _ = built
    (_, _, second) = _build(tmp_path, name="rows-shuffled", shuffle=9, positive_at_least="Very good")
    assert _normalised(second, "rows-shuffled") == _normalised(first, "rows-in-order")
