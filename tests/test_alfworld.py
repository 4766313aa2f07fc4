"""The ALFWorld adapter and household exported to ALFWorld, in the real engine, offline.

Skipped without the extra (``pip install -e .[alfworld]``). No download: the games are household tasks
exported to ALFWorld PDDL problems (:mod:`rspo.core.envs.alfworld.export`) in a temporary folder.
"""

from __future__ import annotations

import json
import os
import random

import pytest

pytest.importorskip("alfworld", reason="the alfworld extra is not installed (pip install -e .[alfworld])")
pytest.importorskip("textworld", reason="the alfworld extra is not installed (pip install -e .[alfworld])")

from rspo.core.envs import INFO_KEYS  # noqa: E402
from rspo.core.envs.alfworld import AlfworldEnv  # noqa: E402
from rspo.core.envs.alfworld.export import entity_id, export_specs, select  # noqa: E402
from rspo.core.envs.alfworld.goal import GoalProgress  # noqa: E402
from rspo.core.envs.alfworld.parity import EXPLAINED, compare, run  # noqa: E402
from rspo.core.envs.baselines import expert_policy, play_tasks, random_policy  # noqa: E402
from rspo.core.envs.household.catalogue import TASK_TYPES  # noqa: E402

SPECS = select("valid_seen", per_type=1)  # one task of each of the six types


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("alfworld-data")
    export_specs(SPECS, folder)
    return folder


@pytest.fixture(scope="module")
def env(root):
    return AlfworldEnv(split="valid_seen", data=root)


def test_export_ids_demangle_to_the_household_names():
    from alfworld.agents.utils.misc import Demangler

    class Info:
        def __init__(self, id_):
            self.id = id_

    names = [f"cabinet {k}" for k in range(1, 11)] + [
        "sinkbasin 1",
        "sinkbasin 2",
        "bathtubbasin 1",
        "apple 1",
    ]
    ids = [entity_id(n) for n in names]
    demangler = Demangler(game_infos={i: Info(i) for i in ids})
    assert [demangler.demangle_alfred_name(i) for i in ids] == names


