"""Models behind an endpoint (docs/domain.md, 'Models behind an endpoint'): registering one, judging and generating
with it through the engine interface, each request sent once, faults retried. Every test talks to a real HTTP server
the test starts (tests/endpoint_servers.py), through the official `openai` client, with faults put in by a proxy."""

from __future__ import annotations

import io
import json
import math
import time

import pytest
from django.core.management import CommandError, call_command

from generation.engines import EngineUnavailable, engine_check, engine_name
from generation.engines.endpoint.engine import option_probabilities
from generation.engines.replies import reply_label
from generation.jobs.services import JobParameterError, job_create, job_run
from generation.models import EndpointReply, Generation, Job, LanguageModel, ProbResult
from judging.models import CheckLabel, CheckRun, JudgeRun, MachineLabel
from judging.services.judges import judge_add
from tests.endpoint_servers import TOP_LOGPROBS, FaultProxy, TinyServer
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = pytest.mark.django_db

OPTIONS = {"correct": " correct", "misgendering": " misgendering", "no_pronoun": " no pronoun"}


@pytest.fixture(scope="module")
def module_server():
    """One server for the module's tests. The endpoint's client is kept per process and URL
    (generation/engines/endpoint/client.py), so on one URL it is built once, not again for every test."""
    tiny = TinyServer()
    yield tiny
    tiny.close()


@pytest.fixture
def server(module_server):
    """The module's server as a new one would answer (`TinyServer.reset`)."""
    module_server.reset()
    return module_server


@pytest.fixture
def proxy(server):
    faulty = FaultProxy(upstream=server.url)
    yield faulty
    faulty.close()


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.CONCORD_ENDPOINT_BACKOFF_SECONDS = 0.01


