"""Shared-prompt scoring: the log-probs of several continuations of one prompt in ONE row of a forward pass.

Score mode needs ``log p(candidate | prompt)`` for every admissible action (often 20-40 of them). Instead
of one row per (prompt, candidate) - which re-encodes the prompt for every candidate - a row holds the
prompt once, followed by all candidates, and a 4-D attention mask keeps the candidates apart::

    columns     [pad pad | p0 p1 p2 p3 | a0 a1 | b0 b1 b2 | pad]
    segment     [ -1  -1 |  0  0  0  0 |  1  1 |  2  2  2 |  -1]
    position    [  0   0 |  0  1  2  3 |  4  5 |  4  5  6 |   0]

- query ``i`` attends key ``j`` iff ``j <= i`` and (``j`` is a prompt token, or ``i`` and ``j`` are in the
  same segment): each candidate sees the prompt and its own earlier tokens, never another candidate;
- every segment continues the positions from ``len(prompt)``, as if it were the only continuation;
- prompts are left-padded so that every row's last prompt token is at the same column (``start - 1``):
  the logits of all candidate tokens then lie in the last ``T - start + 1`` columns, and the model is
  asked for those logits only (``logits_to_keep``) - never for the prompt's ``(B, P, V)`` logits;
- better still, where a model's logits are its output head applied to its decoder's last hidden state
  (checked once per model, :func:`head_split`), the decoder runs alone and the head sees only the ``M``
  columns that predict a continuation token: no ``(B, T - start + 1, V)`` logits are made and indexed,
  nor, in the backward pass, scattered back (``benchmarks/bench_scoring_head.py`` measures the gain);
- a padding column attends to itself only, so no softmax row is empty (an all-masked row gives NaN).

The mask is additive (0 where allowed, the dtype's minimum elsewhere), which both the ``sdpa`` and the
``eager`` attention of transformers add to the attention scores as they are; flash-attention kernels take
no such mask, so :class:`rspo.core.policies.lm.LMPolicy` refuses them. The same layout with a single segment
per row is the teacher-forced scoring of generate mode, and with one row per candidate the naive
baseline the speed-up is measured against (the tests check them all against plain forward passes).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

PAD, PROMPT = -1, 0  # segment ids of padding and prompt columns; continuations are 1, 2, ...


@dataclass
class SegmentBatch:
    """Rows of ``prompt + continuations``, packed for one forward pass.

    ============  ======  ==================================================================
    field         shape   meaning
    ============  ======  ==================================================================
    input_ids     (B, T)  token ids (padding: ``pad_id``)
    position_ids  (B, T)  positions; each continuation restarts at its row's prompt length
    segment       (B, T)  -1 padding, 0 prompt, k >= 1 the row's k-th continuation
    start         int     first continuation column; ``start - 1`` is every row's last prompt token
    tok_row       (M,)    row of each continuation token (M = all continuation tokens)
    tok_src       (M,)    column whose logits predict the token (the previous token's column)
    tok_id        (M,)    the token id
    tok_seg       (M,)    global index of the token's continuation (row-major over the input)
    n_segments    int     number of continuations in the batch
    ============  ======  ==================================================================
    """

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    segment: torch.Tensor
    start: int
    tok_row: torch.Tensor
    tok_src: torch.Tensor
    tok_id: torch.Tensor
    tok_seg: torch.Tensor
    n_segments: int


def pack_rows(prompts: list[list[int]], continuations: list[list[list[int]]], pad_id: int) -> SegmentBatch:
    """Pack ``prompts[r]`` followed by each of ``continuations[r]`` into row ``r`` (layout above)."""
    if len(prompts) != len(continuations):
        raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuation lists")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    start = max(len(p) for p in prompts)
    width = start + max((sum(len(c) for c in conts) for conts in continuations), default=0)
    ids, pos, seg = [], [], []
    tok_row, tok_src, tok_id, tok_seg = [], [], [], []
    n_seg = 0
    for r, (prompt, conts) in enumerate(zip(prompts, continuations, strict=True)):
        pad = start - len(prompt)
        row_ids, row_pos, row_seg = [pad_id] * pad + list(prompt), [0] * pad, [PAD] * pad
        row_pos += list(range(len(prompt)))
        row_seg += [PROMPT] * len(prompt)
        for k, cont in enumerate(conts):
            col = len(row_ids)
            row_ids += cont
            row_pos += range(len(prompt), len(prompt) + len(cont))
            row_seg += [k + 1] * len(cont)
            for t, token in enumerate(cont):
                tok_row.append(r)
                tok_src.append(start - 1 if t == 0 else col + t - 1)
                tok_id.append(token)
                tok_seg.append(n_seg)
            n_seg += 1
        fill = width - len(row_ids)
        ids.append(row_ids + [pad_id] * fill)
        pos.append(row_pos + [0] * fill)
        seg.append(row_seg + [PAD] * fill)

    def long(x: list) -> torch.Tensor:
        return torch.tensor(x, dtype=torch.long)

    return SegmentBatch(
        long(ids),
        long(pos),
        long(seg),
        start,
        long(tok_row),
        long(tok_src),
        long(tok_id),
        long(tok_seg),
        n_seg,
    )


def attention_bias(segment: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive 4-D mask ``(B, 1, T, T)`` of a segment layout: 0 where query i may attend key j."""
    t = segment.shape[1]
    idx = torch.arange(t, device=segment.device)
    causal = idx[None, :, None] >= idx[None, None, :]  # (1, T, T): key j <= query i
    q, k = segment[:, :, None], segment[:, None, :]  # (B, T, 1), (B, 1, T)
    allowed = causal & (k != PAD) & (q != PAD) & ((k == PROMPT) | (k == q))  # (B, T, T)
    allowed |= torch.eye(t, dtype=torch.bool, device=segment.device)  # padding attends to itself
    bias = torch.zeros(allowed.shape, dtype=dtype, device=segment.device)
    bias.masked_fill_(~allowed, torch.finfo(dtype).min)
    return bias[:, None]  # (B, 1, T, T)


@dataclass
class SegmentScores:
    """What one packed forward returns (``M`` continuation tokens, ``B`` rows)."""

    token_logp: torch.Tensor  # (M,) log-prob of each continuation token at the temperature
    token_entropy: torch.Tensor | None  # (M,) entropy of the next-token distribution, if asked
    prompt_hidden: torch.Tensor | None  # (B, H) final hidden state at each row's last prompt token


_HEAD_SPLIT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> the check's verdict
# config fields of transformers models that change logits after the head (Gemma 2's tanh cap, Cohere's
# and Granite's scales): a cap is near the identity on small logits, so the numerical check alone could
# pass early in training (in bf16 above all) and be wrong later
_LOGIT_MODIFIERS = ("final_logit_softcapping", "logit_scale", "logits_scaling")


def _inputs(model: torch.nn.Module, batch: SegmentBatch) -> dict:
    """The keyword arguments of a forward over a packed batch, on the model's device and dtype."""
    embed = model.get_input_embeddings().weight
    return dict(
        input_ids=batch.input_ids.to(embed.device),
        attention_mask=attention_bias(batch.segment.to(embed.device), embed.dtype),
        position_ids=batch.position_ids.to(embed.device),
        use_cache=False,
    )


def _forward_kept(model: torch.nn.Module, batch: SegmentBatch, hidden: bool):
    """The model's own forward: logits of columns ``start - 1 .. T - 1`` (+ hidden states if asked)."""
    keep = batch.input_ids.shape[1] - batch.start + 1
    return model(**_inputs(model, batch), logits_to_keep=keep, output_hidden_states=hidden)


def _decoder_hidden(decoder: torch.nn.Module, model: torch.nn.Module, batch: SegmentBatch) -> torch.Tensor:
    """The decoder's last hidden state ``(B, T, H)`` of a packed batch (no output head)."""
    return decoder(**_inputs(model, batch)).last_hidden_state


def head_split(model: torch.nn.Module, batch: SegmentBatch):
    """``(decoder, head)`` when ``model``'s logits equal ``head(decoder(...).last_hidden_state)`` on
    ``batch``, else None (a model that scales or caps its logits, or has no such parts). Checked once per
    model, in eval mode (dropout off) and without gradient, against the model's own forward; a config
    that names a logit cap or scale (``_LOGIT_MODIFIERS``) is never split."""
    verdict = _HEAD_SPLIT.get(model)
    if verdict is not None:
        return (model.get_decoder(), model.get_output_embeddings()) if verdict else None
    ok = False
    get_decoder = getattr(model, "get_decoder", None)
    get_head = getattr(model, "get_output_embeddings", None)
    decoder = get_decoder() if callable(get_decoder) else None
    head = get_head() if callable(get_head) else None
    config = getattr(model, "config", None)
    modified = any(getattr(config, k, None) not in (None, 1, 1.0) for k in _LOGIT_MODIFIERS)
    if decoder is not None and head is not None and not modified:
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                want = _forward_kept(model, batch, hidden=False).logits.float()
                h = _decoder_hidden(decoder, model, batch)[:, batch.start - 1 :]
                got = head(h).float()
            tol = 1e-4 if h.dtype == torch.float32 else 3e-2
            ok = got.shape == want.shape and torch.allclose(got, want, rtol=tol, atol=tol * want.abs().max())
        except (TypeError, ValueError, RuntimeError, AttributeError):
            ok = False
        finally:
            model.train(was_training)
    _HEAD_SPLIT[model] = ok
    return (decoder, head) if ok else None


def score_segments(
    model: torch.nn.Module,
    batch: SegmentBatch,
    *,
    temperature: float = 1.0,
    entropy: bool = False,
    hidden: bool = False,
) -> SegmentScores:
    """One forward pass over a packed batch; per-token log-probs of every continuation token.

    ``token_logp[m] = log_softmax(logits[tok_row[m], tok_src[m]] / temperature)[tok_id[m]]``. Gradients
    flow unless the caller disables them.
    """
    device = model.get_input_embeddings().weight.device
    rows, src, ids = batch.tok_row.to(device), batch.tok_src.to(device), batch.tok_id.to(device)
    split = head_split(model, batch)
    if split is not None:  # the head on the M predicting columns only
        decoder, head = split
        states = _decoder_hidden(decoder, model, batch)  # (B, T, H)
        logits = head(states[rows, src]).float()  # (M, V)
        prompt_hidden = states[:, batch.start - 1] if hidden else None  # (B, H)
    else:  # the model's own forward, logits of the kept columns
        out = _forward_kept(model, batch, hidden)
        logits = out.logits[rows, src - (batch.start - 1)].float()  # (M, V)
        prompt_hidden = out.hidden_states[-1][:, batch.start - 1] if hidden else None  # (B, H)
    if temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)  # (M, V)
    token_logp = logp_all.gather(1, ids[:, None]).squeeze(1)  # (M,)
    token_entropy = -(logp_all.exp() * logp_all).sum(-1) if entropy else None  # (M,)
    return SegmentScores(token_logp, token_entropy, prompt_hidden)


