"""Generate mode: sample replies token by token with a KV cache, batched over prompts.

A plain temperature-sampling loop rather than ``model.generate``: RL needs the exact log-prob of every
sampled token under the distribution it was drawn from, ``log_softmax(logits / T)[token]``, and
sampling that is reproducible from a ``torch.Generator``. No top-k / top-p: truncated sampling would
make the behaviour log-probs disagree with the teacher-forced ones of
:meth:`rspo.core.policies.lm.LMPolicy.logprobs`.

Prompts are left-padded; the attention mask is the same additive 4-D mask as in
:mod:`rspo.core.policies.scoring` (padding attends to itself only), so the same code path serves sdpa and
eager attention and padded rows never produce NaN.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from rspo.core.policies.base import ActionSample, PolicyOutput, TurnInput
from rspo.core.policies.parser import parse_action
from rspo.core.policies.scoring import PAD, PROMPT, attention_bias, score_rows


@dataclass
class Generation:
    """Sampled replies of a batch of prompts (``B`` prompts)."""

    tokens: list[list[int]]  # B lists: the sampled ids, the stop token included when one was sampled
    logprobs: list[list[float]]  # B lists: log_softmax(logits / T) at each sampled token
    prompt_hidden: torch.Tensor | None  # (B, H) final hidden state at the last prompt token, if asked


def _cache_kwarg(model: torch.nn.Module) -> str:
    """Name of the KV-cache argument: ``cache`` in recent transformers 5.x, else ``past_key_values``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"


def sample_from(
    logp: torch.Tensor, *, greedy: bool, generator: torch.Generator | None
) -> torch.Tensor:  # (B, V) -> (B,)
    """Argmax, or one draw per row from ``exp(logp)`` using ``generator`` (on the generator's device)."""
    if greedy:
        return logp.argmax(-1)
    probs = logp.exp()
    if generator is not None and generator.device != probs.device:
        return (
            torch.multinomial(probs.to(generator.device), 1, generator=generator).squeeze(1).to(logp.device)
        )
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


@torch.no_grad()
def generate(
    model: torch.nn.Module,
    prompts: list[list[int]],
    *,
    stop_ids: set[int],
    pad_id: int,
    max_new_tokens: int = 48,
    temperature: float = 1.0,
    greedy: bool = False,
    generator: torch.Generator | None = None,
    hidden: bool = False,
) -> Generation:
    """Sample up to ``max_new_tokens`` tokens after each prompt; a row stops at its first stop token."""
    from transformers import DynamicCache

    embed = model.get_input_embeddings().weight
    device, dtype = embed.device, embed.dtype
    b, p = len(prompts), max(len(x) for x in prompts)
    ids = torch.full((b, p), pad_id, dtype=torch.long)
    segment = torch.full((b, p), PAD, dtype=torch.long)
    position = torch.zeros((b, p), dtype=torch.long)
    for r, prompt in enumerate(prompts):
        ids[r, p - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        segment[r, p - len(prompt) :] = PROMPT
        position[r, p - len(prompt) :] = torch.arange(len(prompt))
    ids, segment, position = ids.to(device), segment.to(device), position.to(device)
    lengths = torch.tensor([len(x) for x in prompts], device=device)  # (B,)
    key_ok = segment != PAD  # (B, P) keys a real query may attend
    cache = DynamicCache(config=model.config)
    cache_arg = _cache_kwarg(model)

    out = model(
        input_ids=ids,
        attention_mask=attention_bias(segment, dtype),
        position_ids=position,
        logits_to_keep=1,
        output_hidden_states=hidden,
        use_cache=True,
        **{cache_arg: cache},
    )
    prompt_hidden = out.hidden_states[-1][:, -1] if hidden else None  # (B, H)
    stop = torch.tensor(sorted(stop_ids), dtype=torch.long, device=device)
    tokens: list[list[int]] = [[] for _ in range(b)]
    logprobs: list[list[float]] = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool, device=device)
    for step in range(max_new_tokens):
        logp = torch.log_softmax(out.logits[:, -1].float() / temperature, dim=-1)  # (B, V)
        tok = sample_from(logp, greedy=greedy, generator=generator)  # (B,)
        tok_logp = logp.gather(1, tok[:, None]).squeeze(1)  # (B,)
        for r, (t, lp, d) in enumerate(zip(tok.tolist(), tok_logp.tolist(), done.tolist(), strict=True)):
            if not d:
                tokens[r].append(t)
                logprobs[r].append(lp)
        done |= torch.isin(tok, stop)
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        key_ok = torch.cat([key_ok, torch.ones((b, 1), dtype=torch.bool, device=device)], dim=1)
        bias = torch.zeros(key_ok.shape, dtype=dtype, device=device).masked_fill_(
            ~key_ok, torch.finfo(dtype).min
        )
        out = model(
            input_ids=torch.where(done, pad_id, tok)[:, None],  # (B, 1)
            attention_mask=bias[:, None, None, :],  # (B, 1, 1, P + step + 1)
            position_ids=(lengths + step)[:, None],  # (B, 1)
            use_cache=True,
            **{cache_arg: cache},
        )
    return Generation(tokens, logprobs, prompt_hidden)


