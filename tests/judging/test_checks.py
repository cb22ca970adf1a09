"""The checks of a judge (docs/domain.md, "Judges a reviewer trusts"): position consistency, family-swap
invariance and contextual calibration. The variants and figures are worked out here by hand; the check run goes
through the command and its job with a stand-in scorer (fast), and once through the two-layer model against a plain
forward pass (slow)."""

from __future__ import annotations

import json
import math
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from analysis.metrics.checks import calibrated, family_swap_invariance, position_consistency
from analysis.report.build import report_data
from annotation.models import Annotation
from judging import checks
from judging.checks import family_map, family_swap, item_variants, rotations
from judging.models import CheckLabel, CheckRun
from judging.prompts import codebook_of
from judging.scoring import likelihood_verdict
from judging.selectors import prompt_item
from judging.services.judges import judge_add
from tests.conftest import _person
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = pytest.mark.django_db
OPTIONS = {"correct": " correct", "misgendering": " misgendering", "no_pronoun": " no pronoun"}


def test_it_rotates_the_options_cyclically():
    assert [list(order) for order in rotations(OPTIONS)] == [
        ["correct", "misgendering", "no_pronoun"],
        ["misgendering", "no_pronoun", "correct"],
        ["no_pronoun", "correct", "misgendering"],
    ]


def test_it_swaps_every_form_of_the_family_keeping_case():
    mapping = family_map(codebook_of("misgendered"), "xe", "he")
    assert mapping == {"xe": "he", "xem": "him", "xyr": "his", "xyrs": "his", "xemself": "himself"}
    text = "Xe said XE liked xyr bread; it was xyrs, made by xemself for xem. Xenia and axe stay."
    assert family_swap(text, mapping) == (
        "He said HE liked his bread; it was his, made by himself for him. Xenia and axe stay."
    )
    # she's "her" is both accusative and dependent possessive: the first form, in form order, is taken
    assert family_map(codebook_of("misgendered"), "she", "xe")["her"] == "xem"


def test_the_family_swap_variants_declare_the_target_family_and_keep_the_original(judge):
    item = PoolItemFactory(context="Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. ", continuation="Xe sold it.")
    variants = item_variants(kind="family_swap", judge=judge, item=prompt_item(item=item))
    assert [v.key for v in variants] == ["original", "he", "she", "they"]
    he = variants[1].prompt
    assert "he/him/his" in he and "He sold it." in he and "xe" not in he.lower().replace("text", "")


def test_the_contextual_variants_replace_the_generation_by_each_probe(judge):
    item = PoolItemFactory(continuation="Xe sold it.")
    variants = {v.key: v.prompt for v in item_variants(kind="contextual", judge=judge, item=prompt_item(item=item))}
    assert set(variants) == {"original", "n/a", "empty", "mask"}
    assert '"""N/A"""' in variants["n/a"] and '""""""' in variants["empty"] and '"""[MASK]"""' in variants["mask"]


def test_position_consistency_worked_by_hand():
    order = [list(r) for r in rotations(OPTIONS)]
    labels = {
        1: {0: ("correct", order[0]), 1: ("correct", order[1]), 2: ("correct", order[2])},  # positions 1, 3, 2
        2: {0: ("correct", order[0]), 1: ("misgendering", order[1]), 2: ("no_pronoun", order[2])},  # 1, 1, 1
        3: {0: ("correct", order[0])},  # not under every rotation: left out
    }
    figures = position_consistency(labels, m=3)
    assert figures["n"] == 2 and figures["consistency"] == 0.5
    assert figures["by_position"] == pytest.approx({"1": 4 / 6 - 1 / 3, "2": 1 / 6 - 1 / 3, "3": 1 / 6 - 1 / 3})


def test_family_swap_invariance_worked_by_hand():
    figures = family_swap_invariance(
        original={1: "correct", 2: "misgendering"},
        swapped={1: {"he": "correct", "xe": "misgendering"}, 2: {"he": "misgendering", "xe": "misgendering"}},
        human={1: "correct", 2: None},
        families=["he", "xe"],
    )
    assert figures["n"] == 4 and figures["invariance"] == 0.75
    assert figures["by_family"] == {"he": {"n": 1, "accuracy": 1.0}, "xe": {"n": 1, "accuracy": 0.0}}
    assert figures["accuracy_original"] == 1.0  # item 1, the one with a human label