def segment_sums(values: torch.Tensor, batch: SegmentBatch) -> torch.Tensor:
    """Sum per-token ``values (M,)`` over each continuation -> ``(n_segments,)``."""
    out = torch.zeros(batch.n_segments, dtype=values.dtype, device=values.device)
    return out.index_add(0, batch.tok_seg.to(values.device), values)


@dataclass
class RowResult:
    """The scores of one input row: its prompt and its K continuations."""

    sums: torch.Tensor  # (K,) summed log-prob of each continuation
    token_logp: list[torch.Tensor]  # K tensors (len_k,): per-token log-probs
    token_entropy: list[torch.Tensor] | None  # K tensors (len_k,), if asked
    hidden: torch.Tensor | None  # (H,) final hidden state at the last prompt token, if asked


def score_rows(
    model: torch.nn.Module,
    prompts: list[list[int]],
    continuations: list[list[list[int]]],
    *,
    pad_id: int,
    micro_batch: int = 16,
    temperature: float = 1.0,
    entropy: bool = False,
    hidden: bool = False,
) -> list[RowResult]:
    """Score every ``continuations[r][k]`` after ``prompts[r]``, ``micro_batch`` rows per forward.

    Rows are sorted by length before they are cut into micro-batches (less padding) and returned in the
    input order. Gradients flow unless the caller disables them.
    """
    lengths = [len(p) + sum(len(c) for c in conts) for p, conts in zip(prompts, continuations, strict=True)]
    order = sorted(range(len(prompts)), key=lambda r: -lengths[r])
    results: list[RowResult | None] = [None] * len(prompts)
    for lo in range(0, len(order), max(1, micro_batch)):
        chunk = order[lo : lo + max(1, micro_batch)]
        batch = pack_rows([prompts[r] for r in chunk], [continuations[r] for r in chunk], pad_id)
        out = score_segments(model, batch, temperature=temperature, entropy=entropy, hidden=hidden)
        sums = segment_sums(out.token_logp, batch)  # (n_segments,)
        seg_len = [len(c) for r in chunk for c in continuations[r]]
        tok_logp = list(out.token_logp.split(seg_len))
        tok_ent = list(out.token_entropy.split(seg_len)) if entropy else None
        first = 0
        for b, r in enumerate(chunk):
            k = len(continuations[r])
            results[r] = RowResult(
                sums=sums[first : first + k],
                token_logp=tok_logp[first : first + k],
                token_entropy=tok_ent[first : first + k] if tok_ent is not None else None,
                hidden=out.prompt_hidden[b] if hidden else None,
            )
            first += k
    return results  # type: ignore[return-value]
