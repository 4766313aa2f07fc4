"""rspo.core.policies.tiny: the tiny Qwen3 (size, determinism, save and reload) and the untrained policy.

The tokenizer it is built for: tests/test_tokenizer.py; the warm start: tests/test_sft.py."""

from __future__ import annotations

import time

import pytest
import torch

from rspo.core.policies import tiny, tokenizer


@pytest.fixture(scope="module")
def tok():
    return tokenizer.small_tokenizer()


def test_tiny_model_size_determinism_and_save_reload(tok, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = tiny.build_tiny_model(tok, seed=0)
    c = model.config
    assert type(model).__name__ == "Qwen3ForCausalLM" and c._attn_implementation == "sdpa"
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads) == (
        128,
        2,
        4,
        2,
    )
    per_layer = 128 * 128 * 2 + 128 * 64 * 2 + 3 * 128 * 512 + 2 * 128 + 2 * 32  # attn, mlp, norms
    assert sum(p.numel() for p in model.parameters()) == len(tok) * 128 + 2 * per_layer + 128
    x = torch.randint(0, len(tok), (2, 12))
    same = tiny.build_tiny_model(tok, seed=0)
    assert torch.equal(model(x).logits, same(x).logits)
    assert not torch.equal(model(x).logits, tiny.build_tiny_model(tok, seed=1)(x).logits)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    back = AutoModelForCausalLM.from_pretrained(tmp_path)
    tok2 = AutoTokenizer.from_pretrained(tmp_path)
    with torch.no_grad():
        assert torch.equal(model(x).logits, back(x).logits)
    assert tok2.backend_tokenizer.to_str() == tok.backend_tokenizer.to_str()
    assert tok2.chat_template == tok.chat_template


def test_untrained_policy_is_fast_and_acts():
    t0 = time.perf_counter()
    policy = tiny.untrained_tiny_policy(seed=0)
    assert time.perf_counter() - t0 < 5.0  # < 2 s alone; slack for a loaded machine
    samples = policy.act(["Your task is to: look."], [["look", "inventory"]], greedy=True)
    assert samples[0].action in ("look", "inventory") and samples[0].valid_format
    assert policy.completion_text("look") == "look<|im_end|>"
