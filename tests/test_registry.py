"""The registries (rspo.core.registry.ESTIMATORS, rspo.core.envs.ENVS): a toy estimator and a toy environment, each
one entry in a temporary registry, train one iteration; the named choices agree everywhere."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

import rspo.core.envs
from rspo.core import advantages, config, losses, policies, profiles, registry, sft
from rspo.core.config import REWARDS, TrainConfig
from rspo.core.envs.base import TextEnv
from rspo.core.envs.registry import ENVS, EnvSpec
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.prompts import build_prompt
from rspo.core.registry import ESTIMATORS, Estimator, Registry
from rspo.core.trainer import Trainer
from rspo.study import experiments

pytestmark = pytest.mark.usefixtures("one_thread")

SEEN: list[dict] = []  # the options the toy estimator was called with


def toy_advantage(task_ids, traj_ids, episode_returns, *, scale=1.0):
    """Each trajectory's return minus its group's mean, times ``scale`` (a toy estimator)."""
    SEEN.append({"scale": scale})
    ret = torch.as_tensor(episode_returns, dtype=torch.float64)
    group = torch.unique(torch.as_tensor(task_ids), return_inverse=True)[1]
    mean = torch.zeros(int(group.max()) + 1, dtype=torch.float64).index_add_(0, group, ret)
    mean = mean / torch.bincount(group).double()
    return (scale * (ret - mean[group])).float()


class ToyEnv(TextEnv):
    """Say the colour the task names: one of two actions wins, the other loses (a toy environment)."""

    name = "toy"
    splits = ("train", "test")
    eval_splits = ("test",)
    default_max_steps = 3

    def _split_task_ids(self, split):
        return [f"{split}/{i:03d}" for i in range(8 if split == "train" else 4)]

    def _load_task(self, task_id):
        self.target = ("red", "blue")[int(task_id[-1]) % 2]
        self.won = False
        return "Two doors: red and blue."

    def _step(self, action):
        valid = action in ("say red", "say blue")
        self.won = action == f"say {self.target}"
        return ("You win." if self.won else "Wrong."), float(self.won), self.won, valid, 0.1 * valid

    def _info_extra(self):
        return {
            "task": f"say {self.target}",
            "admissible_actions": ["say red", "say blue"],
            "anchor": f"{self.target}:{self.steps}",
            "won": self.won,
            "progress": float(self.won),
        }

    def expert_action(self):
        return f"say {self.target}"


TOY_ENV = EnvSpec(
    "toy",
    ToyEnv,
    intro="You stand before two doors. Your task is to: {task}",
    history=1,
    show_admissible=True,
    warm_start=dict(n_demo_tasks=4, max_steps=2),
    tokenizer_family="toy",
)
TOY_ESTIMATOR = Estimator("toy_centred", toy_advantage, algo="toy", options={"scale": "omega"})


def one_iteration(tmp_path, **kw) -> list[dict]:
    kw = {"tasks_per_iter": 2, "group_size": 2, **kw}
    cfg = TrainConfig(
        iterations=1,
        max_steps=3,
        temperature=50.0,  # near-uniform choices: the copies of a task differ
        eval_every=0,
        out_dir=str(tmp_path),
        progress=False,
        lr=1e-3,
        micro_batch=8,
        **kw,
    )
    policy = untrained_tiny_policy(0, value_head=cfg.critic)
    before = [p.detach().clone() for p in policy.trainable_parameters()]
    rows = Trainer(cfg, policy=policy).run()
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.trainable_parameters(), strict=True))
    return rows


def test_a_toy_estimator_is_one_function_and_one_entry(tmp_path, first_copy_succeeds):
    SEEN.clear()
    with pytest.raises(ValueError, match="choose one of: grpo, ppo, gigpo, rloo, turn_level"):
        TrainConfig(algo="toy")
    with ESTIMATORS.temporary(TOY_ESTIMATOR):
        cfg = TrainConfig(env="household", algo="toy", omega=0.5, out_dir=str(tmp_path))
        assert cfg.estimator == "toy_centred" and not cfg.critic and "toy" in registry.algorithms()
        rows = one_iteration(tmp_path, env="household", algo="toy", omega=0.5)
    assert len(rows) == 1 and rows[0]["adv/abs_mean"] > 0 and rows[0]["loss/steps"] >= 1
    assert SEEN and all(s == {"scale": 0.5} for s in SEEN)  # its option, read from TrainConfig.omega
    assert "toy_centred" not in ESTIMATORS and "toy" not in registry.algorithms()  # restored
    with pytest.raises(ValueError, match="unknown advantage estimator 'toy_centred'"):
        advantages.compute_advantages("toy_centred", {})


def test_a_toy_environment_is_its_class_and_one_entry(tmp_path, first_copy_succeeds, monkeypatch):
    with pytest.raises(ValueError, match="unknown environment 'toy'"):
        rspo.core.envs.make("toy")
    with ENVS.temporary(TOY_ENV):
        assert rspo.core.envs.list_envs() == ["detour", "household", "shop", "toy"]
        assert isinstance(rspo.core.envs.make("toy", split="test"), ToyEnv)
        # what hangs off the entry: prompts, the warm start's settings, the tokenizer family; and its
        # settings in a profile are one entry of rspo.core.profiles
        monkeypatch.setitem(profiles.TRAIN_PROFILES["smoke"], "toy", dict(max_steps=2))
        assert build_prompt("toy", "say red", 0, "o", ["say red"]).startswith("You stand before two doors.")
        assert TrainConfig(env="toy").history == 1
        assert sft.prompt_settings("toy") == {"history": 1, "show_admissible": True}
        assert (
            sft.default_config("toy").max_steps == 2 and sft.default_config("toy").tokenizer_family == "toy"
        )
        from rspo.core.policies import tokenizer

        assert tokenizer.family_envs("toy") == ["toy"] and "toy" not in tokenizer.family_envs()
        assert experiments.run_config("smoke", "toy", "grpo", "outcome", 0, tmp_path).max_steps == 2
        rows = one_iteration(tmp_path, env="toy", algo="gigpo", reward="dense", show_admissible="auto")
    assert len(rows) == 1 and rows[0]["rollout/episodes"] == 4 and rows[0]["adv/abs_mean"] > 0
    assert "toy" not in rspo.core.envs.list_envs()  # restored
    with pytest.raises(ValueError, match="TrainConfig.env='toy'; choose one of: detour, household, shop"):
        TrainConfig(env="toy")


def test_an_environment_without_an_offline_tokenizer_has_no_warm_start():
    adapter = dataclasses.replace(TOY_ENV, name="toy_adapter", tokenizer_family=None)
    with ENVS.temporary(adapter):
        from rspo.core.policies import tokenizer

        assert "toy_adapter" not in tokenizer.family_envs()
        with pytest.raises(ValueError, match="no offline tokenizer.*TrainConfig.model"):
            sft.default_config("toy_adapter")


def test_a_temporary_entry_replaces_and_restores_one_of_the_same_name():
    reg: Registry = Registry("thing")
    first = reg.register(Estimator("a", toy_advantage))
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Estimator("a", toy_advantage))
    with reg.temporary(Estimator("a", toy_advantage, critic=True), Estimator("b", toy_advantage)):
        assert reg["a"].critic and list(reg) == ["a", "b"]
    assert reg["a"] is first and list(reg) == ["a"]
    with pytest.raises(ValueError, match="unknown thing 'c'; choose one of: a"):
        reg.entry("c")


def test_the_choice_tuples_are_the_registries():
    assert config.ENVS == tuple(rspo.core.envs.list_envs()) == tuple(sorted(ENVS))
    assert config.ALGOS == registry.algorithms() == ("grpo", "ppo", "gigpo", "rloo", "turn_level")
    assert advantages.ESTIMATORS is ESTIMATORS
    assert config.ACTION_MODES is policies.ACTION_MODES is registry.ACTION_MODES
    assert losses.LOSS_AGG == config.LOSS_AGG == registry.LOSS_AGG
    choices = config.field_choices()
    adapters = tuple(n for n in rspo.core.envs.ADAPTERS.names() if n not in ENVS)  # the real engines, after
    assert choices["env"] == config.ENVS + adapters and choices["algo"] == config.ALGOS
    assert choices["adv_norm"] == registry.NORMALIZE and choices["episode_stats"] == registry.EPISODE_STATS
    for mode in registry.LOSS_AGG:  # each choice is one the implementation takes, and only those
        losses.turn_weights(torch.tensor([0, 0, 1]), torch.tensor([1, 2, 3]), mode)
    with pytest.raises(ValueError):
        losses.turn_weights(torch.tensor([0]), torch.tensor([1]), "nope")
    ids, ret = torch.tensor([0, 0, 1, 1]), torch.tensor([1.0, 0.0, 1.0, 1.0])
    for norm in registry.NORMALIZE:
        for stats in registry.EPISODE_STATS:
            advantages.grpo(ids, torch.arange(4), ret, normalize=norm, episode_stats=stats)
    for bad in (dict(normalize="nope"), dict(episode_stats="nope")):
        with pytest.raises(ValueError):
            advantages.grpo(ids, torch.arange(4), ret, **bad)
    for key, allowed in choices.items():  # the config takes every choice and refuses others
        field_default = {f.name: f.default for f in dataclasses.fields(TrainConfig)}[key]
        assert field_default in allowed
        with pytest.raises(ValueError, match=f"TrainConfig.{key}="):
            TrainConfig(**{key: "nope"})


def test_every_estimator_entry_matches_its_function_and_the_config():
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    for name, entry in ESTIMATORS.items():
        params = inspect.signature(entry.function).parameters
        assert set(entry.options) <= set(params), name  # each keyword is one the function takes
        assert set(entry.options.values()) <= fields, name  # read from a TrainConfig field
        assert ("values" in params) == entry.critic, name  # a critic's estimator reads its values
        cfg = TrainConfig(algo=entry.algorithm)
        assert cfg.estimator == name and cfg.critic == entry.critic


def test_every_environment_entry_is_complete():
    warm_fields = {f.name for f in dataclasses.fields(sft.WarmStartConfig)}
    for name, spec in ENVS.items():
        cls = spec.cls
        assert issubclass(cls, TextEnv) and cls.name == name
        assert "{task}" in spec.intro
        assert set(spec.warm_start) <= warm_fields - {"env", "history", "show_admissible"}
        for f in spec.data_files:
            assert (rspo.core.paths.data_dir(name) / f).is_file()


def test_every_profile_names_registered_environments_and_config_fields():
    """rspo.core.profiles is the one place for profiles: each names registered environments (or "common") and
    TrainConfig fields; by_reward holds settings of one reward mode (or of the swap, "rspo")."""
    config_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    for profile, table in profiles.TRAIN_PROFILES.items():
        assert "common" in table and set(table) - {"common"} <= set(ENVS), profile
        for settings in table.values():
            by_reward = settings.get("by_reward", {})
            assert set(settings) - {"by_reward"} <= config_fields, profile
            assert set(by_reward) <= set(REWARDS), profile
            assert all(set(s) <= config_fields for s in by_reward.values()), profile
    assert profiles.TRAIN_PROFILES["lab"] == {"common": profiles.LAB, "detour": {}}
    # the reward mode's settings win over the environment's, which win over the common ones
    quick = profiles.profile_settings("quick", "detour", "outcome")
    assert quick["misalignment"] == 0.0 and quick["iterations"] == 60 and quick["tasks_per_iter"] == 8
    assert profiles.profile_settings("quick", "detour", "rspo")["swap_budget"] == "matched"
    assert profiles.profile_settings("cpu", "detour", "dense") == profiles.TRAIN_PROFILES["cpu"]["common"]
    with pytest.raises(
        ValueError, match="unknown profile 'fast'; choose one of: quick, cpu, gpu, lab, smoke"
    ):
        profiles.profile_settings("fast", "detour", "dense")


def test_a_cache_key_never_changes_behind_a_default():
    """A new entry joins no tokenizer family unless it names one; joining the default family (household
    and shop) changes that family's tokenizer key, so their warm starts rebuild rather than go stale."""
    from rspo.core.policies import tokenizer

    plain = EnvSpec("plain", ToyEnv, intro="Your task is to: {task}")
    assert plain.tokenizer_family is None
    assert [ENVS[n].tokenizer_family for n in ("household", "shop", "detour")] == [
        "default",
        "default",
        "detour",
    ]
    before = tokenizer.tokenizer_key()
    with ENVS.temporary(plain):
        assert tokenizer.tokenizer_key() == before  # no family: household's and shop's key as it was
        with pytest.raises(ValueError, match="has no offline tokenizer.*name a tokenizer_family"):
            sft.default_config("plain")
    joined = EnvSpec("joined", ToyEnv, intro="Your task is to: {task}", tokenizer_family="default")
    with ENVS.temporary(joined):
        assert tokenizer.family_envs() == ["household", "joined", "shop"]
        assert tokenizer.tokenizer_key() != before
    assert tokenizer.tokenizer_key() == before