def _command(name: str, *arguments: str) -> dict:
    out = io.StringIO()
    call_command(name, *arguments, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _register(url: str, name: str = "tiny-api", *extra: str) -> dict:
    return _command("model_add", name, "--base-url", url, "--model", "tiny", *extra)


@pytest.fixture
def pool(db):
    made = PoolFactory(name="judged")
    for text in (" she went home.", " he went home.", " they went home."):
        PoolItemFactory(pool=made, continuation=text)
    return made


class TestRegistering:
    def test_it_registers_an_endpoint_and_records_what_it_gives(self, server):
        summary = _register(server.url, "tiny-api", "--price-in", "2.5", "--price-out", "10", "--rpm", "600")
        assert summary["source_kind"] == "api" and summary["base_url"] == server.url
        assert summary["completions"] and summary["logprobs"] and summary["prompt_logprobs"]
        model = LanguageModel.objects.get(name="tiny-api")
        assert (model.source, model.endpoint_settings.rpm, float(model.endpoint_settings.price_in)) == (
            "tiny",
            600,
            2.5,
        )

    def test_it_registers_local_weights_from_the_command_line(self, db, tmp_path):
        summary = _command("model_add", "local-copy", "--path", str(tmp_path))
        assert summary == {"model": "local-copy", "source_kind": "path", "source": str(tmp_path)}
        _command("model_add", "from-hub", "--hub", "org/model")
        assert LanguageModel.objects.get(name="from-hub").source_kind == "hub"

    def test_it_refuses_an_unreachable_url_naming_it_and_writes_nothing(self, db):
        with pytest.raises(CommandError, match=r"base_url: cannot reach http://127\.0\.0\.1:9/v1"):
            _register("http://127.0.0.1:9/v1")
        assert not LanguageModel.objects.filter(name="tiny-api").exists()

    def test_it_refuses_a_model_the_endpoint_does_not_list(self, server):
        with pytest.raises(CommandError, match="does not list the model 'gpt-9'; it lists: tiny"):
            _command("model_add", "nine", "--base-url", server.url, "--model", "gpt-9")

    def test_it_refuses_a_key_variable_that_is_not_set_and_never_takes_a_key(self, server, monkeypatch):
        monkeypatch.delenv("CONCORD_TEST_KEY", raising=False)
        with pytest.raises(CommandError, match="api_key_env: the environment variable CONCORD_TEST_KEY is not set"):
            _register(server.url, "tiny-api", "--api-key-env", "CONCORD_TEST_KEY")
        monkeypatch.setenv("CONCORD_TEST_KEY", "sk-secret-value")
        _register(server.url, "tiny-api", "--api-key-env", "CONCORD_TEST_KEY")
        endpoint = LanguageModel.objects.get(name="tiny-api").endpoint_settings
        assert endpoint.api_key_env == "CONCORD_TEST_KEY"
        assert "sk-secret-value" not in json.dumps(list(LanguageModel.objects.values()), default=str)
        assert "sk-secret-value" not in json.dumps(list(type(endpoint).objects.values()), default=str)

    def test_it_reports_every_bad_field_at_once(self, db):
        from generation.services.models import model_add

        with pytest.raises(JobParameterError) as caught:
            model_add(name="bad name", base_url="ftp://x", model="", concurrency=0, price_in="1")
        assert {"name", "base_url", "model", "concurrency", "price_in"} <= set(caught.value.errors)

    def test_the_api_registers_for_admins_only(self, server, api, admin_user, researcher):
        body = {"name": "tiny-api", "base_url": server.url, "model": "tiny", "api_key_env": ""}
        api.force_authenticate(researcher)
        assert api.post("/api/models/", body, format="json").status_code == 403
        api.force_authenticate(admin_user)
        response = api.post("/api/models/", body, format="json")
        assert response.status_code == 201, response.json()
        assert response.json()["name"] == "tiny-api" and response.json()["endpoint"]["base_url"] == server.url
        assert api.post("/api/models/", {**body, "model": "nope", "name": "x"}, format="json").status_code == 400


class TestEngineChoice:
    def test_an_endpoint_model_runs_on_the_endpoint_engine_and_no_other(self, server, settings):
        _register(server.url)
        model = LanguageModel.objects.get(name="tiny-api")
        settings.CONCORD_ENGINE = "hf"
        assert engine_name(None, model) == "endpoint"
        with pytest.raises(EngineUnavailable, match="an endpoint, which the hf engine does not run; use endpoint"):
            engine_check(engine="hf", language_model=model)

    def test_probability_scoring_is_refused_where_the_endpoint_gives_no_prompt_logprobs(self, server, demo_ruff):
        server.prompt_logprobs = False
        _register(server.url)
        with pytest.raises(JobParameterError) as caught:
            job_create(model="tiny-api", dataset="demo-ruff", queue=False, samples=1, max_new_tokens=4)
        assert "gives no prompt log-probs" in caught.value.errors["engine"]
        assert "--prob-score none" in caught.value.errors["engine"]
        job = job_create(
            model="tiny-api", dataset="demo-ruff", queue=False, samples=1, max_new_tokens=4, prob_score="none"
        )
        assert job.generation_run.prob_score == "none"

    def test_a_likelihood_judge_is_refused_where_the_endpoint_gives_no_top_logprobs(self, server, pool):
        server.logprobs = False
        _register(server.url, "tiny-api", "--logprobs", "no")
        judge_add(name="api-judge", model="tiny-api", mode="likelihood")
        with pytest.raises(CommandError, match="gives no top_logprobs, which a likelihood judge needs"):
            _command("judge", "--pool", pool.name, "--judge", "api-judge", "--mode", "likelihood")
        assert not JudgeRun.objects.exists()


class TestReplyToLabel:
    def test_a_reply_must_equal_one_options_text_after_stripping_case_and_trailing_punctuation(self):
        assert reply_label("  Correct.", OPTIONS) == "correct"
        assert reply_label("NO PRONOUN!", OPTIONS) == "no_pronoun"
        assert reply_label("misgendering", OPTIONS) == "misgendering"
        assert reply_label("It is correct.", OPTIONS) is None  # never mapped to the nearest option
        assert reply_label("", OPTIONS) is None

    def test_a_structured_reply_is_the_label_field_restricted_to_the_options(self):
        assert reply_label('{"label": "correct"}', OPTIONS, structured=True) == "correct"
        assert reply_label('{"label": "maybe"}', OPTIONS, structured=True) is None
        assert reply_label("correct", OPTIONS, structured=True) is None

    def test_option_probabilities_are_first_token_probabilities_renormalised_over_the_options_present(self):
        top = dict(TOP_LOGPROBS)
        got = option_probabilities(top, OPTIONS)
        # Hand-worked: "correct" -> e^-0.2, " mis" starts "misgendering" -> e^-1.8, "no" starts "no pronoun" -> e^-3.
        mass = [math.exp(-0.2), math.exp(-1.8), math.exp(-3.0)]
        assert got == pytest.approx({label: m / sum(mass) for label, m in zip(OPTIONS, mass, strict=True)})
        assert option_probabilities({"yes": -0.1}, OPTIONS) is None
        assert option_probabilities({"correct": -0.5}, OPTIONS) == {"correct": 1.0, "misgendering": 0.0,
                                                                     "no_pronoun": 0.0}  # fmt: skip


class TestJudgeOnEndpoint:
    def test_a_sampling_judge_labels_every_item_and_counts_what_it_spent(self, server, pool):
        _register(server.url, "tiny-api", "--price-in", "1", "--price-out", "2")
        added = _command("judge_add", "--name", "api-judge", "--model", "tiny-api", "--mode", "sampling")
        assert added["model"] == "tiny-api" and added["created"]
        server.answer = lambda body: "Correct." if "she" in body["messages"][0]["content"] else "I cannot tell"
        probes = len(server.posts())
        summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "2", "--wait")
        assert summary["state"] == "done" and summary["labels"] == 3
        assert summary["requests"] == 6 and (summary["tokens_in"], summary["tokens_out"]) == (42, 12)
        assert summary["cost_usd"] == pytest.approx((42 * 1 + 12 * 2) / 1e6)
        assert summary["n_unparsed"] == 2
        labels = list(MachineLabel.objects.filter(run_id=summary["run"]).select_related("item"))
        unparsed = [label for label in labels if label.label == ""]
        # The server takes a JSON schema (found at registration), so replies are {"label": ...}, kept as they came.
        raw = json.dumps({"label": "i cannot tell"})
        assert len(unparsed) == 2 and all(label.samples == [raw] * 2 for label in unparsed)
        parsed = [label for label in labels if label.label]
        assert [label.label for label in parsed] == ["correct"] and parsed[0].confidence == 1.0
        assert len(server.posts()) - probes == 6

    def test_a_likelihood_judge_reads_the_first_tokens_top_logprobs(self, server, pool):
        _register(server.url)
        judge_add(name="api-judge", model="tiny-api", mode="likelihood")
        summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--wait")
        assert summary["state"] == "done" and summary["requests"] == 3 and summary["n_unparsed"] == 0
        label = MachineLabel.objects.filter(run_id=summary["run"]).first()
        mass = [math.exp(-0.2), math.exp(-1.8), math.exp(-3.0)]
        assert label.label == "correct" and label.confidence == pytest.approx(mass[0] / sum(mass))
        asked = [r for r in server.posts() if r.get("top_logprobs")][-1]
        assert asked["logprobs"] is True and asked["max_completion_tokens"] == 1

    def test_a_rerun_sends_no_request_whose_reply_is_stored(self, server, pool):
        _register(server.url)
        judge_add(name="api-judge", model="tiny-api", mode="sampling")
        first = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "2", "--seed", "3")
        sent = len(server.posts())
        again = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "2", "--seed", "3", "--rerun")
        assert again["run"] != first["run"] and again["state"] == "done" and again["labels"] == 3
        assert len(server.posts()) == sent and again["requests"] == 0 and EndpointReply.objects.count() == 6

        def labels(run_id):
            return sorted(MachineLabel.objects.filter(run_id=run_id).values_list("item_id", "label", "samples"))

        assert labels(first["run"]) == labels(again["run"])


