"""The offline default model: a tiny Qwen3 built from a config (docs/design.md §5).

The model is a :class:`~transformers.Qwen3ForCausalLM` built from a small config (not Qwen2: its
tokenizer class would replace ours), initialised deterministically from a seed, for the tokenizer
trained on the environments' text (:mod:`rspo.core.policies.tokenizer`).

>>> from rspo.core.policies.tokenizer import default_tokenizer
>>> from rspo.core.policies.tiny import build_tiny_model
>>> tok = default_tokenizer()              # trained once (seconds), then read from the cache
>>> model = build_tiny_model(tok, seed=0)  # 1.28M parameters (0.79M of them the tied embedding)

The warm-started default policy (supervised on expert demonstrations) is :func:`rspo.core.sft.load_or_build_default`;
:func:`untrained_tiny_policy` gives a randomly initialised one in under two seconds, for smoke tests.
"""

from __future__ import annotations

from rspo.core.policies.tokenizer import MODEL_MAX_LENGTH, small_tokenizer

# The tiny model (docs/design.md §5): 2 layers, grouped-query attention, tied embeddings. Weights start at
# std 0.08 (about 1/sqrt(hidden)), not transformers' 0.02: at this width 0.02 gives near-uniform
# outputs, and the warm start needed about twice the steps to reach the same loss.
TINY_MODEL = dict(
    initializer_range=0.08,
    hidden_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    intermediate_size=512,
    max_position_embeddings=MODEL_MAX_LENGTH,
    tie_word_embeddings=True,
)


def tiny_config(tokenizer, **overrides):
    """The :class:`~transformers.Qwen3Config` of the tiny model for ``tokenizer`` (``overrides`` win)."""
    from transformers import Qwen3Config

    fields = dict(TINY_MODEL, **overrides)
    return Qwen3Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        attn_implementation="sdpa",
        **fields,
    )


def build_tiny_model(tokenizer, seed: int = 0, **overrides):
    """A randomly initialised :class:`~transformers.Qwen3ForCausalLM` (float32); the same ``seed`` gives
    the same weights. The global torch RNG is left as it was."""
    import torch
    from transformers import Qwen3ForCausalLM

    config = tiny_config(tokenizer, **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model.eval()


def untrained_tiny_policy(seed: int = 0, action_mode: str = "score", **policy_options):
    """An :class:`~rspo.core.policies.lm.LMPolicy` on a randomly initialised tiny model and
    :func:`small_tokenizer` - fast (under two seconds), for smoke tests of rollouts and trainers."""
    from rspo.core.policies.lm import LMPolicy

    tok = small_tokenizer()
    return LMPolicy(build_tiny_model(tok, seed=seed), tok, action_mode=action_mode, **policy_options)
