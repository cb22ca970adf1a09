"""Active pools, stratified PPI and the label budget in the database (docs/domain.md, "Spending people's labels where
they count"), on the verdict study (tests/judging/verdict_study.py): a finished job of 40 contexts (xe and he, 2
samples each), a judge run over it, and a uniform pool of 32 of its contexts labelled by three annotators.

The draw is checked against the definitions step by step (numpy and scipy's root finder, from the study's own records);
the report's figures against the metric functions' independent checks (tests/analysis/test_active_metrics.py) and
the report's other tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient
from scipy import optimize, stats

from analysis.report.build import report_data
from annotation.models import Pool, PoolItem
from annotation.schema import MISGENDERING
from tests.factories import AnnotationFactory, GenerationFactory, GenerationJobFactory, InstanceFactory

Z = float(stats.norm.ppf(0.975))
BUDGET = 12.0
SEED = 5


def _contexts(study) -> list[tuple[tuple[int, str], list[int], float]]:
    """The job's contexts in its order (instance, then setting as a job runs them: pre, post): their generations and
    Yhat, the mean softmax probability of misgendering over the options' scores (the judge's likelihood mode)."""
    options = list(study.run.judge.option_map)
    by_context: dict[tuple[int, str], list[int]] = {}
    for generation in sorted(study.generations, key=lambda g: (g.instance_id, g.setting, g.sample_index)):
        by_context.setdefault((generation.instance_id, generation.setting), []).append(generation.pk)
    out = []
    for key in sorted(by_context, key=lambda key: (key[0], ["pre", "post"].index(key[1]))):
        probabilities = []
        for generation_id in by_context[key]:
            scores = np.array([study.scores[generation_id][label] for label in options])
            weights = np.exp(scores - scores.max())
            probabilities.append(weights[options.index(MISGENDERING)] / weights.sum())
        out.append((key, by_context[key], float(np.mean(probabilities))))
    return out


def _defined_draw(study, budget: float, seed: int) -> dict[int, float]:
    """generation id -> pi of every drawn generation, worked out from the definitions."""
    contexts = _contexts(study)
    yhat = np.array([y for _, _, y in contexts])
    u = np.maximum(np.sqrt(yhat * (1 - yhat)), 0.05)
    c = optimize.brentq(lambda c: np.minimum(1, c * u).sum() - budget, 0, 1 / u.min(), xtol=1e-12)
    pi = np.minimum(1, c * u)
    drawn = np.random.default_rng(seed).random(len(contexts)) < pi
    return {g: float(p) for (_, gens, _), p, d in zip(contexts, pi, drawn, strict=True) if d for g in gens}


def _draw(study, name: str = "active", budget: float = BUDGET, seed: int = SEED) -> Pool:
    call_command(
        "sample_pool", "--name", name, "--jobs", str(study.job.pk), "--active", "--judge-run", str(study.run.pk),
        "--budget", str(budget), "--seed", str(seed),
    )  # fmt: skip
    return Pool.objects.get(name=name)


class TestActiveDraw:
    def test_the_command_draws_the_defined_contexts_with_their_probabilities(self, verdict_study):
        pool = _draw(verdict_study)
        expected = _defined_draw(verdict_study, BUDGET, SEED)
        items = dict(PoolItem.objects.filter(pool=pool).values_list("generation_id", "inclusion_probability"))
        assert set(items) == set(expected)
        assert all(items[g] == pytest.approx(expected[g], abs=1e-7) for g in items)
        assert (pool.active_run_id, pool.active_budget, pool.seed) == (verdict_study.run.pk, BUDGET, SEED)
        assert list(pool.jobs.all()) == [verdict_study.job]

    def test_the_pool_page_says_it_is_an_active_draw(self, client, researcher, verdict_study):
        pool = _draw(verdict_study)
        client.force_login(researcher)
        page = client.get(f"/pools/{pool.name}/").content.decode()
        assert f"an active draw with judge run {verdict_study.run.pk} at budget 12 contexts, seed {SEED}" in page

    def test_the_draw_is_reproducible_from_the_seed(self, verdict_study):
        first = _draw(verdict_study, "first")
        again = _draw(verdict_study, "again")
        other = _draw(verdict_study, "other", seed=SEED + 1)
        generations = [set(PoolItem.objects.filter(pool=p).values_list("generation_id", flat=True))
                       for p in (first, again, other)]  # fmt: skip
        assert generations[0] == generations[1]
        assert generations[2] == set(_defined_draw(verdict_study, BUDGET, SEED + 1))

    def test_a_jobs_contexts_are_in_its_order_each_instances_pre_before_its_post(self, verdict_study):
        """One uniform per context in the job's context order: instance by instance, pre then post as a job runs them
        (not as the settings' names sort, which would put post first)."""
        from generation.models import Generation, Job
        from judging.active import JudgeContextProbabilities
        from judging.models import MachineLabel
        from judging.services.runs import judge_run_create

        job = GenerationJobFactory(model=verdict_study.job.model, pronouns=["xe"], settings=["pre", "post"], samples=1)
        instances = [InstanceFactory(pronoun="xe") for _ in range(3)]
        expected = []
        for instance in instances:
            for setting in ("post", "pre"):  # written post first: the order must not come from the rows
                GenerationFactory(job=job, instance=instance, setting=setting)
                expected.append((instance.pk, setting))
        expected.sort(key=lambda key: (key[0], ["pre", "post"].index(key[1])))
        run, _ = judge_run_create(job=job.pk, judge=verdict_study.run.judge.name, queue=False)
        for generation in Generation.objects.filter(job=job):
            MachineLabel.objects.create(
                run=run, generation=generation, label=MISGENDERING, confidence=0.5,
                scores={label: 0.0 for label in verdict_study.run.judge.option_map},
            )  # fmt: skip
        Job.objects.filter(pk=run.job_id).update(status="done")
        contexts = JudgeContextProbabilities().contexts(run_id=run.pk, job_id=job.pk, positive=MISGENDERING)
        assert [(context.instance_id, context.setting) for context in contexts] == expected
        assert expected[0][1] == "pre" and expected[1][1] == "post"

    def test_a_run_that_does_not_cover_the_job_is_refused(self, verdict_study):
        other = GenerationJobFactory(model=verdict_study.job.model, pronouns=["xe"], settings=["pre"], samples=1)
        GenerationFactory(job=other, instance=InstanceFactory(pronoun="xe"))
        with pytest.raises(CommandError, match=rf"judged job {verdict_study.job.pk}, not job {other.pk}"):
            call_command("sample_pool", "--name", "x", "--jobs", str(other.pk), "--active",
                         "--judge-run", str(verdict_study.run.pk), "--budget", "1")  # fmt: skip
        assert not Pool.objects.filter(name="x").exists()

    def test_a_run_without_probabilities_is_refused(self, verdict_study):
        from django.utils import timezone

        from generation.models import Job
        from judging.services.runs import judge_run_create

        job = GenerationJobFactory(model=verdict_study.job.model, pronouns=["xe"], settings=["pre"], samples=1)
        GenerationFactory(job=job, instance=InstanceFactory(pronoun="xe"))
        run, _ = judge_run_create(job=job.pk, judge=verdict_study.run.judge.name, queue=False)
        Job.objects.filter(pk=run.job_id).update(status="done", finished_at=timezone.now())
        with pytest.raises(CommandError, match="has no probabilities"):
            call_command("sample_pool", "--name", "x", "--jobs", str(job.pk), "--active",
                         "--judge-run", str(run.pk), "--budget", "1")  # fmt: skip
        assert not Pool.objects.filter(name="x").exists()

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            (["--budget", "3"], "needs --judge-run"),
            (["--judge-run", "1"], "needs --judge-run RUN and --budget"),
            (["--judge-run", "1", "--budget", "3", "--instances", "2"], "do not apply"),
        ],
    )
    def test_missing_or_foreign_flags_are_refused(self, verdict_study, extra, message):
        with pytest.raises(CommandError, match=message):
            call_command("sample_pool", "--name", "x", "--jobs", str(verdict_study.job.pk), "--active", *extra)

    def test_a_label_set_is_refused_beside_an_active_draw(self, verdict_study):
        with pytest.raises(CommandError, match="an active draw is labelled with the schema's labels"):
            call_command(
                "sample_pool", "--name", "x", "--jobs", str(verdict_study.job.pk), "--active", "--judge-run",
                str(verdict_study.run.pk), "--budget", "3", "--labels", "1,2,3", "--scale", "ordinal",
            )  # fmt: skip
        assert not Pool.objects.filter(name="x").exists()

    def test_the_pool_form_draws_an_active_pool_and_shows_a_refusal(self, client, admin_user, verdict_study):
        client.force_login(admin_user)
        form = {"name": "web-active", "jobs": str(verdict_study.job.pk), "seed": SEED, "active": "on",
                "judge_run": verdict_study.run.pk, "budget": BUDGET}  # fmt: skip
        response = client.post("/pools/new/", form)
        assert response.status_code == 302, response.content.decode()[-2000:]
        items = dict(
            PoolItem.objects.filter(pool__name="web-active").values_list("generation_id", "inclusion_probability")
        )
        assert set(items) == set(_defined_draw(verdict_study, BUDGET, SEED))
        refused = client.post("/pools/new/", {**form, "name": "web-bad", "budget": 41})
        assert refused.status_code == 200 and "at most the job&#x27;s 40 contexts" in refused.content.decode()
        assert not Pool.objects.filter(name="web-bad").exists()

    def test_a_budget_beyond_the_job_is_refused(self, verdict_study):
        with pytest.raises(CommandError, match="at most the job's 40 contexts"):
            _draw(verdict_study, budget=41)

    def test_the_api_draws_an_active_pool_for_an_admin_and_refuses_a_bad_run(self, verdict_study, admin_user):
        client = APIClient()
        client.force_authenticate(admin_user)
        body = {"name": "api-active", "jobs": [verdict_study.job.pk], "active": True,
                "judge_run": verdict_study.run.pk, "budget": BUDGET, "seed": SEED}  # fmt: skip
        response = client.post("/api/pools/", body, format="json")
        assert response.status_code == 201, response.content
        items = dict(
            PoolItem.objects.filter(pool__name="api-active").values_list("generation_id", "inclusion_probability")
        )
        assert set(items) == set(_defined_draw(verdict_study, BUDGET, SEED))
        detail = client.get("/api/pools/api-active/").json()
        assert (detail["active"], detail["active_judge_run"], detail["active_budget"]) == (
            True, verdict_study.run.pk, BUDGET,
        )  # fmt: skip
        assert detail["positive_label"] == "misgendering"
        refused = client.post("/api/pools/", {**body, "name": "api-bad", "judge_run": 10**6}, format="json")
        assert refused.status_code == 400
        assert "no judge run" in refused.json()["detail"]