# --------------------------------------------------------------------- LMPolicy's generate mode


def act_generate(policy, prompts, candidates, greedy, temperature, generator) -> list[ActionSample]:
    """:meth:`LMPolicy.act` in generate mode: sample, decode, parse (``micro_batch`` prompts at a time)."""
    samples: list[ActionSample] = []
    encoded = [policy.encode_prompt(p) for p in prompts]
    stop, step = policy.stop_ids, max(1, policy.micro_batch)
    for lo in range(0, len(prompts), step):
        gen = generate(
            policy.model,
            encoded[lo : lo + step],
            stop_ids=stop,
            pad_id=policy.pad_id,
            max_new_tokens=policy.max_new_tokens,
            temperature=temperature,
            greedy=greedy,
            generator=generator,
            hidden=policy.value_head is not None,
        )
        values = policy.values_of(gen.prompt_hidden).tolist() if gen.prompt_hidden is not None else None
        for j, (ids, lps) in enumerate(zip(gen.tokens, gen.logprobs, strict=True)):
            text = policy.tokenizer.decode([i for i in ids if i not in stop], skip_special_tokens=True)
            action, valid = parse_action(text, candidates[lo + j] if candidates else None)
            value = values[j] if values is not None else None
            samples.append(ActionSample(action, valid, ids, lps, None, value, text))
    return samples


def logprobs_generate(
    policy, model, turns: list[TurnInput], temperature: float, values: bool
) -> PolicyOutput:
    """:meth:`LMPolicy.logprobs` in generate mode: teacher-forced log-probs of each turn's ``action_ids``."""
    rows = score_rows(
        model,
        [policy.encode_prompt(x.prompt) for x in turns],
        [[list(x.action_ids)] if x.action_ids else [] for x in turns],
        pad_id=policy.pad_id,
        micro_batch=policy.micro_batch,
        temperature=temperature,
        entropy=True,
        hidden=values,
    )
    device = policy.device
    empty = torch.zeros(0, device=device)
    toks = [row.token_logp[0] if row.token_logp else empty for row in rows]  # N x (L_i,)
    width = max([1] + [len(x) for x in toks])
    logp = torch.stack([torch.nn.functional.pad(x, (0, width - len(x))) for x in toks])  # (N, L)
    lengths = torch.tensor([len(x) for x in toks], device=device)  # (N,)
    mask = torch.arange(width, device=device)[None, :] < lengths[:, None]  # (N, L)
    entropy = torch.stack([r.token_entropy[0].mean() if r.token_logp else empty.sum() for r in rows])  # (N,)
    vals = policy.values_of(torch.stack([r.hidden for r in rows])) if values else None  # (N,)
    return PolicyOutput(logp, mask, entropy, vals)
