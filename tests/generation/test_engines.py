"""Generation engines (generation/engines/): the job's `engine` parameter and the worker's CONCORD_ENGINE, the
checks at job creation, and the chunk runner sampling with the job's engine. vLLM itself is not installed in the
main environment; its end-to-end tests are in test_vllm_engine.py (marker `vllm`)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from generation.engines import EngineUnavailable, engine_check, engine_installed, engine_name
from generation.engines.vllm import request_seed
from generation.jobs.services import JobParameterError, job_create, job_run
from generation.models import Generation, LanguageModel
from tests.generation.test_recovery import TINY, FakeModel

VLLM_INSTALLED = engine_installed("vllm")


@pytest.fixture
def hub_model(db):
    return LanguageModel.objects.create(name="hub-model", source_kind="hub", source="org/model", device="auto")


@pytest.mark.django_db
class TestEngineChoice:
    def test_a_job_without_an_engine_runs_on_the_workers(self, settings):
        settings.CONCORD_ENGINE = "hf"
        assert engine_name(None) == engine_name("") == "hf"
        settings.CONCORD_ENGINE = "vllm"
        assert engine_name(None) == "vllm"
        assert engine_name("hf") == "hf"

    def test_it_stores_the_engine_a_job_names(self, smollm2, demo_ruff):
        job = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, engine="hf", **TINY)
        assert job.generation_run.engine == "hf" and job.options == {}
        default = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, **TINY)
        assert default.generation_run.engine == ""

    def test_it_refuses_an_unknown_engine_naming_the_field(self, smollm2, demo_ruff):
        with pytest.raises(JobParameterError) as caught:
            job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, engine="onnx")
        assert set(caught.value.errors) == {"engine"}


@pytest.mark.django_db
class TestChecksAtJobCreation:
    @pytest.mark.skipif(VLLM_INSTALLED, reason="vllm is installed here")
    def test_it_refuses_vllm_where_it_is_not_installed_and_writes_nothing(self, hub_model, demo_ruff):
        with pytest.raises(JobParameterError) as caught:
            job_create(model="hub-model", dataset="demo-ruff", queue=False, engine="vllm")
        assert "vllm engine is not installed" in caught.value.errors["engine"]
        assert not hub_model.jobs.exists()

    def test_it_refuses_vllm_with_a_gguf_only_hub_model(self, db, settings):
        settings.CONCORD_ENGINE_CHECK = "off"
        model = LanguageModel.objects.create(
            name="gguf-hub", source_kind="hub", source="org/m-GGUF", gguf_file="m.gguf"
        )
        with pytest.raises(EngineUnavailable, match="GGUF file of a hub repository"):
            engine_check(engine="vllm", language_model=model)

    def test_it_refuses_vllm_with_a_gguf_model_when_no_converted_copy_is_kept(self, smollm2, settings):
        settings.CONCORD_ENGINE_CHECK = "off"
        settings.CONCORD_CONVERTED_MODELS_DIR = ""
        with pytest.raises(EngineUnavailable, match="GGUF only.*CONCORD_CONVERTED_MODELS_DIR"):
            engine_check(engine="vllm", language_model=LanguageModel.objects.get(name="smollm2-135m"))

    def test_it_refuses_beam_search_and_4_bit_models_on_vllm(self, hub_model, settings):
        settings.CONCORD_ENGINE_CHECK = "off"
        with pytest.raises(EngineUnavailable, match="one beam"):
            engine_check(engine="vllm", language_model=hub_model, num_beams=2)
        hub_model.load_in_4bit = True
        with pytest.raises(EngineUnavailable, match="4 bits"):
            engine_check(engine="vllm", language_model=hub_model)

    def test_it_refuses_a_device_this_host_does_not_have(self, db, demo_ruff):
        import torch

        index = torch.cuda.device_count() if torch.cuda.is_available() else 0
        LanguageModel.objects.create(name="far-gpu", source_kind="hub", source="org/model", device=f"cuda:{index}")
        with pytest.raises(JobParameterError) as caught:
            job_create(model="far-gpu", dataset="demo-ruff", queue=False, engine="hf")
        assert f"asks for device 'cuda:{index}'" in caught.value.errors["engine"]

    def test_a_web_host_for_remote_workers_leaves_installation_and_devices_to_them(self, hub_model, settings):
        settings.CONCORD_ENGINE_CHECK = "off"
        assert engine_check(engine="vllm", language_model=hub_model) == "vllm"

    def test_the_generate_command_takes_engine_and_says_what_is_wrong(self, smollm2, demo_ruff):
        with pytest.raises(CommandError, match="engine"):
            call_command("generate", "--dataset=demo-ruff", "--engine=onnx", stdout=StringIO(), stderr=StringIO())

    def test_the_api_answers_400_naming_the_engine(self, smollm2, demo_ruff, api, admin_user):
        api.force_authenticate(admin_user)
        response = api.post(
            "/api/generation-jobs/", {"model": "smollm2-135m", "dataset": "demo-ruff", "engine": "onnx"}, format="json"
        )
        assert response.status_code == 400
        assert "engine" in response.json()


def test_each_request_of_a_chunk_has_its_own_seed_and_the_same_one_again():
    seeds = [request_seed(12345, index) for index in range(100)]
    assert len(set(seeds)) == 100 and all(0 <= s < 2**32 for s in seeds)
    assert seeds == [request_seed(12345, index) for index in range(100)]
    assert request_seed(12346, 0) not in seeds


@pytest.mark.django_db
def test_the_chunk_runner_samples_with_the_jobs_engine(smollm2, demo_ruff, monkeypatch, settings):
    """A job that names vllm is sampled by the vllm engine (here a stand-in), and stores the same rows as hf."""
    from generation.engines import vllm
    from generation.engines.hf import engine as hf

    fake = FakeModel()
    asked: list[tuple] = []

    def vllm_sample(self, *, language_model, loaded, contexts, decoding, seed):
        asked.append((language_model.name, len(contexts), seed))
        return fake.sample(loaded=loaded, contexts=contexts, decoding=decoding, seed=seed)

    settings.CONCORD_ENGINE_CHECK = "off"
    monkeypatch.setattr(hf, "model_load", lambda **kwargs: object())
    monkeypatch.setattr(hf, "score_instances", fake.score)
    monkeypatch.setattr(hf, "sample_continuations", fake.sample)
    monkeypatch.setattr(hf, "sample_groups", fake.sample_groups)
    monkeypatch.setattr(vllm.VllmEngine, "sample", vllm_sample)
    on_vllm = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, engine="vllm", **TINY)
    on_hf = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, engine="hf", **TINY)

    job_run(job_id=on_vllm.pk)
    job_run(job_id=on_hf.pk)

    assert asked and all(name == "smollm2-135m" for name, _, _ in asked)
    assert len(asked) == on_vllm.chunks.count() * 2  # once per chunk and setting
    rows = {
        job.pk: sorted(
            Generation.objects.filter(job=job).values_list("instance_id", "setting", "sample_index", "continuation")
        )
        for job in (on_vllm, on_hf)
    }
    assert rows[on_vllm.pk] == rows[on_hf.pk] and len(rows[on_hf.pk]) == 16


@pytest.mark.django_db
def test_a_chunk_of_a_vllm_job_is_routed_to_the_gpu_queue(smollm2, demo_ruff, settings):
    from config.celery import app
    from generation.engines.routing import CHUNK_TASK

    settings.CONCORD_ENGINE_CHECK = "off"
    on_vllm = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, engine="vllm", **TINY)
    on_hf = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, engine="hf", **TINY)
    default = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, **TINY)

    def queue_of(job) -> str:
        chunk = job.chunks.order_by("index").first()
        return app.amqp.router.route({}, CHUNK_TASK, args=(chunk.pk,), kwargs={})["queue"].name

    assert queue_of(on_vllm) == "generation-gpu"
    assert queue_of(on_hf) == queue_of(default) == "generation"


def test_the_engines_are_named_only_by_their_registry():
    """No module branches on an engine's name: outside generation/engines/ the only name written is the default of
    CONCORD_ENGINE in config/settings.py."""
    import ast

    from generation.engines import ENGINES
    from tests.conftest import REPO
    from tests.source_trees import source_tree
    from tests.test_architecture import LAYERS

    named = []
    for top in LAYERS:
        for path in (REPO / top).rglob("*.py"):
            relative = path.relative_to(REPO)
            if "migrations" in relative.parts or relative.parts[:2] == ("generation", "engines"):
                continue
            for node in ast.walk(source_tree(path)):
                if isinstance(node, ast.Constant) and node.value in ENGINES:
                    named.append((str(relative), node.value))
    assert named == [("config/settings.py", "hf")]


def test_a_worker_whose_engine_is_not_registered_does_not_start(settings):
    from django.apps import apps
    from django.core.exceptions import ImproperlyConfigured

    settings.CONCORD_ENGINE = "onnx"
    with pytest.raises(ImproperlyConfigured, match="CONCORD_ENGINE='onnx' is not an engine: use one of hf, vllm"):
        apps.get_app_config("generation").ready()


def test_every_registered_engine_is_a_choice_of_the_jobs_engine_parameter():
    from generation.engines import ENGINES
    from generation.parameters import JobParametersSerializer

    assert list(JobParametersSerializer().fields["engine"].choices) == list(ENGINES)


def test_every_registered_engine_implements_each_method_of_the_interface():
    import importlib

    from generation.engines import ENGINES
    from generation.engines.base import ModelEngine

    wanted = {"load", "sample", "score", "answer", "score_texts"}
    assert wanted <= {name for name in vars(ModelEngine) if not name.startswith("_")}
    for engine in ENGINES.values():
        module, attribute = engine.engine_path.split(":")
        implementation = getattr(importlib.import_module(module), attribute)
        missing = {name for name in wanted if not callable(getattr(implementation, name, None))}
        assert not missing, f"engine {engine.name} lacks {missing}"