class TestActiveReport:
    def test_active_rates_wait_for_labels_then_are_section_16s_estimate(self, verdict_study):
        pool = _draw(verdict_study)
        report = report_data(pool=pool)
        rows = {row["pronoun"]: row for row in report["active_rates"]}
        drawn = {g for g in _defined_draw(verdict_study, BUDGET, SEED)}
        contexts = _contexts(verdict_study)
        n_drawn = sum(1 for _, gens, _ in contexts if gens[0] in drawn)
        assert rows["all"]["n_incomplete"] == n_drawn and rows["all"]["rate"] is None
        assert rows["all"]["N"] == 40
        assert report["active_inclusion"] and all(
            0 < r["inclusion_probability"] <= 1 for r in report["active_inclusion"]
        )

        # People label every drawn item with the label the study leans to (one annotator each).
        from django.contrib.auth import get_user_model

        person = get_user_model().objects.get(username="vera")
        for item in PoolItem.objects.filter(pool=pool):
            AnnotationFactory(item=item, annotator=person, label=verdict_study.truth[item.generation_id])
        report = report_data(pool=pool)
        rows = {row["pronoun"]: row for row in report["active_rates"]}
        pi = _defined_draw(verdict_study, BUDGET, SEED)
        z_values, ht = [], []
        for _, gens, yhat in contexts:
            if gens[0] in pi:
                y = np.mean([verdict_study.truth[g] == MISGENDERING for g in gens])
                z_values.append(yhat + (y - yhat) / pi[gens[0]])
                ht.append(y / pi[gens[0]])
            else:
                z_values.append(yhat)
                ht.append(0.0)
        z_values, ht = np.array(z_values), np.array(ht)
        row = rows["all"]
        assert (row["n_labelled"], row["n_incomplete"]) == (n_drawn, 0)
        assert row["rate"] == pytest.approx(z_values.mean())
        half = Z * z_values.std(ddof=1) / math.sqrt(40)
        assert row["ci"] == pytest.approx([z_values.mean() - half, z_values.mean() + half])
        assert row["human_rate"] == pytest.approx(ht.mean())
        assert set(rows) == {"xe", "he", "all"}
        assert rows["xe"]["N"] + rows["he"]["N"] == 40
        # Uniform PPI++ and stratified PPI take the labelled contexts as a uniform draw: not beside an active one.
        assert report["prediction_powered"] == [] and report["stratified_ppi"] == []
        # An active pool's rates are its own: no stratified PPI of a uniform draw.
        assert report["stratified_ppi"] == []