def test_every_task_type_is_exported(root):
    assert sorted(s["type"] for s in SPECS) == sorted(TASK_TYPES)
    games = sorted(root.rglob("game.tw-pddl"))
    assert len(games) == 6
    for game in games:
        data = json.loads(game.read_text())
        assert {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"} <= set(data)
        assert "UNKNOWN GOAL" not in data["grammar"]
        traj = json.loads((game.parent / "traj_data.json").read_text())
        assert traj["task_type"] in TASK_TYPES and traj["pddl_params"]["object_target"]


@pytest.mark.parametrize("spec", SPECS, ids=[s["type"] for s in SPECS])
def test_household_expert_wins_in_the_real_engine_with_only_explained_differences(root, spec):
    record = compare(spec, root, mode="expert")
    assert record["household_won"] and record["alfworld_won"]
    assert record["unexplained"] == [], record["unexplained"][:3]
    assert set(k.split(":", 1)[1] for k in record["counts"] if ":" in k) <= set(EXPLAINED)


def test_random_walk_agrees_step_by_step(root):
    for spec in SPECS[:2]:
        record = compare(spec, root, mode="random", steps=15, seed=1)
        assert record["unexplained"] == [], record["unexplained"][:3]
        assert record["counts"]["obs_steps"] == 16


@pytest.mark.slow
def test_parity_on_sixty_tasks(tmp_path):
    """The parity claim of docs/alfworld-parity.md: 10 valid_seen tasks of each type (60)."""
    report = run(select("valid_seen", per_type=10), tmp_path, modes=("expert",), workers=os.cpu_count() or 1)
    # valid_seen/00015: household's expert cleans the soapbar in a bathtubbasin, which ALFWorld refuses
    assert report["tasks"] == 60 and report["expert_diverged"] == ["valid_seen/00015"]
    assert report["expert_wins_in_alfworld"] == 59
    assert report["unexplained"] == []


def test_parity_in_two_processes_is_the_same_report(tmp_path):
    one = run(SPECS[:2], tmp_path / "one", modes=("expert", "random"), steps=3)
    assert run(SPECS[:2], tmp_path / "two", modes=("expert", "random"), steps=3, workers=2) == one
    assert one["expert_runs"] == 2 and one["totals"]["adm_steps"] > 2 * 3


def test_a_plan_that_cleans_in_a_bathtub_is_the_explained_divergence(tmp_path):
    spec = next(s for s in select("valid_seen") if s["id"] == "valid_seen/00015")
    record = compare(spec, tmp_path, mode="expert")
    assert record["diverged"].startswith("clean ") and "bathtubbasin" in record["diverged"]
    assert record["unexplained"] == [] and not record["alfworld_won"]


def _walk(game, steps=12, seed=0):
    from rspo.core.envs.alfworld.engine import load_game

    engine, rng, trace = load_game(game, facts=True), random.Random(seed), []
    state = engine.reset()
    for _ in range(steps):
        trace.append(
            (state["feedback"], state["admissible_commands"], state["won"], sorted(map(str, state["facts"])))
        )
        state, _, _ = engine.step(rng.choice(state["admissible_commands"]))
    return trace


def test_the_grammar_cache_changes_no_observation_command_or_fact(root):
    """engine.install_grammar_cache memoises TextWorld's parses: a random walk sees the same feedback,
    admissible commands, won and facts with it as with TextWorld's own parsing."""
    from rspo.core.envs.alfworld import engine

    game = sorted(root.rglob("game.tw-pddl"))[3]
    cached = _walk(game)
    engine.uninstall_grammar_cache()
    try:
        assert _walk(game) == cached
    finally:
        engine.install_grammar_cache()
    from textworld.envs.pddl import textgen

    assert textgen._parse_and_convert._rspo_cached


def test_goal_progress_counts_sub_conditions():
    problem = """(define (problem p) (:domain alfred)
    (:objects agent1 - agent a1 a2 - object r1 r2 - receptacle AppleType - otype CounterTopType - rtype)
    (:init) (:goal (and (exists (?r - receptacle) (exists (?o - object) (and (heatable ?o)
      (objectType ?o AppleType) (receptacleType ?r CounterTopType) (isHot ?o) (inReceptacle ?o ?r)))))))"""
    g = GoalProgress(problem)
    static = {
        ("heatable", "a1"),
        ("objecttype", "a1", "appletype"),
        ("receptacletype", "r1", "countertoptype"),
    }
    assert g.progress(static) == 0.0
    assert g.progress(static | {("ishot", "a1")}) == 0.5
    assert g.progress(static | {("ishot", "a1"), ("inreceptacle", "a1", "r1")}) == 1.0
    assert g.progress(static | {("ishot", "a2"), ("inreceptacle", "a2", "r1")}) == 0.0  # not an apple
    relaxed = GoalProgress(problem, relaxed=True)
    assert relaxed.progress(static | {("heatable", "a2"), ("ishot", "a2")}) == 0.5


def _check_info(info):
    assert set(INFO_KEYS) <= set(info)
    assert isinstance(info["task"], str) and info["task"]
    assert info["admissible_actions"] and all(isinstance(a, str) for a in info["admissible_actions"])
    hash(info["anchor"])
    assert isinstance(info["won"], bool) and 0.0 <= info["progress"] <= 1.0
    assert isinstance(info["process_reward"], float) and isinstance(info["valid"], bool)


def test_adapter_follows_the_contract(env):
    assert env.task_ids == [f"valid_seen/{i:05d}" for i in range(6)]
    obs, info = env.reset(task_id="valid_seen/00000")
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-") and "Your task is to: " in obs
    _check_info(info)
    assert info["valid"] and info["step"] == 0 and info["process_reward"] == 0.0
    before = info
    for bad in ["", "x" * 10_000, "go to cabinet 99", "ぐ to 冷蔵庫 1", "\x00", "look\u00a0", None, 3]:
        obs, reward, terminated, truncated, info = env.step(bad)
        assert obs == "Nothing happens." and not info["valid"] and reward == 0.0 and not terminated
        assert (
            info["anchor"] == before["anchor"] and info["admissible_actions"] == before["admissible_actions"]
        )
    obs, reward, terminated, truncated, info = env.step("  LOOK ")  # case and whitespace are ignored
    assert info["valid"] and info["step"] == 9
    rng = random.Random(0)
    env.reset(task_id="valid_seen/00001")
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
        assert info["valid"]
        _check_info(info)
        done = terminated or truncated
    assert env.steps <= env.max_steps
    with pytest.raises(RuntimeError, match="reset"):
        env.step("look")


def test_make_builds_the_adapter_which_list_envs_leaves_out(root):
    import rspo.core.envs

    env = rspo.core.envs.make("alfworld", split="valid_seen", data=root)
    assert isinstance(env, AlfworldEnv) and len(env) == 6
    assert rspo.core.envs.spec("alfworld").tokenizer_family is None
    assert "alfworld" not in rspo.core.envs.list_envs()  # built-ins only: they run from a fresh install


def test_reset_by_seed_is_deterministic(root, env):
    other = AlfworldEnv(split="valid_seen", data=root)
    for seed in (0, 7):
        a, ia = env.reset(seed=seed)
        b, ib = other.reset(seed=seed)
        assert (a, ia["task_id"], ia["admissible_actions"]) == (b, ib["task_id"], ib["admissible_actions"])


@pytest.mark.slow
def test_handcoded_expert_solves_the_exported_tasks_and_random_does_worse(env):
    expert = play_tasks(env, expert_policy, env.task_ids)
    assert expert["success"] == 1.0 and expert["invalid"] == 0.0
    assert 0.0 < expert["process_return"] <= 0.5
    rand = play_tasks(env, random_policy(0), env.task_ids[:2])
    assert rand["success"] < expert["success"]


def test_planner_expert_solves_a_task_with_one_search(root):
    env = AlfworldEnv(split="valid_seen", data=root, expert="planner")
    stats = play_tasks(env, expert_policy, env.task_ids[:2])
    assert stats["success"] == 1.0 and stats["invalid"] == 0.0


def test_missing_data_is_one_line_naming_alfworld_download(monkeypatch, tmp_path):
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="alfworld-download") as err:
        AlfworldEnv(split="valid_seen")
    assert "\n" not in str(err.value)
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="alfworld-download"):
        AlfworldEnv(split="train")