class TestFaults:
    def test_429_500_timeouts_and_garbage_are_retried_and_each_reply_is_stored_once(self, server, proxy, pool):
        _register(server.url, "tiny-api")
        model = LanguageModel.objects.get(name="tiny-api")
        model.endpoint_settings.base_url, model.endpoint_settings.timeout, model.endpoint_settings.concurrency = (
            proxy.url,
            0.5,
            1,
        )
        model.endpoint_settings.save()
        proxy.hang = 1.0
        proxy.faults = ["429", "500", "timeout", "garbage", "slow"]
        judge_add(name="api-judge", model="tiny-api", mode="sampling")
        summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "1", "--wait")
        assert summary["state"] == "done" and summary["labels"] == 3 and summary["requests"] == 3
        assert proxy.seen[:5] == ["429", "500", "timeout", "garbage", "slow"] and len(proxy.seen) == 7

    def test_a_chunk_that_runs_out_of_retries_fails_with_the_endpoints_message_and_resumes(self, server, proxy, pool):
        _register(server.url, "tiny-api", "--max-retries", "1")
        model = LanguageModel.objects.get(name="tiny-api")
        model.endpoint_settings.base_url, model.endpoint_settings.concurrency = proxy.url, 1
        model.endpoint_settings.save()
        judge_add(name="api-judge", model="tiny-api", mode="sampling")
        proxy.faults = ["ok", "500", "500"]
        with pytest.raises(CommandError, match="answered 500: the server broke"):
            _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "1", "--wait")
        run = JudgeRun.objects.get()
        assert run.job.status == "failed" and "after 1 retries" in run.job.error
        stored = EndpointReply.objects.count()
        assert stored == 1  # the reply that came is kept
        posts_before = len(server.posts())
        summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "1", "--wait")
        assert summary["run"] == run.pk and summary["state"] == "done" and summary["labels"] == 3
        assert len(server.posts()) - posts_before == 2  # the stored one was not sent again
        assert EndpointReply.objects.count() == 3


