"""rspo.core.policies.scoring: candidates scored in one forward pass over a shared prompt (a 4-D attention
mask) equal one full forward per candidate; the head split and when it is refused. On a tiny local
model; LMPolicy's use of it: tests/test_lm.py."""

from __future__ import annotations

import copy

import pytest
import torch
from tiny_fixtures import cases, household_texts, make_model, make_tokenizer

from rspo.core.policies import LMPolicy
from rspo.core.policies.scoring import head_split, pack_rows, score_rows, score_segments


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny model is fastest on one thread (and the CI machine is shared)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def demos():
    return household_texts(4)


@pytest.fixture(scope="module")
def tokenizer(demos):
    texts = [p for p, _, _ in demos] + [a for _, _, a in demos] + ["<action>go to fridge 1</action>"]
    return make_tokenizer(texts)


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_model(tokenizer)


@pytest.fixture(scope="module")
def policy(model, tokenizer):
    return LMPolicy(model, tokenizer, micro_batch=3)


def naive_scores(model, policy, prompt, candidates):
    """One full forward per (prompt, candidate), no mask, no padding."""
    p = policy.encode_prompt(prompt)
    scores = []
    for cand in candidates:
        c = policy.encode_completion(cand)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p + c])).logits[0]  # (T, V)
        logp = torch.log_softmax(logits.float(), -1)[len(p) - 1 : -1]  # rows predicting c
        scores.append(logp.gather(1, torch.tensor(c)[:, None]).sum())
    return torch.stack(scores)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_shared_prompt_scoring_equals_naive(demos, model, policy, attn):
    model.set_attn_implementation(attn)
    try:
        pairs = cases(demos)
        assert max(len(c) for _, c in pairs) >= 40 and min(len(c) for _, c in pairs) == 1
        with torch.no_grad():
            rows = score_rows(
                model,
                [policy.encode_prompt(p) for p, _ in pairs],
                [[policy.encode_completion(a) for a in c] for _, c in pairs],
                pad_id=policy.pad_id,
                micro_batch=3,
            )
        for (prompt, cands), row in zip(pairs, rows, strict=True):
            assert torch.isfinite(row.sums).all()
            torch.testing.assert_close(
                row.sums, naive_scores(model, policy, prompt, cands), atol=1e-4, rtol=1e-5
            )
    finally:
        model.set_attn_implementation("sdpa")


class Wrapped(torch.nn.Module):
    """``model`` behind its own forward, its logits times ``scale``; no decoder/head parts unless
    ``parts`` - so :func:`head_split` must either find the scale or not be offered the split."""

    def __init__(self, model, scale=1.0, parts=True):
        super().__init__()
        self.inner, self.scale, self.parts = model, scale, parts

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def get_decoder(self):
        return self.inner.get_decoder() if self.parts else None

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings() if self.parts else None

    def forward(self, **kwargs):
        out = self.inner(**kwargs)
        out.logits = out.logits * self.scale
        return out


def packed(demos, policy):
    pairs = cases(demos)[:3]
    return pack_rows(
        [policy.encode_prompt(p) for p, _ in pairs],
        [[policy.encode_completion(a) for a in c] for _, c in pairs],
        policy.pad_id,
    )


def test_head_split_scores_and_gradients_equal_the_full_forward(demos, model, policy):
    batch = packed(demos, policy)
    assert head_split(model, batch) is not None  # a plain Qwen3: logits = lm_head(final norm output)
    own = Wrapped(model, parts=False)  # the same model through its own forward
    assert head_split(own, batch) is None
    results = []
    for m in (model, own):
        model.zero_grad(set_to_none=True)
        out = score_segments(m, batch, temperature=1.7, entropy=True, hidden=True)
        (out.token_logp.sum() + out.token_entropy.sum() + out.prompt_hidden.sum()).backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        results.append((out, grads))
    (a, ga), (b, gb) = results
    assert len(ga) == len(gb) > 0
    for x, y in [(a.token_logp, b.token_logp), (a.token_entropy, b.token_entropy)]:
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.prompt_hidden, b.prompt_hidden)
    for x, y in zip(ga, gb, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-4)
    model.zero_grad(set_to_none=True)


def test_a_model_that_scales_its_logits_is_scored_through_its_own_forward(demos, model, policy):
    batch = packed(demos, policy)
    scaled = Wrapped(model, scale=0.5)  # offers the parts, but its logits are not head(hidden)
    assert head_split(scaled, batch) is None
    was = model.training
    model.train()  # the check runs in eval mode and restores the caller's mode
    assert head_split(Wrapped(model, scale=0.5), batch) is None and model.training
    model.train(was)
    capped = copy.deepcopy(model)
    capped.config.final_logit_softcapping = 30.0  # a config that says so is not split (Qwen3 ignores it)
    assert head_split(capped, batch) is None
    with torch.no_grad():
        got = score_segments(scaled, batch).token_logp
        plain = score_segments(model, batch, temperature=2.0).token_logp  # logits / 2 = logits * 0.5
    torch.testing.assert_close(got, plain, atol=1e-5, rtol=1e-5)


def test_one_row_per_candidate_layout_equals_shared(demos, model, policy):
    prompt, cands, _ = demos[3]
    p, cs = policy.encode_prompt(prompt), [policy.encode_completion(a) for a in cands]
    with torch.no_grad():
        shared = score_rows(model, [p], [cs], pad_id=policy.pad_id)[0].sums
        rows = score_rows(model, [p] * len(cs), [[c] for c in cs], pad_id=policy.pad_id, micro_batch=7)
    torch.testing.assert_close(shared, torch.cat([r.sums for r in rows]), atol=1e-4, rtol=1e-5)