def test_bad_options_raise_value_errors(root):
    with pytest.raises(ValueError, match="valid_seen"):
        AlfworldEnv(split="nope", data=root)
    with pytest.raises(ValueError, match="expert"):
        AlfworldEnv(split="valid_seen", data=root, expert="oracle")
    with pytest.raises(ValueError, match="task_types"):
        AlfworldEnv(split="valid_seen", data=root, task_types=("pick_and_slice",))
    with pytest.raises(ValueError, match="misalignment"):
        AlfworldEnv(split="valid_seen", data=root, misalignment=2)
    only = AlfworldEnv(split="valid_seen", data=root, task_types=("look_at_obj_in_light",))
    assert len(only) == 1


@pytest.mark.slow
def test_the_trainer_runs_on_the_real_engine(tmp_path, one_thread, first_copy_succeeds):
    """A few iterations through the trainer's own code path (GiGPO, RSPO) on exported train tasks, with
    a small random-init policy (the env enters the registry for the test only)."""
    import torch

    from rspo.core.config import TrainConfig
    from rspo.core.envs.registry import ENVS, EnvSpec
    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.core.trainer import Trainer

    data = tmp_path / "data"
    export_specs(select("train", limit=2), data)

    class Exported(AlfworldEnv):
        def __init__(self, split="train", **options):
            super().__init__(split=split, data=data, **options)

    with ENVS.temporary(EnvSpec("alfworld", Exported, tokenizer_family=None)):
        cfg = TrainConfig(
            env="alfworld", algo="gigpo", reward="rspo", iterations=2, tasks_per_iter=2, group_size=2,
            max_steps=3, temperature=50.0, eval_every=0, out_dir=str(tmp_path / "runs"), progress=False,
            lr=1e-3, micro_batch=8, show_admissible="yes",
        )  # fmt: skip
        policy = untrained_tiny_policy(0)
        before = [p.detach().clone() for p in policy.trainable_parameters()]
        rows = Trainer(cfg, policy=policy).run()
    assert len(rows) == 2 and all(r["rollout/episodes"] >= 4 for r in rows)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.trainable_parameters(), strict=True))