class TestUniformPoolReport:
    def test_stratified_ppi_combines_the_per_pronoun_ppi_rows_by_share(self, verdict_report):
        ppi = {row["pronoun"]: row for row in verdict_report["prediction_powered"]}
        (row,) = verdict_report["stratified_ppi"]
        total = sum(ppi[p]["n"] + ppi[p]["N"] for p in ("xe", "he"))
        theta = sum((ppi[p]["n"] + ppi[p]["N"]) / total * ppi[p]["ppi_rate"] for p in ("xe", "he"))
        variance = sum(
            ((ppi[p]["n"] + ppi[p]["N"]) / total) ** 2 * ((ppi[p]["ppi_ci"][1] - ppi[p]["ppi_ci"][0]) / (2 * Z)) ** 2
            for p in ("xe", "he")
        )
        assert row["rate"] == pytest.approx(theta)
        assert row["ci"] == pytest.approx([theta - Z * math.sqrt(variance), theta + Z * math.sqrt(variance)])
        assert row["ppi_rate"] == pytest.approx(ppi["all"]["ppi_rate"])
        assert row["ppi_ci"] == pytest.approx(ppi["all"]["ppi_ci"])
        assert {s["pronoun"]: (s["n"], s["N"]) for s in row["strata"]} == {
            p: (ppi[p]["n"], ppi[p]["n"] + ppi[p]["N"]) for p in ("xe", "he")
        }
        assert verdict_report["active_rates"] == []

    def test_the_label_budget_follows_the_pilots_spread(self, verdict_report):
        ppi = next(row for row in verdict_report["prediction_powered"] if row["pronoun"] == "all")
        n = ppi["n"]
        # the people-only interval's half-width is z sd(Y, ddof 0) / sqrt(n): the pilot's sd with ddof 1 from it
        sd = (ppi["human_ci"][1] - ppi["human_ci"][0]) / 2 / Z * math.sqrt(n) * math.sqrt(n / (n - 1))
        rows = {row["half_width"]: row for row in verdict_report["label_budget"]}
        assert set(rows) == {0.02, 0.05, 0.10}
        for half_width, row in rows.items():
            assert row["n_people"] == math.ceil((Z * sd / half_width) ** 2)
            assert (row["pilot_n"], row["N"], row["pronoun"]) == (n, 40, "all")
            assert row["n_ppi"] == "unreachable" or isinstance(row["n_ppi"], int)
            assert row["n_active"] == "unreachable" or 1 <= row["n_active"] <= 40
        assert rows[0.02]["n_people"] >= rows[0.05]["n_people"] >= rows[0.10]["n_people"]

    def test_the_page_says_the_budget_in_a_sentence_and_draws_the_figures(self, client, researcher, verdict_study):
        client.force_login(researcher)
        page = client.get(f"/reports/{verdict_study.pool.name}/?wait=1").content.decode()
        assert "from people alone" in page and "with an active draw" in page
        for name in ("label_budget_widths", "active_inclusion"):
            image = client.get(f"/reports/{verdict_study.pool.name}/plots/{name}.svg")
            assert image.status_code == 200 and b"<svg" in image.content

    def test_the_figures_draw_one_legend_each_from_their_rows(self, verdict_study, verdict_report):
        import matplotlib.pyplot as plt

        from analysis import plots

        active = report_data(pool=_draw(verdict_study))
        for name, report in (("label_budget_widths", verdict_report), ("active_inclusion", active)):
            figure = plots.FIGURES[name].draw({key: report[key] for key in plots.FIGURES[name].inputs})
            try:
                assert len(figure.legends) == 1 and figure.axes[0].lines
            finally:
                plt.close(figure)


