"""The report page's "Judge verdict" section, its figures, and escalation: a new pool of what the judge abstains on,
calibrated on the pool's human labels."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from analysis.plots import plot_render
from analysis.selectors.verdict import verdict_sentence
from annotation.models import Pool, PoolItem
from judging.models import MachineLabel

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(verdict_study):
    return verdict_study


def _threshold(study, alpha: float, delta: float):
    """The brute-force fixed-sequence search over the pool's labelled items, from the study's records."""
    confidences, agree = [], []
    for item, generation in study.items.items():
        human = study.adjudicated.get(item)
        if human is None:
            ranked = Counter(study.annotations[item].values()).most_common()
            human = None if len(ranked) > 1 and ranked[0][1] == ranked[1][1] else ranked[0][0]
        if human is None:
            continue
        scores = study.scores[generation]
        confidences.append(study.confidence[generation])
        agree.append(max(scores, key=lambda label: scores[label]) == human)
    c, z = np.array(confidences), np.array(agree)
    threshold = None
    for lam in sorted(set(c), reverse=True):
        kept = c >= lam
        if stats.binom.cdf(int((kept & ~z).sum()), int(kept.sum()), alpha) > delta:
            break
        threshold = lam
    return threshold


def test_the_verdict_sentence_says_what_the_test_found():
    row = {"epsilon": 0.15, "alt_test": {"passed": True, "omega": 2 / 3, "tested": 3, "note": None}}
    assert verdict_sentence(row) == (
        "passes the Alternative Annotator Test at epsilon 0.15: omega 0.67 over 3 annotators."
    )
    row["alt_test"] = {"passed": None, "omega": None, "tested": 1, "note": "not run: needs at least 2 annotators"}
    assert verdict_sentence(row).startswith("could not take the Alternative Annotator Test at epsilon 0.15: not run")


def test_the_page_shows_the_verdict_the_agreement_beside_the_ceiling_and_the_figures(
    client, researcher, study, verdict_report, page_without_figures
):
    client.force_login(researcher)
    page = client.get(f"/reports/{study.pool.name}/").content.decode()
    (row,) = verdict_report["judge_verdict"]
    assert 'id="verdict-heading">Judge verdict<' in page
    assert verdict_sentence(row) in page.replace("&#x27;", "'")
    assert "human ceiling" in page and "its verdict holds for this pool, these annotators and this epsilon" in page
    for name in ("judge_omega", "judge_risk_coverage", "judge_rates"):
        assert page.count(f'id="plot-{name}"') == 1
        image = client.get(f"/reports/{study.pool.name}/plots/{name}.svg")
        assert image.status_code == 200 and image.content.startswith(b"<?xml")
    assert f'action="/reports/{study.pool.name}/escalate/"' in page
    html = client.get(f"/reports/{study.pool.name}/export/html/").content.decode()
    assert "Judge verdict" in html and "/escalate/" not in html


def test_the_verdict_figures_draw_an_empty_report():
    for name in ("judge_omega", "judge_risk_coverage", "judge_rates"):
        assert plot_render(report={"pool": "p", "judge_verdict": [], "prediction_powered": []}, name=name, fmt="svg")


def test_pool_escalate_draws_the_jobs_generations_below_the_threshold_outside_the_pool(study, annotator):
    threshold = _threshold(study, 0.25, 0.15)
    assert threshold is not None
    out = call_command(
        "pool_escalate", pool=study.pool.name, run=study.run.pk, name="second-look", alpha=0.25, delta=0.15
    )
    new = Pool.objects.get(name="second-look")
    expected = sorted(
        g.pk for g in study.generations if study.confidence[g.pk] < threshold and g.pk not in study.items.values()
    )
    assert expected, "the study should leave some generations to escalate"
    items = PoolItem.objects.filter(pool=new).order_by("generation_id")
    assert [item.generation_id for item in items] == expected
    assert list(new.jobs.all()) == [study.job] and new.labels == study.pool.labels
    assert all(item.model_name == "m1" and item.kind == "study" for item in items)
    assert out is None or "second-look" in out
    # the new pool is ready to assign
    call_command("assign", pool="second-look", annotators=annotator.username)
    assert annotator.assignments.filter(pool=new).count() == len(expected)


def test_nothing_is_escalated_when_no_threshold_passes(study, capsys):
    call_command("pool_escalate", pool=study.pool.name, run=study.run.pk, name="never", alpha=0.01, delta=0.01)
    assert "No threshold passed" in capsys.readouterr().out
    assert not Pool.objects.filter(name="never").exists()


def test_escalation_refuses_a_pool_run_a_taken_name_and_bad_parameters(study, judge, judged_pool):
    from tests.judging.conftest import finished_run

    pool, items = judged_pool
    pool_run = finished_run(judge=judge, pool=pool, labels={items[0]: ("correct", 0.9, {"correct": -1.0,
                                                        "misgendering": -2.0, "no_pronoun": -3.0})})  # fmt: skip
    with pytest.raises(CommandError, match="not a generation job"):
        call_command("pool_escalate", pool=pool.name, run=pool_run.pk, name="x")
    with pytest.raises(CommandError, match="already exists"):
        call_command("pool_escalate", pool=study.pool.name, run=study.run.pk, name=pool.name)
    with pytest.raises(CommandError, match="alpha"):
        call_command("pool_escalate", pool=study.pool.name, run=study.run.pk, name="y", alpha=1.5)
    with pytest.raises(CommandError, match="not drawn from job"):
        call_command("pool_escalate", pool=pool.name, run=study.run.pk, name="z")
    assert not Pool.objects.filter(name__in=["x", "y", "z"]).exists()
    assert MachineLabel.objects.filter(run=study.run).count() == len(study.generations)


def test_researchers_escalate_from_the_verdict_section(client, researcher, annotator, study):
    client.force_login(annotator)
    form = {"run": study.run.pk, "name": "from-page", "alpha": "0.25", "delta": "0.15"}
    assert client.post(f"/reports/{study.pool.name}/escalate/", form).status_code == 403
    client.force_login(researcher)
    response = client.post(f"/reports/{study.pool.name}/escalate/", form)
    assert response.status_code == 302 and response["Location"] == "/pools/from-page/"
    assert PoolItem.objects.filter(pool__name="from-page").exists()
    again = client.post(f"/reports/{study.pool.name}/escalate/", form, follow=True)
    assert "already exists" in again.content.decode()


def test_a_kappa_whose_interval_has_zero_width_shows_it_as_undefined(client, researcher, study, monkeypatch):
    """As the docs promise (domain.md, 'Metrics'), not as [-0.000, 0.000]."""
    from django.core.cache import cache

    import analysis.metrics.verdict as verdict_metrics

    monkeypatch.setattr(verdict_metrics, "_percentile_ci", lambda values: None)  # every interval of zero width
    cache.clear()
    client.force_login(researcher)

    page = client.get(f"/reports/{study.pool.name}/?wait=1").content.decode()
    section = page[page.index('id="verdict-heading"') :]

    assert '<span class="muted">[undefined]</span>' in section and "-0.000" not in section
    cache.clear()


def test_a_name_longer_than_a_pool_name_is_a_clear_error_on_the_page_and_the_command(client, researcher, study):
    name = "n" * 100
    with pytest.raises(CommandError, match="at most 64 characters"):
        call_command("pool_escalate", pool=study.pool.name, run=study.run.pk, name=name, alpha=0.25, delta=0.15)

    client.force_login(researcher)
    form = {"run": study.run.pk, "name": name, "alpha": "0.25", "delta": "0.15"}
    response = client.post(f"/reports/{study.pool.name}/escalate/", form, follow=True)

    assert response.status_code == 200 and "at most 64 characters" in response.content.decode()
    assert not Pool.objects.filter(name__startswith="nnn").exists()


def test_a_name_taken_while_the_escalation_ran_is_a_clear_error_and_writes_nothing(
    client, researcher, study, monkeypatch
):
    """Two researchers sending the same new name at once: the second's check finds no pool yet, and the first's pool
    is committed before the second writes. Here the other pool appears between the check and the write."""
    import analysis.services

    human_side = analysis.services.human_side

    def meanwhile(**kwargs):
        Pool.objects.get_or_create(name="raced")
        return human_side(**kwargs)

    monkeypatch.setattr(analysis.services, "human_side", meanwhile)
    before = PoolItem.objects.count()
    with pytest.raises(CommandError, match="already exists"):
        call_command("pool_escalate", pool=study.pool.name, run=study.run.pk, name="raced", alpha=0.25, delta=0.15)

    client.force_login(researcher)
    form = {"run": study.run.pk, "name": "raced", "alpha": "0.25", "delta": "0.15"}
    Pool.objects.filter(name="raced").delete()
    response = client.post(f"/reports/{study.pool.name}/escalate/", form, follow=True)

    assert response.status_code == 200 and "already exists" in response.content.decode()
    assert PoolItem.objects.count() == before and not PoolItem.objects.filter(pool__name="raced").exists()


def test_an_escalated_pool_is_in_the_audit_trail(client, researcher, study):
    from common.audit import audit_entries, audit_event

    client.force_login(researcher)
    form = {"run": study.run.pk, "name": "audited-look", "alpha": "0.25", "delta": "0.15"}
    assert client.post(f"/reports/{study.pool.name}/escalate/", form).status_code == 302

    new = Pool.objects.get(name="audited-look")
    (entry,) = [
        e for e in audit_entries(object_type="pool", object_id=str(new.pk)) if audit_event(e) == "pool.escalate"
    ]
    assert entry.actor_id == researcher.pk
    assert entry.additional_data["from_pool"] == study.pool.name and entry.additional_data["run"] == study.run.pk
    assert entry.additional_data["items"] == PoolItem.objects.filter(pool=new).count()


def test_the_verdict_figures_draw_the_reports_figures_with_one_legend_below(verdict_report):
    from analysis import plots

    report = verdict_report
    (row,) = report["judge_verdict"]
    plt = plots._pyplot()
    for name in ("judge_omega", "judge_risk_coverage", "judge_rates"):
        with plt.rc_context(plots.STYLE):
            figure = plots.FIGURES[name].draw(report)
        try:
            assert all(ax.get_legend() is None for ax in figure.axes) and len(figure.legends) == 1
            figure.canvas.draw()
            legend = figure.legends[0].get_window_extent()
            assert not any(legend.overlaps(ax.get_window_extent()) for ax in figure.axes if ax.axison)
            ax = figure.axes[0]
            if name == "judge_omega":
                (line,) = [line for line in ax.lines if line.get_label().startswith(row["judge"])]
                omegas = [v for v in row["alt_test"]["omega_by_epsilon"].values() if v is not None]
                assert list(line.get_ydata()) == pytest.approx(omegas)
            if name == "judge_rates":
                people = [line for line in ax.lines if line.get_label() == "people only"]
                assert people and people[0].get_xdata()[0] == pytest.approx(
                    report["prediction_powered"][0]["human_rate"]
                )
        finally:
            plt.close(figure)


def test_an_escalated_pool_stays_in_its_source_pools_project_and_its_maker_is_told_to_assign_it(
    client, researcher, study
):
    client.force_login(researcher)
    form = {"run": study.run.pk, "name": "own-look", "alpha": "0.25", "delta": "0.15"}

    response = client.post(f"/reports/{study.pool.name}/escalate/", form, follow=True)

    assert "ready to assign: Assign annotators below." in response.content.decode()
    assert 'href="/pools/own-look/assign/">Assign annotators</a>' in response.content.decode()
    new = Pool.objects.get(name="own-look")
    assert (new.project, new.created_by) == (study.pool.project, researcher)


def test_pool_escalate_puts_the_new_pool_in_the_project_named(study, stranger):
    call_command(
        "pool_escalate", pool=study.pool.name, run=study.run.pk, name="theirs", alpha=0.25, delta=0.15,
        project="elsewhere",
    )  # fmt: skip

    assert Pool.objects.get(name="theirs").project.name == "elsewhere"
    with pytest.raises(CommandError, match="--project: no project 'nowhere' known"):
        call_command("pool_escalate", pool=study.pool.name, run=study.run.pk, name="never", project="nowhere")
