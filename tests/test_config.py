"""rspo.core.config.TrainConfig: clear errors, the JSON round trip, documented fields, non-finite numbers,
run names, groups of one (issue 20)."""

from __future__ import annotations

import math

import pytest

from rspo.core.config import TrainConfig

FLOAT_FIELDS = [
    "lr",
    "max_grad_norm",
    "kl_coef",
    "clip_eps",
    "swap_c",
    "value_coef",
    "entropy_coef",
    "omega",
    "process_weight",
    "outcome_scale",
    "invalid_penalty",
    "weight_decay",
    "swap_lambda",
    "temperature",
    "misalignment",
    "gamma",
]


@pytest.mark.parametrize("key", FLOAT_FIELDS)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(key, value):
    with pytest.raises(ValueError, match=f"TrainConfig.{key}"):
        TrainConfig(**{key: value})


def test_every_float_field_is_checked():
    from dataclasses import fields

    floats = {f.name for f in fields(TrainConfig) if str(f.type) == "float"}
    for key in floats:
        with pytest.raises(ValueError, match=key):
            TrainConfig(**{key: math.nan})


@pytest.mark.parametrize("name", ["../x", "../../x", "/tmp/x", "a/b", ".", "..", "a\\b"])
def test_run_name_is_one_folder_inside_out_dir(name):
    with pytest.raises(ValueError, match="one folder name"):
        TrainConfig(name=name)


def test_plain_names_and_the_default_name_pass():
    assert TrainConfig(name="my-run.v2").name == "my-run.v2"
    assert TrainConfig(env="detour", seed=3).name == "detour-grpo-outcome-s3"


@pytest.mark.parametrize("algo", ["grpo", "gigpo", "rloo", "turn_level"])
def test_a_group_of_one_is_refused_for_group_relative_estimators(algo):
    with pytest.raises(ValueError, match="group_size=1"):
        TrainConfig(algo=algo, group_size=1)
    TrainConfig(algo="ppo", group_size=1)  # GAE has a value baseline: a group of one still learns


def test_history_defaults_to_the_environments_as_its_warm_start():
    from rspo.core import sft

    for env in ("household", "shop", "detour"):
        cfg = TrainConfig(env=env)
        assert cfg.history == sft.default_config(env).history == sft.prompt_settings(env)["history"]
    assert TrainConfig(env="detour").history == 1 and TrainConfig(env="household").history == 2
    assert TrainConfig(env="detour", history=3).history == 3
    # a saved config holds the number, so runs saved before the default existed still match
    assert (
        TrainConfig.from_dict(TrainConfig(env="shop").to_dict()).to_dict()
        == TrainConfig(env="shop").to_dict()
    )
    with pytest.raises(ValueError, match="history"):
        TrainConfig(history=-2)


def test_the_real_engines_adapters_are_valid_environments_of_a_config():
    """alfworld and textworld (rspo.core.envs.registry.ADAPTERS) are choices of TrainConfig.env, beside the
    built-ins; an unknown name is still refused with the whole list."""
    from rspo.core.config import TrainConfig, field_choices

    assert {"alfworld", "textworld"} <= set(field_choices()["env"])
    assert TrainConfig(env="alfworld", model="some/model").env == "alfworld"
    with pytest.raises(ValueError, match="alfworld, textworld"):
        TrainConfig(env="alfworld-ish")


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(algo="dpo"), "grpo, ppo, gigpo"),
        (dict(reward="sparse"), "outcome, dense"),
        (dict(lr=0.0), "lr"),
        (dict(iterations="10"), "iterations must be int"),
        (dict(group_size=0), "group_size"),
        (dict(misalignment=1.5), "misalignment"),
        (dict(temperature=0.0), "temperature"),
        (dict(lora=True), "lora needs model"),
        (dict(loss_agg="sum"), "trajectory, turn, token"),
        (dict(progress="yes"), "progress must be bool"),
    ],
)
def test_config_errors_are_clear(bad, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**bad)


def test_config_json_round_trip_and_unknown_fields(tmp_path):
    cfg = TrainConfig(env="shop", algo="ppo", reward="dense", seed=3, lr=3e-4)
    cfg.save(tmp_path / "c.json")
    assert TrainConfig.load(tmp_path / "c.json") == cfg
    assert cfg.name == "shop-ppo-dense-s3" and cfg.estimator == "gae"
    with pytest.raises(ValueError, match="unknown TrainConfig fields"):
        TrainConfig.from_dict({"learning_rate": 1.0})


def test_every_config_field_is_documented():
    import dataclasses

    from rspo.core.config import field_docs

    docs = field_docs()
    missing = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in docs]
    assert not missing, f"fields without a one-line doc: {missing}"
