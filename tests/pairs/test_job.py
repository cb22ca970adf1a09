"""`pair_score`: a job kind of the job framework (chunks, progress, resume, cancel) that writes one score row per
pair, equal to the scorer's on the same model."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from generation.jobs.services import job_cancel, job_create, job_resume, job_run
from generation.models import JobChunk, JobStatus, Pair, PairScore
from tests.pairs.conftest import registered
from tests.pairs.files import crows_file

pytestmark = pytest.mark.django_db

ROWS = [
    (0, "the mother is cold .", "the father is cold .", "stereo", "gender"),
    (1, "women are bad at chess .", "men are bad at chess .", "stereo", "gender"),
    (2, "the uncle said he fixed it .", "the aunt said she fixed it .", "antistereo", "gender"),
    (3, "the nurse said she fixed it .", "the nurse said he fixed it .", "stereo", "gender"),
    (4, "she is a good cook .", "he is a good cook .", "stereo", "gender"),
]


@pytest.fixture
def dataset(tmp_path):
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c.csv", ROWS)), "--name", "cp",
                 stdout=io.StringIO())  # fmt: skip


def run_command(*args) -> dict:
    out = io.StringIO()
    call_command("pair_score", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_it_scores_every_pair_with_a_masked_lm_as_the_scorer_does(dataset, tiny_bert_dir):
    from generation.engines.hf.pairs import masked_model_load, pll_pair_scores

    model = registered("tiny-bert", tiny_bert_dir)
    summary = run_command("--model", "tiny-bert", "--dataset", "cp", "--method", "pll", "--batch-size", "2", "--wait")
    assert summary["status"] == "done" and summary["pairs"] == 5 and summary["scored"] == 5
    pairs = list(Pair.objects.filter(dataset__name="cp").order_by("ordinal"))
    expected = pll_pair_scores(loaded=masked_model_load(language_model=model),
                               pairs=[(p.stereotypical, p.anti_stereotypical) for p in pairs])  # fmt: skip
    stored = {s.pair_id: s for s in PairScore.objects.filter(model="tiny-bert", method="pll")}
    assert [(stored[p.pk].score_stereotypical, stored[p.pk].score_anti_stereotypical) for p in pairs] == [
        pytest.approx(pair, abs=1e-5) for pair in expected
    ]
    chunks = JobChunk.objects.filter(job_id=summary["job"])
    assert chunks.count() > 1 and not chunks.filter(finished_at__isnull=True).exists()


def test_it_scores_with_a_causal_lm_and_exports_the_scores(dataset, tiny_gpt2_dir, tmp_path):
    registered("tiny-gpt2", tiny_gpt2_dir)
    summary = run_command("--model", "tiny-gpt2", "--dataset", "cp", "--wait")
    assert summary["status"] == "done"
    assert set(PairScore.objects.values_list("method", flat=True)) == {"causal"}
    out = tmp_path / "scores.csv"
    call_command("export_pair_scores", "--dataset", "cp", "--model", "tiny-gpt2", "--out", str(out),
                 stdout=io.StringIO())  # fmt: skip
    assert len(out.read_text().splitlines()) == 6


def test_it_resumes_where_its_rows_stop_and_never_writes_a_pair_twice(dataset, tiny_bert_dir):
    model = registered("tiny-bert", tiny_bert_dir)
    job = job_create(kind="pair_score", model=model, dataset="cp", batch_size=2, options={"method": "pll"}, queue=False)
    first = JobChunk.objects.filter(job=job).order_by("index").first()
    from generation.jobs.chunks import chunk_run

    chunk_run(chunk_id=first.pk)
    assert PairScore.objects.filter(job=job).count() == len(first.unit_ids)
    job = job_resume(job_id=job.pk, queue=False)
    job = job_run(job_id=job.pk)
    assert job.status == JobStatus.DONE and (job.done_units, job.done_items) == (5, 5)
    assert PairScore.objects.count() == 5
    # A second job over the same pairs, model and method finds them scored.
    again = job_create(kind="pair_score", model=model, dataset="cp", options={"method": "pll"}, queue=False)
    assert job_run(job_id=again.pk).status == JobStatus.DONE and PairScore.objects.count() == 5


def test_a_cancelled_job_writes_nothing_more(dataset, tiny_bert_dir):
    model = registered("tiny-bert", tiny_bert_dir)
    job = job_create(kind="pair_score", model=model, dataset="cp", options={"method": "pll"}, queue=False)
    job_cancel(job=job)
    assert job_run(job_id=job.pk).status == JobStatus.CANCELLED
    assert not PairScore.objects.exists()


def test_it_refuses_a_dataset_that_is_not_of_pairs_and_an_unknown_method(dataset, tiny_bert_dir, tmp_path):
    registered("tiny-bert", tiny_bert_dir)
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("pair_score", "--model", "tiny-bert", "--dataset", "cp", "--method", "bleu")
    from generation.jobs.services import JobParameterError

    with pytest.raises(JobParameterError, match="unknown method"):
        job_create(kind="pair_score", model="tiny-bert", dataset="cp", options={"method": "bleu"}, queue=False)
    with pytest.raises(CommandError, match="needs a dataset of stereotype pairs|unknown dataset|no dataset"):
        call_command("pair_score", "--model", "tiny-bert", "--dataset", "nope")


def test_the_jobs_page_datasets_page_and_api_show_a_pair_score_job(dataset, tiny_bert_dir, client, admin_user, api):
    model = registered("tiny-bert", tiny_bert_dir)
    job = job_create(kind="pair_score", model=model, dataset="cp", options={"method": "pll"}, queue=False)
    client.force_login(admin_user)
    page = client.get("/generation/jobs/")
    assert page.status_code == 200
    assert "pair scores of cp by tiny-bert (pll)" in page.content.decode()
    assert client.get("/generation/datasets/").status_code == 200
    api.force_authenticate(admin_user)
    body = api.get(f"/api/generation-jobs/{job.pk}/").json()
    assert body["kind"] == "pair_score" and body["options"]["method"] == "pll"


def test_the_jobs_api_creates_a_pair_score_job(dataset, tiny_bert_dir, admin_user, api, settings):
    registered("tiny-bert", tiny_bert_dir)
    api.force_authenticate(admin_user)
    refused = api.post("/api/generation-jobs/", {"kind": "pair_score", "model": "tiny-bert", "dataset": "cp",
                                                 "options": {"method": "bleu"}}, format="json")  # fmt: skip
    assert refused.status_code == 400 and "unknown method" in refused.content.decode()
    response = api.post("/api/generation-jobs/", {"kind": "pair_score", "model": "tiny-bert", "dataset": "cp",
                                                  "options": {"method": "pll"}}, format="json")  # fmt: skip
    assert response.status_code in (201, 202), response.content
    assert response.json()["kind"] == "pair_score" and response.json()["total_units"] == 5


# --- a model behind an endpoint ------------------------------------------------------------------------------------


@pytest.fixture
def server(settings):
    from tests.endpoint_servers import TinyServer

    settings.CONCORD_ENDPOINT_BACKOFF_SECONDS = 0.01
    tiny = TinyServer()
    yield tiny
    tiny.close()


def _endpoint(server) -> None:
    call_command("model_add", "tiny-api", "--base-url", server.url, "--model", "tiny", stdout=io.StringIO(),
                 stderr=io.StringIO())  # fmt: skip


def _tiny_log_prob(text: str) -> float:
    """The tiny server's prompt log-probs (tests/endpoint_servers.py) summed: -0.1 per character of each word after
    the first, less 0.01 times its position (the first word stands where BOS's None is)."""
    words = text.split(" ")
    return sum(-0.1 * len(word) - 0.01 * i for i, word in enumerate(words[1:], 1))


def test_it_scores_pairs_causally_from_an_endpoints_prompt_logprobs_each_reply_stored_once(dataset, server):
    from generation.models import EndpointReply

    _endpoint(server)
    before = len(server.posts())
    summary = run_command("--model", "tiny-api", "--dataset", "cp", "--wait")
    assert summary["status"] == "done" and summary["scored"] == 5
    scores = list(PairScore.objects.select_related("pair").filter(model="tiny-api").order_by("pair__ordinal"))
    assert {frozenset((s.pair.stereotypical, s.pair.anti_stereotypical)) for s in scores} == {
        frozenset(row[1:3]) for row in ROWS
    }
    for score in scores:
        assert score.method == "causal"
        assert score.score_stereotypical == pytest.approx(_tiny_log_prob(score.pair.stereotypical))
        assert score.score_anti_stereotypical == pytest.approx(_tiny_log_prob(score.pair.anti_stereotypical))
    asked = server.posts()[before:]
    assert len(asked) == 10 and all(r["prompt_logprobs"] == 0 and r["max_tokens"] == 1 for r in asked)
    # Scored again from scratch, every reply is read from the store: nothing is sent.
    PairScore.objects.all().delete()
    again = run_command("--model", "tiny-api", "--dataset", "cp", "--wait")
    assert again["scored"] == 5 and len(server.posts()) == before + 10 and EndpointReply.objects.count() == 10


def test_pair_scoring_on_an_endpoint_without_prompt_logprobs_or_by_pll_is_refused_at_creation(dataset, server):
    from generation.jobs.services import JobParameterError
    from generation.models import Job

    server.prompt_logprobs = False
    _endpoint(server)
    with pytest.raises(CommandError, match="gives no prompt log-probs, which causal pair scoring needs"):
        run_command("--model", "tiny-api", "--dataset", "cp")
    with pytest.raises(JobParameterError, match="pll scores with a masked LM's local weights"):
        job_create(kind="pair_score", model="tiny-api", dataset="cp", options={"method": "pll"}, queue=False)
    assert not Job.objects.exists()
