"""The judge card (analysis/selectors/card.py): one page per judge run and its JSON, HTML and LaTeX exports, read
from the report of the pool the run covers, with the checks and rates of that run only."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from judging import checks
from tests.judging.test_checks import _favours_first, checked_pool  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def test_the_card_of_a_run_over_a_job_shows_its_verdict_rates_and_is_linked(verdict_study, researcher, client):
    run, pool = verdict_study.run, verdict_study.pool
    client.force_login(researcher)
    report_page = client.get(f"/reports/{pool.name}/?wait=1").content.decode()
    assert f'href="/judge-runs/{run.pk}/card/?pool={pool.name}"' in report_page
    card = json.loads(client.get(f"/judge-runs/{run.pk}/card.json").content)
    assert (card["judge"], card["run"], card["pool"], card["prompt"]) == (
        run.judge.name, run.pk, pool.name, run.judge.template,
    )  # fmt: skip
    assert card["verdict"]["run"] == run.pk and card["verdict_sentence"]
    assert {r["pronoun"] for r in card["rates"]} == {"xe", "he", "all"} and len(card["rates_corrected"]) == 3
    page = client.get(f"/judge-runs/{run.pk}/card/").content.decode()
    assert "Judge card: smol-judge" in page and "<svg" in page and "Bias-corrected" in page
    tex = client.get(f"/judge-runs/{run.pk}/card.tex").content.decode()
    assert tex.startswith("\\section*{Judge card: smol-judge") and "prediction-powered misgendering rate" in tex
    html = client.get(f"/judge-runs/{run.pk}/card.html")
    assert html["Content-Disposition"].endswith('.html"') and b"<svg" in html.content
    assert client.get(f"/judge-runs/{run.pk}/card.json?pool=nope").status_code == 400
    job_page = client.get(f"/generation/jobs/{run.job_id}/").content.decode()
    assert f'href="/judge-runs/{run.pk}/card/"' in job_page


def test_the_card_shows_the_judges_checks_with_their_figures(checked_pool, judge, monkeypatch, researcher, client):  # noqa: F811
    from tests.judging.conftest import finished_run

    monkeypatch.setattr(checks, "judge_prompts_score", _favours_first)
    pool, items = checked_pool
    scores = {"correct": -1.0, "misgendering": -3.0, "no_pronoun": -4.0}
    run = finished_run(judge=judge, pool=pool, labels={item: ("correct", 0.9, scores) for item in items})
    for check in ("position", "family-swap", "contextual"):
        call_command("judge", "--pool", pool.name, "--judge", judge.name, "--check", check, stdout=StringIO())
    client.force_login(researcher)
    card = json.loads(client.get(f"/judge-runs/{run.pk}/card.json").content)
    assert [row["check"] for row in card["checks"]] == ["position", "family_swap", "contextual"]
    page = client.get(f"/judge-runs/{run.pk}/card/").content.decode()
    for title in (
        "before and after contextual calibration",
        "choices by option position",
        "accuracy by pronoun family",
    ):
        assert title in page
    assert "Under every cyclic rotation of the options" in client.get(f"/judge-runs/{run.pk}/card.tex").content.decode()
    report_page = client.get(f"/reports/{pool.name}/?wait=1")
    assert report_page.status_code == 200
    text = report_page.content.decode()
    assert "(position consistency, family-swap invariance, contextual calibration)" in text
    assert "judge_check_positions" in text
    csv = client.get(f"/reports/{pool.name}/export/csv/?table=judge_checks").content.decode()
    assert csv.splitlines()[0].startswith("judge,run,check,n,consistency") and "by_family_he_accuracy" in csv


def test_the_methods_section_gives_a_sentence_per_number_from_the_studys_records(verdict_study, verdict_report):
    from analysis.report.exports.render import report_render
    from tests.judging.verdict_study import ANNOTATORS, FEW

    tex = report_render(report=verdict_report, fmt="latex", table="methods").body
    text = tex if isinstance(tex, str) else tex.decode()
    assert text.startswith("\\section*{Methods}")
    block = verdict_report["inter_annotator"]["pronoun_label"]
    assert f"by {len(ANNOTATORS) + 1} annotators" in text and FEW  # three who label everything and one who labels a few
    assert f"{block['n_items']} items were annotated by two or more annotators" in text
    assert f"Raw agreement on the pronoun label was {block['raw_agreement']:.3f}" in text
    low, high = block["raw_agreement_boot_ci"]
    assert f"(95\\% interval {low:.3f} to {high:.3f})" in text
    (verdict,) = verdict_report["judge_verdict"]
    assert f"The LLM judge smol-judge (version {verdict['version']}, run {verdict['run']})" in text
    for row in verdict_report["prediction_powered"]:
        if row["ppi_rate"] is not None:
            assert f"({row['pronoun']}), with smol-judge, the rate was {row['ppi_rate']:.3f}" in text
    assert "Rogan and Gladen" in text and "clipped to [0, 1]" in text


def test_the_latex_rates_table_says_its_intervals_are_clipped(verdict_report):
    from analysis.report.exports.render import report_render

    verdict_report["prediction_powered"][0].update(ppi_ci=[0.0, 0.4], ci_clipped=True)
    body = report_render(report=verdict_report, fmt="latex", table="prediction_powered").body
    text = body if isinstance(body, str) else body.decode()
    assert "clipped to [0, 1] where it left it" in text and "[0.000, 0.400] clipped" in text


def test_a_researcher_of_another_project_gets_no_card(checked_pool, judge, stranger, researcher, client):  # noqa: F811
    from tests.judging.conftest import finished_run

    pool, items = checked_pool
    scores = {"correct": -1.0, "misgendering": -3.0, "no_pronoun": -4.0}
    run = finished_run(judge=judge, pool=pool, labels={item: ("correct", 0.9, scores) for item in items})
    client.force_login(stranger)
    for url in (f"/judge-runs/{run.pk}/card/", f"/judge-runs/{run.pk}/card.json", f"/judge-runs/{run.pk}/card.tex"):
        assert client.get(url).status_code == 404
    client.force_login(researcher)
    assert client.get(f"/judge-runs/{run.pk}/card.json").status_code == 200


def test_the_card_of_an_endpoint_judges_run_shows_what_its_job_spent(researcher, client, settings):
    from judging.services.judges import judge_add
    from tests.endpoint_servers import TinyServer
    from tests.factories import PoolFactory, PoolItemFactory

    settings.CONCORD_ENDPOINT_BACKOFF_SECONDS = 0.01
    server = TinyServer()
    try:
        pool = PoolFactory(name="judged")
        for text in (" she went home.", " he went home.", " they went home."):
            PoolItemFactory(pool=pool, continuation=text)
        call_command("model_add", "tiny-api", "--base-url", server.url, "--model", "tiny", "--price-in", "1.5",
                     "--price-out", "4", stdout=StringIO(), stderr=StringIO())  # fmt: skip
        judge_add(name="api-judge", model="tiny-api", mode="sampling")
        out = StringIO()
        call_command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "2", stdout=out, stderr=StringIO())
        run = json.loads(out.getvalue().strip().splitlines()[-1])["run"]
    finally:
        server.close()
    client.force_login(researcher)
    card = json.loads(client.get(f"/judge-runs/{run}/card.json").content)
    # 3 items x k 2 requests; the tiny server's usage is 7 prompt and 2 completion tokens a request.
    tokens_in, tokens_out = 3 * 2 * 7, 3 * 2 * 2
    assert card["cost"] == {
        "requests": 6, "tokens_in": tokens_in, "tokens_out": tokens_out,
        "cost_usd": pytest.approx((tokens_in * 1.5 + tokens_out * 4) / 1e6),
    }  # fmt: skip
    usd = (tokens_in * 1.5 + tokens_out * 4) / 1e6
    page = client.get(f"/judge-runs/{run}/card/").content.decode()
    assert f"6 requests, {tokens_in} tokens in, {tokens_out} tokens out, {usd} USD" in page
    tex = client.get(f"/judge-runs/{run}/card.tex").content.decode()
    assert f"Its endpoint was sent 6 requests ({tokens_in} tokens in, {tokens_out} tokens out): {usd} USD." in tex


def test_the_card_of_a_run_on_local_weights_shows_no_cost(verdict_study, researcher, client):
    client.force_login(researcher)
    card = json.loads(client.get(f"/judge-runs/{verdict_study.run.pk}/card.json").content)
    assert card["cost"] is None
    assert ">Cost<" not in client.get(f"/judge-runs/{verdict_study.run.pk}/card/").content.decode()