def test_contextual_calibration_divides_by_the_content_free_probabilities():
    p, p_cf = {"a": 0.6, "b": 0.3, "c": 0.1}, {"a": 0.7, "b": 0.2, "c": 0.1}
    ratios = np.array([0.6 / 0.7, 0.3 / 0.2, 0.1 / 0.1])
    assert list(calibrated(p, p_cf, ["a", "b", "c"]).values()) == pytest.approx(list(ratios / ratios.sum()))


# --- a check run through the command, with a stand-in scorer ------------------------------------------------------


def _favours_first(*, judge, mode, prompts, options, **_):
    """A judge that always prefers the option listed first, except on content-free probes, where it prefers
    `misgendering` twice as much as the others."""
    out = []
    for prompt in prompts:
        if '"""N/A"""' in prompt or '""""""' in prompt or '"""[MASK]"""' in prompt:
            scores = [math.log(2.0) if label == "misgendering" else 0.0 for label in options]
        else:
            scores = [1.0 if index == 0 else 0.0 for index in range(len(options))]
        out.append(likelihood_verdict(options=options, scores=scores))
    return out


@pytest.fixture
def checked_pool(judge):
    pool = PoolFactory(name="checked")
    people = [_person(name, "annotator") for name in ("ana", "bo")]
    items = [PoolItemFactory(pool=pool, continuation=f"Xe sold loaf {i}.") for i in range(4)]
    for item in items:
        for person in people:
            Annotation.objects.create(item=item, annotator=person, label="correct")
    return pool, items