class TestGenerationOnEndpoint:
    def test_a_generation_job_samples_each_context_as_seeded_completions(self, server, demo_ruff):
        _register(server.url)
        job = job_create(
            model="tiny-api", dataset="demo-ruff", queue=False, samples=2, max_new_tokens=5, per_pronoun=1,
            prob_score="none",
        )  # fmt: skip
        job_run(job_id=job.pk)
        job.refresh_from_db()
        assert job.status == "done", job.error
        rows = list(Generation.objects.filter(job=job))
        assert len(rows) == job.total_units * 2 * 2 and not ProbResult.objects.filter(job=job).exists()
        assert all(row.continuation.startswith(" continued ") for row in rows)
        sent = [r for r in server.posts() if r["path"].endswith("/v1/completions") and "seed" in r]
        assert len({r["seed"] for r in sent}) == len(sent) and all(r["max_tokens"] == 5 for r in sent)
        again = job_create(
            model="tiny-api", dataset="demo-ruff", queue=False, samples=2, max_new_tokens=5, per_pronoun=1,
            prob_score="none",
        )  # fmt: skip
        before = len(server.posts())
        job_run(job_id=again.pk)
        assert len(server.posts()) == before  # the same job again sends nothing
        assert sorted(Generation.objects.filter(job=again).values_list("continuation", flat=True)) == sorted(
            row.continuation for row in rows
        )

    def test_a_chat_only_endpoint_gets_each_context_as_one_user_message(self, server, demo_ruff):
        server.completions = False
        server.answer = lambda body: " a chat reply"
        _register(server.url)
        assert not LanguageModel.objects.get(name="tiny-api").endpoint_settings.completions
        job = job_create(
            model="tiny-api", dataset="demo-ruff", queue=False, samples=1, max_new_tokens=3, per_pronoun=1,
            prob_score="none",
        )  # fmt: skip
        job_run(job_id=job.pk)
        assert set(Generation.objects.filter(job=job).values_list("continuation", flat=True)) == {" a chat reply"}
        chats = [r for r in server.posts() if r["path"].endswith("/chat/completions") and "seed" in r]
        assert chats and all(len(r["messages"]) == 1 and r["messages"][0]["role"] == "user" for r in chats)

    def test_probability_scoring_reads_vllms_prompt_logprobs(self, server, demo_ruff, monkeypatch):
        from generation.engines.hf import engine as hf_engine

        def no_local_weights(**kwargs):
            raise AssertionError("an endpoint chunk loaded local weights")

        monkeypatch.setattr(hf_engine, "model_load", no_local_weights)
        _register(server.url)
        job = job_create(model="tiny-api", dataset="demo-ruff", queue=False, samples=1, max_new_tokens=3,
                         per_pronoun=1)  # fmt: skip
        job_run(job_id=job.pk)
        job.refresh_from_db()
        assert job.status == "done", job.error
        results = list(ProbResult.objects.filter(job=job).select_related("instance"))
        assert len(results) == job.total_units
        scored = {r["prompt"] for r in server.posts() if "prompt_logprobs" in r and "temperature" in r}  # not the probe
        for result in results:
            assert set(result.losses) >= {"he", "she", "they"}
            assert result.prediction == min(result.losses, key=result.losses.get)
        # The tiny server gives word i of a prompt the log-prob -0.1 * len(word) - 0.01 * i: a candidate's loss is the
        # mean of their negatives over the words after the first. Worked out here for every candidate sent.
        # (Instances that share a sentence share its candidates: each text is sent once.)
        expected = {
            round(sum(0.1 * len(w) + 0.01 * i for i, w in enumerate(text.split(" ")[1:], 1)) / text.count(" "), 9)
            for text in scored
        }
        assert {round(loss, 9) for result in results for loss in result.losses.values()} == expected
        assert Job.objects.get(pk=job.pk).done_units == job.total_units


