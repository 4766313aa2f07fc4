"""rspo.core.sft: the warm start (SFT on expert demonstrations), its cache, cache key and demonstrations."""

from __future__ import annotations

import json
import time

import pytest
import torch

import rspo.core.envs
from rspo.core import atomic, sft
from rspo.core.policies import tiny, tokenizer
from rspo.core.rollout import expert_demonstrations


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """An empty cache root; the default tokenizer replaced by the small one (fast)."""
    monkeypatch.setenv("RSPO_CACHE", str(tmp_path))
    monkeypatch.setattr(
        sft, "default_tokenizer", lambda vocab_size=0, family="default": tokenizer.small_tokenizer()
    )
    return tmp_path


def _completion_loss(policy, data) -> float:
    """Mean NLL per completion token of the (prompt, completion) texts (no gradient)."""
    tok, total, n = policy.tokenizer, 0.0, 0
    with torch.no_grad():
        for prompt, completion in zip(data["prompt"], data["completion"], strict=True):
            p = tok(prompt, add_special_tokens=False)["input_ids"]
            c = tok(completion, add_special_tokens=False)["input_ids"]
            logits = policy.model(torch.tensor([p + c])).logits[0, len(p) - 1 : -1]  # (len(c), V)
            total += torch.nn.functional.cross_entropy(logits, torch.tensor(c), reduction="sum").item()
            n += len(c)
    return total / n


def test_sft_lowers_completion_loss_and_changes_parameters():
    policy = tiny.untrained_tiny_policy(seed=0)
    config = sft.WarmStartConfig(
        env="household", n_demo_tasks=2, max_steps=6, batch_size=4, learning_rate=3e-3
    )
    data = sft.demo_texts(policy, config)
    assert data["completion"][0].endswith("<|im_end|>")
    assert data["prompt"][0].startswith("<|im_start|>user\n") and data["prompt"][0].endswith("assistant\n")
    rows = sft.demo_dataset(policy, config)  # what TRL trains on: the policy's own tokens
    assert len(rows) == len(data["prompt"])
    first = policy.tokenizer(data["prompt"][0] + data["completion"][0], add_special_tokens=False)["input_ids"]
    assert rows[0]["input_ids"] == first
    n = len(policy.tokenizer(data["completion"][0], add_special_tokens=False)["input_ids"])
    assert rows[0]["completion_mask"] == [0] * (len(first) - n) + [1] * n
    before_params = [p.detach().clone() for p in policy.model.parameters()]
    before = _completion_loss(policy, data)
    stats = sft.warm_start(policy, config, log_every=1)
    after = _completion_loss(policy, data)
    assert stats["steps"] == 6 and len(stats["losses"]) == 6
    assert all(torch.isfinite(torch.tensor(stats["losses"])))
    assert after < before - 0.5
    assert any(not torch.equal(a, b) for a, b in zip(before_params, policy.model.parameters(), strict=True))
    assert not policy.model.training


def test_cache_builds_once_then_loads(cache, monkeypatch):
    config = sft.WarmStartConfig(env="shop", n_demo_tasks=1, max_steps=1, batch_size=2)
    calls = []
    real = sft.warm_start

    def counting(policy, cfg, **kw):
        calls.append(cfg)
        return real(policy, cfg, **kw)

    monkeypatch.setattr(sft, "warm_start", counting)
    path = sft.default_policy_path("shop", config)
    assert path.parent == cache and not path.exists()
    first = sft.load_or_build_default("shop", config=config, evaluate=False)
    assert len(calls) == 1 and path.is_dir()
    record = json.loads((path / "warmstart.json").read_text())
    assert record["config"]["env"] == "shop" and record["build_s"] > 0 and "eval" not in record
    assert sft.warmstart_record("shop", config) == record and (path / "rspo_policy.json").is_file()
    assert sft.prompt_settings("shop", config) == {"history": 2, "show_admissible": True}
    second = sft.load_or_build_default("shop", action_mode="generate", config=config, evaluate=False)
    assert len(calls) == 1 and second.action_mode == "generate"
    x = torch.randint(0, len(first.tokenizer), (1, 9))
    with torch.no_grad():
        assert torch.equal(first.model(x).logits, second.model(x).logits)
    assert sorted(p.name for p in cache.iterdir()) == [path.name]  # no temporary folders left