def test_a_position_check_runs_through_the_command_and_shows_its_figures(
    checked_pool, judge, monkeypatch, admin_user, client
):
    monkeypatch.setattr(checks, "judge_prompts_score", _favours_first)
    pool, items = checked_pool
    out = StringIO()
    call_command("judge", "--pool", pool.name, "--judge", judge.name, "--check", "position", "--wait", stdout=out)
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    run = CheckRun.objects.get(pk=summary["run"])
    assert run.kind == "position" and summary["labels"] == 4 * 3 == CheckLabel.objects.filter(run=run).count()
    (row,) = report_data(pool=pool)["judge_checks"]
    # the first-listed option every time: no item is consistent, position 1 takes every label
    assert (row["check"], row["run"], row["n"], row["consistency"]) == ("position", run.pk, 4, 0.0)
    assert row["by_position"] == pytest.approx({"1": 2 / 3, "2": -1 / 3, "3": -1 / 3})
    assert not run.pool.judge_runs.exists()  # a check is no rater of the pool
    client.force_login(admin_user)
    jobs_page = client.get("/generation/jobs/").content.decode()
    assert f"check position of judge {judge.name} v1 (likelihood) on pool {pool.name}" in jobs_page
    listed = client.get("/api/generation-jobs/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    (job,) = [row for row in rows if row["id"] == run.job_id]
    assert job["options"]["check"] == "position" and job["options"]["judge"] == judge.name


def test_a_family_swap_and_a_contextual_check_give_their_rows(checked_pool, judge, monkeypatch):
    monkeypatch.setattr(checks, "judge_prompts_score", _favours_first)
    pool, _ = checked_pool
    for check in ("family-swap", "contextual"):
        call_command("judge", "--pool", pool.name, "--judge", judge.name, "--check", check, stdout=StringIO())
    rows = {row["check"]: row for row in report_data(pool=pool)["judge_checks"]}
    swap = rows["family_swap"]
    assert swap["n"] == 4 * 3 and swap["invariance"] == 1.0
    assert swap["by_family"] == {family: {"n": 4, "accuracy": 1.0} for family in ("he", "she", "they")}
    contextual = rows["contextual"]
    # p = softmax(1, 0, 0); p_cf = (1, 2, 1) / 4; every item's human label is correct
    p = np.exp([1.0, 0.0, 0.0]) / np.exp([1.0, 0.0, 0.0]).sum()
    p_cf = np.array([0.25, 0.5, 0.25])
    after = (p / p_cf) / (p / p_cf).sum()
    assert contextual["p_cf"] == pytest.approx(dict(zip(OPTIONS, p_cf, strict=True)))
    assert contextual["brier_before"] == pytest.approx((p[0] - 1) ** 2)
    assert contextual["brier_after"] == pytest.approx((after.max() - 1) ** 2)
    assert contextual["ece_before"] == pytest.approx(1 - p[0]) and contextual["verdict"]["accuracy_after"] == 1.0


def test_bad_checks_are_refused_naming_the_problem(checked_pool, judge, smollm2):
    pool, _ = checked_pool
    sampler = judge_add(name="sampler", model=smollm2, mode="sampling")[0]
    with pytest.raises(CommandError, match="contextual calibration needs the judge's option probabilities"):
        call_command("judge", "--pool", pool.name, "--judge", sampler.name, "--check", "contextual")
    bare = PoolFactory(name="bare")
    PoolItemFactory(pool=bare, pronoun="")
    with pytest.raises(CommandError, match="no item declares a pronoun family"):
        call_command("judge", "--pool", bare.name, "--judge", judge.name, "--check", "family-swap")
    assert not CheckRun.objects.exists()


@pytest.mark.slow
def test_a_check_run_scores_each_variant_as_a_plain_forward_pass_of_the_model(
    judge, two_layer_model, plain_option_scores
):
    from judging.checks import check_labels_write, check_run_create

    pool = PoolFactory(name="scored")
    item = PoolItemFactory(pool=pool, continuation="Xe sold it.")
    run, _ = check_run_create(check="position", pool=pool.name, judge=judge.name, queue=False)
    assert check_labels_write(run=run, item_ids=[item.pk], chunk_index=0, loaded=two_layer_model) == 3
    for label in CheckLabel.objects.filter(run=run):
        order = dict(label.options)
        expected = plain_option_scores(label.prompt, order)
        assert label.scores == pytest.approx(expected, abs=1e-4)
        assert list(order) == list(rotations(judge.option_map)[int(label.variant)])


def test_a_check_runs_labels_export_with_their_variant(checked_pool, judge, monkeypatch, tmp_path):
    monkeypatch.setattr(checks, "judge_prompts_score", _favours_first)
    pool, items = checked_pool
    columns = {"position": "rotation", "family-swap": "target_family", "contextual": "probe"}
    for check, column in columns.items():
        out = StringIO()
        call_command("judge", "--pool", pool.name, "--judge", judge.name, "--check", check, stdout=out)
        run = json.loads(out.getvalue().strip().splitlines()[-1])["run"]
        path = tmp_path / f"{column}.jsonl"
        call_command("export_judge_labels", "--check-run", str(run), "--out", str(path), stderr=StringIO())
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        values = {row[column] for row in rows if row["item"] == items[0].public_id}
        assert values == {"position": {0, 1, 2}, "family-swap": {"xe", "he", "she", "they"},
                          "contextual": {None, "N/A", "", "[MASK]"}}[check]  # fmt: skip
    with pytest.raises(CommandError, match="give --run"):
        call_command("export_judge_labels", "--out", str(tmp_path / "x.csv"))


def test_the_check_figures_draw_the_reports_checks(checked_pool, judge, monkeypatch):
    from analysis import plots

    monkeypatch.setattr(checks, "judge_prompts_score", _favours_first)
    pool, _ = checked_pool
    for check in ("position", "family-swap", "contextual"):
        call_command("judge", "--pool", pool.name, "--judge", judge.name, "--check", check, stdout=StringIO())
    report = report_data(pool=pool)
    for name in ("judge_check_calibration", "judge_check_positions", "judge_check_families"):
        svg = plots.plot_render(report=report, name=name, fmt="svg").decode()
        assert svg.startswith("<?xml") and "smol-judge (check run" in svg


def test_a_pools_check_runs_travel_in_its_study_bundle_and_verify(checked_pool, judge, monkeypatch, tmp_path, capsys):
    from analysis.study.export import study_export

    monkeypatch.setattr(checks, "judge_prompts_score", _favours_first)
    pool, _ = checked_pool
    for check in ("position", "contextual"):
        call_command("judge", "--pool", pool.name, "--judge", judge.name, "--check", check, stdout=StringIO())
    path = tmp_path / "checked.zip"
    with path.open("wb") as out:
        study_export(pool=pool, out=out)
    call_command("verify_study", str(path))
    printed = json.loads(capsys.readouterr().out)
    assert printed["differ"] == [] and printed["equal"] == printed["figures"]
    import zipfile

    names = zipfile.ZipFile(path).namelist()
    assert "check_runs.jsonl" in names and "check_labels.jsonl" in names
