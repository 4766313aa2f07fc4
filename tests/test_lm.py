"""rspo.core.policies.lm: LMPolicy in score and generate mode (rspo.core.policies.generation), LoRA, the value
head, save and load, on a tiny local model. Shared-prompt scoring (rspo.core.policies.scoring):
tests/test_scoring.py; the action parser (rspo.core.policies.parser): tests/test_parser.py."""

from __future__ import annotations

import copy

import pytest
import torch
from tiny_fixtures import cases, household_texts, make_model, make_tokenizer

from rspo.core.policies import LMPolicy, Policy, TurnInput, default_lora_config


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


def test_score_distribution_greedy_and_determinism(demos, policy):
    pairs = cases(demos)
    prompts, cands = [p for p, _ in pairs], [c for _, c in pairs]
    logps = policy.candidate_logprobs(prompts, cands, temperature=2.0)
    for lp in logps:
        assert torch.isclose(lp.exp().sum(), torch.tensor(1.0), atol=1e-5)
    greedy = policy.act(prompts, cands, greedy=True, temperature=2.0)
    for s, lp, c in zip(greedy, logps, cands, strict=True):
        assert s.choice == int(lp.argmax()) and s.action == c[s.choice] and s.valid_format
        assert s.token_logprobs == pytest.approx([float(lp.max())], abs=1e-5)
        assert s.action_ids == policy.encode_completion(s.action)
    draw = [policy.act(prompts, cands, generator=torch.Generator().manual_seed(7)) for _ in range(2)]
    assert [s.choice for s in draw[0]] == [s.choice for s in draw[1]]


def test_sampling_follows_the_distribution(demos, policy):
    prompt = demos[2][0]
    cands = [f"go to drawer {i}" for i in range(1, 6)] + ["look", "inventory"]
    temperature = 4.0
    probs = policy.candidate_logprobs([prompt], [cands], temperature=temperature)[0].exp().detach()
    assert probs.max() < 0.9  # a distribution worth testing
    n = 3000
    samples = policy.act(
        [prompt] * n, [cands] * n, temperature=temperature, generator=torch.Generator().manual_seed(0)
    )
    freq = torch.bincount(torch.tensor([s.choice for s in samples]), minlength=len(cands)).float() / n
    assert (freq - probs).abs().max() < 4 * (0.25 / n) ** 0.5  # 4 standard errors at worst


def test_act_logprob_equals_evaluate_logprob_score(demos, policy):
    pairs = cases(demos)
    prompts, cands = [p for p, _ in pairs], [c for _, c in pairs]
    samples = policy.act(prompts, cands, temperature=0.7, generator=torch.Generator().manual_seed(1))
    turns = [TurnInput(p, c, s.choice, s.action_ids) for p, c, s in zip(prompts, cands, samples, strict=True)]
    out = policy.logprobs(turns, temperature=0.7)
    assert out.logp.shape == (len(turns), 1) and out.mask.all() and out.values is None
    torch.testing.assert_close(out.logp[:, 0], torch.tensor([s.logprob for s in samples]), atol=1e-5, rtol=0)
    policy.temperature = 0.7  # the attribute is the default temperature of evaluate
    try:
        torch.testing.assert_close(policy.logprobs(turns).logp, out.logp)
    finally:
        policy.temperature = 1.0
    lp = policy.candidate_logprobs(prompts[:1], cands[:1], temperature=0.7)[0]
    torch.testing.assert_close(out.entropy[0], -(lp.exp() * lp).sum())