class TestExport:
    def test_export_pool_carries_an_active_items_inclusion_probability(self, verdict_study, tmp_path):
        import csv

        pool = _draw(verdict_study)
        call_command("export_pool", "--pool", pool.name, "--out", str(tmp_path / "active.csv"))
        with (tmp_path / "active.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        expected = _defined_draw(verdict_study, BUDGET, SEED)
        by_public = dict(PoolItem.objects.filter(pool=pool).values_list("public_id", "generation_id"))
        assert len(rows) == len(expected)
        for row in rows:
            assert float(row["inclusion_probability"]) == pytest.approx(expected[by_public[row["item"]]], abs=1e-7)
        # a uniform pool's file has no such column
        call_command("export_pool", "--pool", verdict_study.pool.name, "--out", str(tmp_path / "uniform.csv"))
        header = (tmp_path / "uniform.csv").read_text(encoding="utf-8").splitlines()[0]
        assert "inclusion_probability" not in header


class TestBundle:
    def test_an_active_pool_travels_in_the_study_bundle_with_its_run_and_probabilities(self, verdict_study):
        import io

        from analysis.study.export import study_export
        from analysis.study.load import study_bundle_read, study_import

        pool = _draw(verdict_study)
        person = verdict_study.pool.items.first().annotations.first().annotator
        for item in PoolItem.objects.filter(pool=pool):
            AnnotationFactory(item=item, annotator=person, label=verdict_study.truth[item.generation_id])
        buffer = io.BytesIO()
        study_export(pool=pool, out=buffer)
        imported = study_import(bundle=study_bundle_read(io.BytesIO(buffer.getvalue())), pool_name="active-copy")
        copy = Pool.objects.get(name="active-copy")
        assert copy.active_run_id is not None and copy.active_run_id != pool.active_run_id
        assert copy.active_run_id in set(copy.jobs.first().judged_by.values_list("pk", flat=True))
        assert sorted(copy.items.values_list("inclusion_probability", flat=True)) == sorted(
            pool.items.values_list("inclusion_probability", flat=True)
        )
        before = {r["pronoun"]: (r["rate"], r["ci"]) for r in report_data(pool=pool)["active_rates"]}
        after = {r["pronoun"]: (r["rate"], r["ci"]) for r in report_data(pool=copy)["active_rates"]}
        assert after == before and before["all"][0] is not None
        assert imported.pool == copy
