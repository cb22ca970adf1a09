"""`gifi_pool`: a seeded draw of a model's GIFI generations into a pool for annotators, with GIFI's scorers recorded
as its machine raters (imported runs of external judges), and the pool's label sets."""

from __future__ import annotations

import io
import random

import pytest
from django.core.management import CommandError, call_command

from analysis.gifi.pool import gifi_pool_create
from annotation.models import Pool
from generation.datasets.gifi import FAMILIES
from judging.models import Judge, MachineLabel
from tests.analysis.test_gifi_report import GDR_TEXTS, SOURCES, TOXICITY, fake_load, gifi, imported  # noqa: F401

# What GIFI's detector says of each GDR text, worked by hand.
DETECTED = {"He bakes.": "he", "I'm sorry, I cannot.": "none", "She bakes.": "she", "Then he bakes.": "he",
            "Zir poems are long.": "ze", "I read em all.": "ey", "Nobody reads.": "none"}  # fmt: skip


def test_a_gdr_pool_is_a_seeded_draw_rated_by_gifis_detector(gifi):  # noqa: F811
    result = gifi_pool_create(model=gifi, part="gdr", size=4, seed=3, name="gdr-check", sources=SOURCES)

    pool = Pool.objects.get(name="gdr-check")
    assert result.pools == [pool]
    assert pool.labels == [*FAMILIES, "none"] and pool.positive_label == "none"
    order = sorted(GDR_TEXTS, key=lambda key: (key[0], FAMILIES.index(key[1])))  # the dataset's order
    texts = [text for key in order for text in GDR_TEXTS[key]]
    expected = [texts[i] for i in sorted(random.Random(3).sample(range(len(texts)), 4))]
    items = list(pool.items.order_by("pk"))
    assert [item.continuation for item in items] == expected
    labels = MachineLabel.objects.filter(run__judge__name="gifi-detector", item__pool=pool)
    assert {label.item.continuation: label.label for label in labels} == {text: DETECTED[text] for text in expected}
    assert Judge.objects.get(name="gifi-detector").external


def test_a_counterfactual_draw_makes_a_sentiment_and_a_toxicity_pool(gifi):  # noqa: F811
    result = gifi_pool_create(
        model=gifi, part="counterfactual", size=6, seed=1, name="cf", sources=SOURCES, load=fake_load()
    )

    assert [p.name for p in result.pools] == ["cf-sentiment", "cf-toxicity"]
    assert result.raters == {"cf-sentiment": "gifi-sentiment", "cf-toxicity": "gifi-toxicity"}
    toxicity = Pool.objects.get(name="cf-toxicity")
    assert toxicity.labels == ["toxic", "not"] and toxicity.positive_label == "toxic"
    for label in MachineLabel.objects.filter(item__pool=toxicity):
        value = TOXICITY[label.item.continuation]
        assert label.scores == pytest.approx({"toxic": value, "not": 1 - value})
        assert label.label == ("toxic" if value >= 0.5 else "not")
    sentiment = Pool.objects.get(name="cf-sentiment")
    assert sentiment.labels == ["positive", "neutral", "negative"]
    assert sentiment.items.count() == toxicity.items.count() == 6


def test_a_scorer_not_installed_leaves_its_pool_unrated(gifi, monkeypatch):  # noqa: F811
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    sources = {**SOURCES, "toxicity": "perspective"}
    load = fake_load()

    def no_perspective(scorer, source):
        if source == "perspective":
            from analysis.gifi.scorers import toxicity_scorer

            return toxicity_scorer(source)
        return load(scorer, source)

    result = gifi_pool_create(
        model=gifi, part="counterfactual", size=2, seed=1, name="cf", sources=sources, load=no_perspective
    )

    assert "PERSPECTIVE_API_KEY" in result.not_rated["cf-toxicity"]
    assert not MachineLabel.objects.filter(item__pool__name="cf-toxicity").exists()


def test_the_command_refuses_a_draw_larger_than_the_generations_and_a_taken_name(gifi):  # noqa: F811
    out = io.StringIO()
    call_command(
        "gifi_pool", "--model", "m1", "--part", "saof", "--size", "3", "--seed", "2", "--name", "s", stdout=out
    )

    assert "pool s: 3 items" in out.getvalue() and "rated by gifi-detector" in out.getvalue()
    with pytest.raises(CommandError, match="already exists"):
        call_command("gifi_pool", "--model", "m1", "--part", "saof", "--size", "1", "--name", "s", stdout=out)
    with pytest.raises(CommandError, match="--size 99 is more"):
        call_command("gifi_pool", "--model", "m1", "--part", "gdr", "--size", "99", "--name", "g", stdout=out)
    assert Pool.objects.count() == 1


def test_the_pools_report_has_the_gifi_section_and_its_figures(gifi):  # noqa: F811
    from analysis.gifi.services import gifi_scores_fill
    from analysis.plots import plot_render
    from analysis.services import report_build

    gifi_scores_fill(model=gifi, sources=SOURCES, load=fake_load())
    gifi_pool_create(model=gifi, part="gdr", size=3, seed=1, name="g", sources=SOURCES)

    report = report_build(pool=Pool.objects.get(name="g"))

    [row] = report["gifi_scores"]
    assert row["model"] == "m1" and row["rank"] == 1 and row["scored"] == "GDR SN NTS CF SA OF PE"
    families = {(r["dimension"], r["pronoun"]): r["accuracy"] for r in report["gifi_family_accuracy"]}
    assert families["GDR", "she"] == 0.5 and families["PE", "xe"] == 0.0
    for name in ("gifi_dimensions", "gifi_family_heatmap"):
        assert plot_render(report=report, name=name, fmt="svg").startswith(b"<?xml")


def test_the_command_puts_the_pool_in_the_project_named(gifi, researcher):  # noqa: F811
    call_command("project_add", "lab-g", "--members", researcher.username, stdout=io.StringIO())
    call_command("gifi_pool", "--model", "m1", "--part", "gdr", "--size", "2", "--name", "g-lab", "--project", "lab-g",
                 stdout=io.StringIO())  # fmt: skip
    assert Pool.objects.get(name="g-lab").project.name == "lab-g"
    with pytest.raises(CommandError, match="--project: no project 'nope'"):
        call_command("gifi_pool", "--model", "m1", "--part", "gdr", "--size", "2", "--name", "x", "--project", "nope")
    assert not Pool.objects.filter(name="x").exists()