class TestDryRun:
    def test_judge_dry_run_counts_requests_tokens_and_cost_and_sends_nothing(self, server, pool):
        _register(server.url, "tiny-api", "--price-in", "3", "--price-out", "15")
        judge = judge_add(name="api-judge", model="tiny-api", mode="sampling")[0]
        sent = len(server.posts())
        estimate = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "2", "--dry-run")
        from judging.selectors import item_prompt

        chars = sum(len(item_prompt(judge=judge, item=item)) for item in pool.items.all()) * 2
        tokens_in = math.ceil(chars / 4)
        assert estimate["dry_run"] and estimate["requests"] == 6 and estimate["tokens_in"] == tokens_in
        assert estimate["tokens_out"] == 6 * 20
        assert estimate["cost_usd"] == pytest.approx((tokens_in * 3 + 120 * 15) / 1e6, abs=1e-6)
        assert len(server.posts()) == sent and not JudgeRun.objects.exists()

    def test_generate_dry_run_counts_a_request_per_context_setting_and_sample(self, server, demo_ruff):
        _register(server.url)
        estimate = _command(
            "generate", "--model", "tiny-api", "--dataset", "demo-ruff", "--samples", "3", "--max-new-tokens", "7",
            "--per-pronoun", "1", "--prob-score", "none", "--dry-run",
        )  # fmt: skip
        instances = Job.objects.count()
        assert instances == 0 and estimate["requests"] > 0 and estimate["requests"] % 3 == 0
        assert estimate["tokens_out"] == estimate["requests"] * 7 and estimate["cost_usd"] is None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_run_resumes_without_sending_a_stored_request_again(server, tmp_path):
    """A judge run in another process, killed (SIGKILL) once some replies are stored; resumed here, it sends only the
    requests whose replies were not stored."""
    import os
    import subprocess
    import sys

    from django.db import connection

    from tests.conftest import REPO

    if connection.vendor != "postgresql":
        pytest.skip("the other process needs a database it can share (Postgres)")
    pool = PoolFactory(name="killed")
    for index in range(6):
        PoolItemFactory(pool=pool, continuation=f" she walked {index} miles.")
    _register(server.url, "tiny-api", "--concurrency", "1")
    judge_add(name="api-judge", model="tiny-api", mode="sampling")
    server.latency = 0.5
    db = connection.settings_dict
    url = (
        f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    environment = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"} | {"DATABASE_URL": url}
    log = (tmp_path / "judge.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "judge", "--pool", "killed", "--judge", "api-judge", "--k", "1"],
        cwd=REPO, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while EndpointReply.objects.count() < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.kill()
    process.wait()
    stored = EndpointReply.objects.count()
    assert 2 <= stored < 6, (tmp_path / "judge.log").read_text()[-2000:]
    server.latency = 0.0
    before = len(server.posts())
    run = JudgeRun.objects.get()
    out = io.StringIO()
    call_command("resume_jobs", "--job", str(run.job_id), stdout=out, stderr=io.StringIO())
    run.job.refresh_from_db()
    assert run.job.status == "done" and MachineLabel.objects.filter(run=run).count() == 6
    assert len(server.posts()) - before == 6 - stored
    assert EndpointReply.objects.count() == 6


def test_the_job_page_shows_what_a_judge_run_spent_and_its_unparsed_replies(server, pool, client, researcher):
    _register(server.url, "tiny-api", "--price-in", "1", "--price-out", "2")
    judge_add(name="api-judge", model="tiny-api", mode="sampling")
    server.answer = lambda body: "Correct." if "she" in body["messages"][0]["content"] else "I cannot tell"
    summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "1")
    client.force_login(researcher)
    page = client.get(f"/generation/jobs/{JudgeRun.objects.get(pk=summary['run']).job_id}/").content.decode()
    assert "n_unparsed 2" in page
    assert "3 requests, 21 tokens in,\n     6 tokens out, $0.000033" in page


def test_the_job_form_shows_what_a_job_on_an_endpoint_would_send(server, demo_ruff, client, admin_user):
    from generation.forms import JobForm

    _register(server.url, "tiny-api", "--price-in", "1", "--price-out", "1")
    form = JobForm()
    data = {name: field.initial for name, field in form.fields.items() if field.initial is not None}
    data |= {"model": "tiny-api", "dataset": "demo-ruff", "prob_score": "none", "samples": 2, "preview": "1"}
    client.force_login(admin_user)
    page = client.post("/generation/jobs/new/", data).content.decode()
    from generation.parameters import job_parameters_validate
    from generation.selectors import job_estimate

    params = job_parameters_validate(
        model="tiny-api", dataset="demo-ruff", prob_score="none", samples=2, per_pronoun=data["per_pronoun"],
        settings=data["settings"],
    )  # fmt: skip
    requests = job_estimate(params=params)["requests"]
    assert (
        requests == 2 * len(data["settings"]) * len(job_parameters_validate and params.pronouns) * data["per_pronoun"]
    )
    assert f"<strong>{requests} requests</strong>" in page and not Job.objects.exists()


class TestAdmin:
    def _form(self, url: str, **extra) -> dict:
        return {
            "name": "admin-api", "source_kind": "api", "source": "tiny", "gguf_file": "", "dtype": "auto",
            "device": "auto", "batch_size": 16, "base_url": url, "api": "openai", "api_key_env": "",
            "concurrency": 2, "timeout": 30, "max_retries": 3, "logprobs": "auto", **extra,
        }  # fmt: skip

    def test_the_admin_registers_an_endpoint_model_checked_as_model_add_checks_it(self, server, client, admin_user):
        client.force_login(admin_user)
        response = client.post("/admin/generation/languagemodel/add/", self._form(server.url))
        assert response.status_code == 302
        endpoint = LanguageModel.objects.get(name="admin-api").endpoint_settings
        assert (endpoint.base_url, endpoint.concurrency, endpoint.has_logprobs) == (server.url, 2, True)

    def test_the_admin_refuses_a_model_the_endpoint_does_not_list(self, server, client, admin_user):
        client.force_login(admin_user)
        response = client.post("/admin/generation/languagemodel/add/", self._form(server.url, source="gpt-9"))
        assert response.status_code == 200 and "does not list the model" in response.content.decode()
        assert not LanguageModel.objects.filter(name="admin-api").exists()


def test_a_claude_judge_goes_through_anthropics_client_and_refuses_likelihood(server, pool, monkeypatch):
    monkeypatch.setenv("CONCORD_TEST_ANTHROPIC_KEY", "sk-ant-test")
    base = server.url.removesuffix("/v1")
    _command("model_add", "claude", "--base-url", base, "--api", "anthropic", "--model", "tiny",
             "--api-key-env", "CONCORD_TEST_ANTHROPIC_KEY")  # fmt: skip
    judge_add(name="claude-judge", model="claude", mode="sampling")
    summary = _command("judge", "--pool", pool.name, "--judge", "claude-judge", "--k", "1")
    assert summary["state"] == "done" and summary["labels"] == 3 and summary["n_unparsed"] == 0
    assert (summary["requests"], summary["tokens_in"], summary["tokens_out"]) == (3, 15, 3)
    sent = [r for r in server.posts() if r["path"].endswith("/v1/messages")]
    assert len(sent) == 3 and all(r["messages"][0]["role"] == "user" and "seed" not in r for r in sent)
    with pytest.raises(CommandError, match="gives no top_logprobs"):
        _command("judge", "--pool", pool.name, "--judge", "claude-judge", "--mode", "likelihood")


def test_requests_run_concurrently_up_to_the_models_concurrency_and_no_further(server, pool):
    for index in range(9):
        PoolItemFactory(pool=pool, continuation=f" they ran {index} laps.")
    _register(server.url, "tiny-api", "--concurrency", "4")
    judge_add(name="api-judge", model="tiny-api", mode="sampling")
    server.latency, server.most_in_flight = 0.2, 0
    summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--k", "1")
    assert summary["requests"] == 12 and server.most_in_flight == 4


def test_the_rate_limit_spaces_request_starts_by_60_over_rpm(monkeypatch):
    """With a clock that stands still, each start waits one interval more than the one before it."""
    from generation.engines.endpoint import client

    slept: list[float] = []
    monkeypatch.setattr(client.time, "monotonic", lambda: 100.0)
    monkeypatch.setattr(client.time, "sleep", slept.append)
    limiter = client._Limiter(rpm=120)
    for _ in range(4):
        limiter.wait()
    assert slept == pytest.approx([0.5, 1.0, 1.5])


def test_a_tango_job_on_an_endpoint_samples_open_contexts_and_skips_prob_tango(server, db):
    from generation.datasets.tango import dataset_import_tango
    from generation.models import TangoTemplate
    from tests.conftest import DEMO

    dataset_import_tango(templates_path=DEMO / "tango_misgendering.jsonl", name="demo-tango")
    _register(server.url)
    with pytest.raises(JobParameterError, match="Prob-TANGO scores with local weights"):
        job_create(model="tiny-api", dataset="demo-tango", queue=False, samples=1, max_new_tokens=4, per_pronoun=1)
    job = job_create(
        model="tiny-api", dataset="demo-tango", queue=False, samples=1, max_new_tokens=4, per_pronoun=1,
        prob_score="none",
    )  # fmt: skip
    job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "done" and job.done_units == job.total_units
    assert set(Generation.objects.filter(job=job).values_list("setting", flat=True)) == {"open"}
    assert not TangoTemplate.objects.filter(job=job).exists()


def test_the_jobs_api_refuses_a_likelihood_run_of_a_judge_whose_endpoint_gives_no_top_logprobs(
    server, pool, api, admin_user
):
    server.logprobs = False
    _register(server.url, "tiny-api", "--logprobs", "no")
    judge_add(name="api-judge", model="tiny-api", mode="likelihood")
    api.force_authenticate(admin_user)
    body = {"kind": "judge", "options": {"pool": pool.name, "judge": "api-judge", "mode": "likelihood"}}
    response = api.post("/api/generation-jobs/", body, format="json")
    assert response.status_code == 400 and "gives no top_logprobs" in json.dumps(response.json())
    assert not JudgeRun.objects.exists()


class TestChecksOnEndpoint:
    """A judge's checks (judging/checks.py) go through the engine call a judge run makes: on an endpoint judge, its
    likelihood checks read the first token's top_logprobs, its sampling checks the replies, each stored once."""

    def test_a_position_check_of_a_likelihood_endpoint_judge_labels_every_rotation_once(self, server, pool):
        _register(server.url)
        judge_add(name="api-judge", model="tiny-api", mode="likelihood")
        probes = len(server.posts())  # registration's
        summary = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--check", "position", "--wait")
        assert summary["state"] == "done" and summary["labels"] == 3 * 3
        labels = CheckLabel.objects.filter(run_id=summary["run"])
        # The tiny server's top list puts "correct" first whatever the options' order: every rotation says correct,
        # with the renormalised first-token probability of its option.
        mass = [math.exp(-0.2), math.exp(-1.8), math.exp(-3.0)]
        assert {label.label for label in labels} == {"correct"}
        assert all(label.confidence == pytest.approx(mass[0] / sum(mass)) for label in labels)
        asked = [r for r in server.posts()[probes:] if r.get("top_logprobs")]
        assert len(asked) == 9 and {r["max_completion_tokens"] for r in asked} == {1}
        # each rotation's prompt lists the options in its order
        assert {label.prompt for label in labels} == {r["messages"][0]["content"] for r in asked}
        sent = len(server.posts())
        again = _command("judge", "--pool", pool.name, "--judge", "api-judge", "--check", "position", "--rerun")
        assert again["run"] != summary["run"] and again["labels"] == 9 and len(server.posts()) == sent

    def test_a_family_swap_check_of_a_sampling_endpoint_judge_labels_each_family_from_its_replies(self, server, pool):
        _register(server.url)
        judge_add(name="api-judge", model="tiny-api", mode="sampling")
        # The judge says correct only where the prompt declares xe (the items' own family).
        server.answer = lambda body: "Correct." if "xe/xem" in body["messages"][0]["content"] else "Misgendering."
        probes = len(server.posts())  # registration's
        summary = _command(
            "judge", "--pool", pool.name, "--judge", "api-judge", "--check", "family-swap", "--k", "2", "--wait"
        )
        assert summary["state"] == "done" and summary["labels"] == 3 * 4  # original, he, she, they
        labels = {
            (label.item_id, label.variant): label.label for label in CheckLabel.objects.filter(run_id=summary["run"])
        }
        assert {variant for _, variant in labels} == {"original", "he", "she", "they"}
        assert all(
            label == ("correct" if variant == "original" else "misgendering") for (_, variant), label in labels.items()
        )
        assert len(server.posts()) - probes == 12 * 2
        sent = len(server.posts())
        again = _command(
            "judge", "--pool", pool.name, "--judge", "api-judge", "--check", "family-swap", "--k", "2", "--rerun"
        )
        assert again["labels"] == 12 and len(server.posts()) == sent
        assert EndpointReply.objects.count() == 24

    def test_a_contextual_check_is_refused_on_an_endpoint_without_top_logprobs(self, server, pool):
        server.logprobs = False
        _register(server.url)
        judge_add(name="api-judge", model="tiny-api", mode="likelihood")
        with pytest.raises(CommandError, match="gives no top_logprobs, which a likelihood judge needs"):
            _command("judge", "--pool", pool.name, "--judge", "api-judge", "--check", "contextual")
        assert not CheckRun.objects.exists()