def test_failed_build_leaves_no_cache(cache, monkeypatch):
    def boom(policy, cfg, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(sft, "warm_start", boom)
    config = sft.WarmStartConfig(env="household", n_demo_tasks=1, max_steps=1)
    with pytest.raises(KeyboardInterrupt):
        sft.load_or_build_default("household", config=config, evaluate=False)
    assert not sft.default_policy_path("household", config).exists()
    assert [p.name for p in cache.iterdir() if p.name.startswith("default-")] == []

    class Boom(RuntimeError):
        pass

    with pytest.raises(Boom), atomic.atomic_dir(cache / "x") as tmp:
        (tmp / "half").write_text("written")
        raise Boom
    assert list(cache.iterdir()) == []


def test_cache_key_depends_on_config(cache):
    base = sft.default_config("household")
    keys = {
        sft.default_policy_path("household", base),
        sft.default_policy_path("household", sft.WarmStartConfig(**{**base.__dict__, "seed": 1})),
        sft.default_policy_path("household", sft.WarmStartConfig(**{**base.__dict__, "learning_rate": 1e-3})),
        sft.default_policy_path("shop"),
    }
    assert len(keys) == 4
    assert sft.default_policy_path("household") == sft.default_policy_path("household", base)
    with pytest.raises(ValueError, match="config is for env"):
        sft.default_policy_path("shop", base)
    with pytest.raises(ValueError, match="unknown environment"):
        sft.WarmStartConfig(env="nope")


def test_random_play_demonstrations_and_every_action_targets():
    ids = rspo.core.envs.make("detour", split="train").task_ids[:20]
    expert = expert_demonstrations("detour", "train", ids)
    assert len(expert) == 20 * rspo.core.envs.make("detour").length
    rand = expert_demonstrations("detour", "train", ids, random_frac=1.0, seed=3)
    assert rand != expert and all(a in cands for _, cands, a in rand)
    assert rand == expert_demonstrations("detour", "train", ids, random_frac=1.0, seed=3)
    cfg = sft.default_config("detour")
    assert 0 < cfg.random_frac < 1 and cfg.every_action and cfg.tokenizer_family == "detour"
    cfg = sft.WarmStartConfig(env="detour", n_demo_tasks=3, random_frac=1.0, every_action=True)
    demos = sft._demos(cfg)
    prompts = {p for p, _, _ in demos}
    for prompt in prompts:  # each visited state once per admissible action, each action once
        rows = [(c, a) for p, c, a in demos if p == prompt]
        assert sorted(a for _, a in rows) == sorted(rows[0][0]) * (len(rows) // len(rows[0][0]))
    with pytest.raises(ValueError, match="random_frac"):
        sft.WarmStartConfig(env="detour", random_frac=1.5)


def test_expert_only_warm_start_keys_are_unchanged_by_the_added_fields():
    # household and shop warm starts built before random_frac / every_action / env_options existed stay
    # valid: their key is the hash of the spec as it was then (the config without the three fields)
    import hashlib

    for env in ("household", "shop"):
        cfg = sft.default_config(env)
        old = {
            k: v
            for k, v in sft.dataclasses.asdict(cfg).items()
            if k not in ("random_frac", "every_action", "env_options")
        }
        spec = {
            "version": sft.SFT_VERSION,
            "config": old,
            "model": tiny.TINY_MODEL,
            "tokenizer": tokenizer.tokenizer_key(cfg.vocab_size),
        }
        assert (
            sft.cache_key(cfg) == hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
        )
        changed = sft.WarmStartConfig(
            env=env, random_frac=0.5, **rspo.core.envs.spec(env).warm_start_fields()
        )
        assert sft.cache_key(changed) != sft.cache_key(cfg)
    # the lab's study-1 warm start keeps the key its protocol names (docs/lab/protocol.md)
    assert sft.cache_key(sft.default_config("detour")) == "f05b6229478a"
    assert sft.default_config("detour", {"lure": 1.0, "milestones": 0.2}) == sft.default_config("detour")
    longer = sft.default_config("detour", {"length": 7, "lure": 1.0})
    assert longer.env_options == {"length": 7} and sft.cache_key(longer) != "f05b6229478a"


def test_heartbeat_says_what_runs_at_once_and_then_every_period():
    import io
    import time

    from rspo.core.sft import heartbeat

    out = io.StringIO()
    with heartbeat("measuring", every=0.05, stream=out):
        time.sleep(0.18)
    lines = out.getvalue().splitlines()
    assert lines[0] == "measuring ..."
    assert 2 <= len(lines) - 1 <= 4 and all(line.startswith("  ... measuring: ") for line in lines[1:])
    n = len(lines)
    time.sleep(0.12)
    assert len(out.getvalue().splitlines()) == n  # stopped with the block


def test_the_warm_starts_silent_data_phase_says_what_runs(monkeypatch):
    """Playing and tokenizing the demonstrations comes before the warm start's bar: minutes on a busy
    machine, so it runs inside a heartbeat (found silent for 4 minutes under load)."""
    import contextlib

    import rspo.core.sft as sft

    said = []

    @contextlib.contextmanager
    def fake(what, **kw):
        said.append(what)
        yield

    def stop(policy, config):
        assert said, "the demonstrations are built before anything is said"
        raise RuntimeError("stop here")

    monkeypatch.setattr(sft, "heartbeat", fake)
    monkeypatch.setattr(sft, "demo_dataset", stop)
    with pytest.raises(RuntimeError, match="stop here"):
        sft.warm_start(object(), sft.default_config("detour"))
    assert said == ["warm start of detour: playing and tokenizing the demonstrations"]


def test_a_heartbeat_can_leave_the_opening_line_to_its_caller():
    """rspo reproduce says "[k/n] NN.ipynb ..." itself; its heartbeat only adds the beats."""
    import io

    from rspo.core.sft import heartbeat

    out = io.StringIO()
    with heartbeat("05 running", every=0.05, stream=out, announce=False):
        time.sleep(0.2)
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith("  ... 05 running: ") for line in lines)