def test_a_household_policy_is_evaluated_on_the_same_tasks_in_both_engines(one_thread):
    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.study.transfer import household_vs_alfworld

    out = household_vs_alfworld(untrained_tiny_policy(0), n_tasks=2, max_steps=3)
    assert out["household"]["n_tasks"] == out["alfworld"]["n_tasks"] == 2
    assert 0.0 <= out["alfworld"]["success"] <= 1.0


def test_notebook_01s_section_plays_the_expert_plan_and_a_policy_in_both_engines(monkeypatch, one_thread):
    """Notebook 01's section 5 (same_tasks_in_alfworld): the expert's plan agrees in both engines; a
    given policy is scored in both; without a built warm start it says so and builds nothing."""
    import rspo.study.transfer as transfer
    from rspo.core.policies.tiny import untrained_tiny_policy

    lines = []
    out = transfer.same_tasks_in_alfworld(2, policy=untrained_tiny_policy(0), max_steps=3, write=lines.append)
    assert [e["task_id"] for e in out["expert"]] == ["valid_seen/00000", "valid_seen/00001"]
    for e in out["expert"]:
        assert e["household_won"] and e["alfworld_won"] and e["unexplained"] == 0 and not e["diverged"]
        assert e["steps"] > 0 and e["identical"] + e["explained"] == e["steps"] + 1
    assert out["policy"]["household"]["n_tasks"] == out["policy"]["alfworld"]["n_tasks"] == 2
    assert out["policy"]["alfworld"]["mean_length"] <= 3 and out["policy"]["household"]["mean_length"] <= 3
    text = "\n".join(lines)
    assert "valid_seen/00001" in text and "0 unexplained" in text and "success" in text
    # no warm start built: the expert's plan only, and one line on how to get the policy part
    monkeypatch.setattr(transfer, "cached_household_policy", lambda: None)
    lines.clear()
    out = transfer.same_tasks_in_alfworld(1, write=lines.append)
    assert out["policy"] is None and any("load_or_build_default" in line for line in lines)
    assert transfer.same_tasks_in_alfworld(0, write=lines.append) is None


def test_notebook_01s_section_without_the_extra_is_one_line(monkeypatch):
    import sys
    import time

    import rspo.study.transfer as transfer

    monkeypatch.setitem(sys.modules, "rspo.core.envs.alfworld.engine", None)  # import fails: not installed
    lines = []
    t0 = time.perf_counter()
    assert transfer.same_tasks_in_alfworld(3, write=lines.append) is None
    assert time.perf_counter() - t0 < 1.0
    assert lines == [transfer.INSTALL_LINE] and 'pip install -e ".[alfworld]"' in lines[0]


def test_reproduce_env_alfworld_checks_the_data_before_any_notebook(tmp_path, monkeypatch):
    """`rspo reproduce --profile gpu --env alfworld`: with $ALFWORLD_DATA holding games, the check
    before the notebooks builds the adapter and resets it (tests/test_cli.py: the error without)."""
    import rspo.study.reproduce as job

    export_specs(select("valid_seen", limit=1), tmp_path)
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    job.check_env("gpu", "alfworld")
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="alfworld-download"):
        job.check_env("gpu", "alfworld")


def test_both_engines_get_households_prompt_and_horizon():
    from rspo.core.envs.registry import ENVS
    from rspo.core.policies.scripted import EpsilonExpert
    from rspo.study.transfer import household_vs_alfworld

    prompts = []

    class Recorder(EpsilonExpert):
        def act(self, batch, candidates, **kwargs):
            prompts.extend(batch)
            return super().act(batch, candidates, **kwargs)

    out = household_vs_alfworld(Recorder(0.0), n_tasks=1, max_steps=2)
    assert out["household"]["mean_length"] == out["alfworld"]["mean_length"] == 2
    intro = ENVS["household"].intro.split("{task}")[0]
    assert len(prompts) == 4 and all(p.startswith(intro) for p in prompts), prompts[2][:80]