def test_evaluate_gradients_and_reference_copy(demos, model, tokenizer):
    pol = LMPolicy(copy.deepcopy(model), tokenizer)
    assert isinstance(pol, Policy)
    turns = [TurnInput(p, c, len(c) // 2) for p, c, _ in demos[2:6]]
    ref_before = pol.logprobs(turns, reference=True).logp
    assert not ref_before.requires_grad
    out = pol.logprobs(turns)
    assert out.logp.requires_grad
    out.logp.sum().backward()
    grads = [p.grad for p in pol.trainable_parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)
    torch.optim.SGD(pol.trainable_parameters(), lr=1.0).step()
    after = pol.logprobs(turns).logp.detach()
    assert (after - out.logp.detach()).abs().max() > 1e-3  # the policy moved
    torch.testing.assert_close(pol.logprobs(turns, reference=True).logp, ref_before)  # the reference did not


def test_lora_only_adapters_trainable_and_reference_is_base(demos, model, tokenizer):
    from peft import get_peft_model

    peft_model = get_peft_model(copy.deepcopy(model), default_lora_config(model, lora_dropout=0.0))
    pol = LMPolicy(peft_model, tokenizer, value_head=True)
    assert pol.reference_model is None
    names = {id(p): n for n, p in peft_model.named_parameters()}
    trainable = pol.trainable_parameters()
    assert all("lora_" in names[id(p)] for p in trainable if id(p) in names)
    assert sum(id(p) not in names for p in trainable) == 2  # value head weight and bias
    turns = [TurnInput(p, c, 0) for p, c, _ in demos[2:5]]
    base = LMPolicy(model, tokenizer).logprobs(turns).logp.detach()
    ref_before = pol.logprobs(turns, reference=True).logp
    torch.testing.assert_close(ref_before, base)
    torch.testing.assert_close(pol.logprobs(turns).logp.detach(), base)  # LoRA B = 0 at init
    opt = torch.optim.Adam(trainable, lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        out = pol.logprobs(turns, values=True)
        (-out.logp.sum() + out.values.square().sum()).backward()
        opt.step()
    assert (pol.logprobs(turns).logp.detach() - base).abs().max() > 1e-4
    torch.testing.assert_close(pol.logprobs(turns, reference=True).logp, ref_before)


def test_value_head_shapes(demos, model, tokenizer):
    pol = LMPolicy(model, tokenizer, value_head=True, reference_model=model)
    prompts, cands = [p for p, _, _ in demos[:3]], [c for _, c, _ in demos[:3]]
    samples = pol.act(prompts, cands)
    assert [s.value for s in samples] == [0.0, 0.0, 0.0]  # zero-initialised
    out = pol.logprobs([TurnInput(p, c, 0) for p, c in zip(prompts, cands, strict=True)], values=True)
    assert out.values.shape == (3,) and out.values.dtype == torch.float32
    out.values.sum().backward()
    assert pol.value_head.weight.grad.abs().sum() > 0
    assert any(p is pol.value_head.weight for p in pol.trainable_parameters())


def test_save_and_load_round_trip(tmp_path, demos, model, tokenizer):
    pol = LMPolicy(copy.deepcopy(model), tokenizer, value_head=True, temperature=0.5)
    torch.nn.init.normal_(pol.value_head.weight)
    turns = [TurnInput(p, c, 1) for p, c, _ in demos[2:5]]
    before = pol.logprobs(turns, values=True)
    pol.save_pretrained(tmp_path / "full")
    loaded = LMPolicy.from_pretrained(tmp_path / "full")
    assert loaded.settings() == pol.settings()
    after = loaded.logprobs(turns, values=True)
    torch.testing.assert_close(after.logp, before.logp)
    torch.testing.assert_close(after.values, before.values)


def test_lora_save_and_load_round_trip(tmp_path, demos, model, tokenizer):
    pol = LMPolicy(copy.deepcopy(model), tokenizer)
    pol.save_pretrained(tmp_path / "base_model")
    lora = LMPolicy.from_pretrained(tmp_path / "base_model", lora={"r": 4, "lora_dropout": 0.0})
    assert lora.is_peft
    with torch.no_grad():  # move the adapter away from the identity
        for n, p in lora.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    turns = [TurnInput(p, c, 1) for p, c, _ in demos[2:5]]
    before = lora.logprobs(turns).logp.detach()
    lora.save_pretrained(tmp_path / "adapter")
    assert not (tmp_path / "adapter" / "base").exists()  # the base is referenced by its path
    loaded = LMPolicy.from_pretrained(tmp_path / "adapter")
    assert loaded.is_peft and all("lora_" in n for n, p in loaded.model.named_parameters() if p.requires_grad)
    torch.testing.assert_close(loaded.logprobs(turns).logp, before)
    # an adapter on an in-memory base (no path) carries its base along
    from peft import get_peft_model

    mem = LMPolicy(get_peft_model(copy.deepcopy(model), default_lora_config(model, r=4)), tokenizer)
    mem.save_pretrained(tmp_path / "mem")
    assert (tmp_path / "mem" / "base" / "config.json").is_file()
    torch.testing.assert_close(
        LMPolicy.from_pretrained(tmp_path / "mem").logprobs(turns).logp, mem.logprobs(turns).logp
    )


def test_flash_attention_is_refused(tokenizer):
    from types import SimpleNamespace

    stub = SimpleNamespace(config=SimpleNamespace(_attn_implementation="flash_attention_2"))
    with pytest.raises(ValueError, match="sdpa"):
        LMPolicy(stub, tokenizer)


def test_prompt_truncation_keeps_template_ends(demos, model, tokenizer):
    pol = LMPolicy(model, tokenizer, max_prompt_tokens=64, reference_model=model)
    prompt = demos[3][0]
    ids = pol.encode_prompt(prompt)
    head, tail = pol._encode("<|im_start|>user\n"), pol._encode("<|im_end|>\n<|im_start|>assistant\n")
    assert len(ids) == 64 and ids[: len(head)] == head and ids[-len(tail) :] == tail
    assert pol.act([prompt], [demos[3][1]])[0].valid_format


# ------------------------------------------------------------------------------------- generate mode


@pytest.fixture(scope="module")
def gen_policy(model, tokenizer):
    return LMPolicy(model, tokenizer, action_mode="generate", max_new_tokens=10, reference_model=model)


def test_generate_act_equals_evaluate_and_is_deterministic(demos, gen_policy):
    prompts = [demos[0][0], "look", demos[3][0]]  # different lengths: left padding
    cands = [d[1] for d in demos[:3]]
    runs = [
        gen_policy.act(prompts, cands, temperature=0.8, generator=torch.Generator().manual_seed(3))
        for _ in "ab"
    ]
    assert [s.action_ids for s in runs[0]] == [s.action_ids for s in runs[1]]
    samples = runs[0]
    for s in samples:
        assert 1 <= len(s.action_ids) <= 10 and len(s.token_logprobs) == len(s.action_ids)
        assert all(lp <= 0 for lp in s.token_logprobs)
    turns = [TurnInput(p, None, None, s.action_ids) for p, s in zip(prompts, samples, strict=True)]
    out = gen_policy.logprobs(turns, temperature=0.8)
    width = max(len(s.action_ids) for s in samples)
    assert out.logp.shape == (3, width) and out.mask.sum(1).tolist() == [len(s.action_ids) for s in samples]
    expected = torch.zeros(3, width)
    for i, s in enumerate(samples):
        expected[i, : len(s.token_logprobs)] = torch.tensor(s.token_logprobs)
    torch.testing.assert_close(out.logp.detach() * out.mask, expected, atol=1e-4, rtol=0)
    assert torch.isfinite(out.entropy).all() and out.logp.requires_grad


def test_generate_batched_greedy_equals_one_by_one(demos, gen_policy):
    prompts = [demos[0][0], "look", demos[3][0]]
    batched = gen_policy.act(prompts, [[]] * 3, greedy=True)
    single = [gen_policy.act([p], [[]], greedy=True)[0] for p in prompts]
    assert [s.action_ids for s in batched] == [s.action_ids for s in single]
    for a, b in zip(batched, single, strict=True):
        assert a.token_logprobs == pytest.approx(b.token_logprobs, abs=1e-4)


def forced(model, tokenizer, replies: list[str]):
    """A copy of ``model`` whose reply to row r of a batch is ``replies[r]`` then ``<|im_end|>``."""
    stub = copy.deepcopy(model)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    scripts = [tokenizer(r, add_special_tokens=False)["input_ids"] + [end] for r in replies]
    inner, state = stub.forward, {}

    def forward(*args, **kwargs):
        out = inner(*args, **kwargs)
        pos = kwargs["position_ids"][:, -1]  # (B,)
        if kwargs["input_ids"].shape[1] > 1:
            state["base"] = pos.clone()  # prefill: the last prompt token predicts reply token 0
        step = (pos - state["base"]).tolist()
        logits = torch.full_like(out.logits[:, -1:], -1e4)
        for r, k in enumerate(step):
            logits[r, 0, scripts[r][min(k, len(scripts[r]) - 1)]] = 1e4
        out.logits = logits
        return out

    stub.forward = forward
    return stub


def test_generate_parses_malformed_output(demos, model, tokenizer):
    cands = ["go to fridge 1", "open fridge 1", "look"]
    replies = {
        "I see a fridge. <action>GO TO Fridge 1.</action>": ("go to fridge 1", True),
        "<action>open fridge 1": ("open fridge 1", True),
        'Action: "look"': ("look", True),
        "<action>fly to the moon</action>": ("fly to the moon", False),
        "!!! ...": ("", False),
        "<action></action>": ("", False),
    }
    stub = forced(model, tokenizer, list(replies))
    pol = LMPolicy(stub, tokenizer, action_mode="generate", max_new_tokens=40, reference_model=stub)
    samples = pol.act([demos[0][0]] * len(replies), [cands] * len(replies))
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for s, (text, expected) in zip(samples, replies.items(), strict=True):
        assert s.text == text and (s.action, s.valid_format) == expected
        assert s.action_ids[-1] == end and s.choice is None
