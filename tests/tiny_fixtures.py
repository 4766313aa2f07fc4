"""A tiny Qwen3 model and a byte-level BPE tokenizer trained here, for the policy tests (no downloads)."""

from __future__ import annotations

import torch

SPECIAL_TOKENS = ["<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def household_texts(n_tasks: int = 4) -> list[tuple[str, list[str], str]]:
    """(prompt, admissible actions, expert action) of the expert on the first household train tasks."""
    import rspo.core.envs
    from rspo.core.rollout import expert_demonstrations

    ids = rspo.core.envs.make("household", split="train").task_ids[:n_tasks]
    return expert_demonstrations("household", "train", ids)


def make_tokenizer(texts: list[str], vocab_size: int = 600):
    """Byte-level BPE (lossless decode) with ChatML special tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|pad|>",
        chat_template=CHAT_TEMPLATE,
    )


def make_model(tokenizer, hidden: int = 64, layers: int = 2, seed: int = 0, attn: str = "sdpa"):
    """A randomly initialised tiny Qwen3 causal LM (fp32, CPU)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=hidden // 4,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        attn_implementation=attn,
    )
    model = Qwen3ForCausalLM(config)
    # Random init gives near-uniform next-token distributions; larger weights make them peaked.
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(4.0)
    return model.eval()


def with_successes(real):
    """Wrap a reward mode so that the first copy of every task succeeds at its last turn (a synthetic
    outcome: an untrained model never succeeds, and every group would be without signal)."""

    def mode(episodes, spec):
        rewards = real(episodes, spec)
        for ep, r in zip(episodes, rewards, strict=True):
            if ep.copy == 0:
                r[-1] += spec.outcome_scale
        return rewards

    return mode


def file_snapshot(root) -> set:
    """Every file under ``root`` with its size and modification time: equal snapshots mean nothing was
    written there."""
    from pathlib import Path

    root = Path(root)
    return {(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def cases(demos):
    """Prompts of different lengths with 1..40 candidates, including a candidate that prefixes another."""
    long = max(demos, key=lambda d: len(d[1]))
    out = [(p, c) for p, c, _ in demos[2:5]] + [(long[0], long[1])]
    out.append(("look", ["look"]))
    out.append((demos[0][0], ["go to cabinet", "go to cabinet 1", "go to cabinet 10", "go"]))
    out.append((demos[1][0], [f"go to drawer {i}" for i in range(1, 41)]))
    return out
