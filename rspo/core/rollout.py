"""Batched multi-turn rollouts: B tasks x G copies in lockstep -> Episode / Turn records (docs/design.md §4).

Each turn the policy is called once on the prompts of every live environment; an environment that
terminates or runs out of steps drops out. Prompts are rebuilt per step by :class:`AgentView`
(:mod:`rspo.core.prompts`): task, step count, the last ``history`` observation/action pairs, the
environment's memory line, the current observation and the admissible actions.

The records (:class:`~rspo.core.records.Turn`, :class:`~rspo.core.records.Episode`) live in :mod:`rspo.core.records`
and are re-exported here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import rspo.core.envs
from rspo.core.envs.base import TextEnv
from rspo.core.prompts import build_prompt
from rspo.core.records import ActionSample, Episode, Turn

__all__ = ["AgentView", "Episode", "Turn", "collect", "expert_demonstrations", "make_envs"]


class AgentView:
    """What the agent sees of one environment: the per-step prompt and its history window."""

    def __init__(
        self, env: TextEnv, history: int = 2, show_admissible: bool = True, action_mode: str = "score"
    ):
        self.env = env
        self.history = history
        self.show_admissible = show_admissible
        self.action_mode = action_mode
        self.pairs: list[tuple[str, str]] = []
        self.obs = ""
        self.info: dict = {}

    def start(self, obs: str, info: dict) -> None:
        self.pairs, self.obs, self.info = [], obs, info

    def prompt(self) -> str:
        info = self.info
        return build_prompt(
            self.env.name,
            info["task"],
            self.env.steps,
            self.obs,
            info["admissible_actions"],
            history=self.pairs[-self.history :] if self.history else (),
            memory=self.env.memory(),
            show_admissible=self.show_admissible,
            action_mode=self.action_mode,
        )

    def record(self, action: str, obs: str, info: dict) -> None:
        self.pairs.append((self.obs, action))
        self.obs, self.info = obs, info


def make_envs(env_name: str, split: str, n: int, **env_options) -> list[TextEnv]:
    """``n`` independent environments (one per live trajectory)."""
    return [rspo.core.envs.make(env_name, split=split, **env_options) for _ in range(n)]


def collect(
    policy,
    envs: Sequence[TextEnv],
    task_ids: Sequence[str],
    group_size: int,
    *,
    history: int = 2,
    show_admissible: bool = True,
    greedy: bool = False,
    temperature: float = 1.0,
    generator=None,
    on_turn: Callable[[int, int], None] | None = None,
) -> list[Episode]:
    """Run ``len(task_ids) x group_size`` episodes in lockstep; return them ordered by (group, copy).

    Args:
        policy: a :class:`rspo.core.policies.base.Policy` (``act`` is called once per turn on all live envs;
            a policy with ``needs_envs = True``, like :class:`rspo.core.policies.scripted.EpsilonExpert`,
            also gets ``envs=`` the live environments).
        envs: at least ``len(task_ids) * group_size`` environments (reused across calls).
        task_ids: the B tasks; copy c of task b runs in ``envs[b * group_size + c]``.
        group_size: G copies per task.
        history: H, the observation/action pairs kept in the prompt.
        greedy / temperature / generator: sampling (greedy for evaluation).
        on_turn: called as ``on_turn(turn_index, n_live)`` after every batched turn (progress bars).
    """
    n = len(task_ids) * group_size
    if len(envs) < n:
        raise ValueError(
            f"collect needs {n} environments for {len(task_ids)} tasks x {group_size}, got {len(envs)}"
        )
    mode = getattr(policy, "action_mode", "score")
    episodes, views = [], []
    for i in range(n):
        env, task_id = envs[i], task_ids[i // group_size]
        obs, info = env.reset(task_id=task_id)
        view = AgentView(env, history=history, show_admissible=show_admissible, action_mode=mode)
        view.start(obs, info)
        views.append(view)
        episodes.append(Episode(env.name, task_id, i // group_size, i % group_size))
    live = list(range(n))
    turn = 0
    while live:
        prompts = [views[i].prompt() for i in live]
        candidates = [list(views[i].info["admissible_actions"]) for i in live]
        scripted = {"envs": [envs[i] for i in live]} if getattr(policy, "needs_envs", False) else {}
        samples: list[ActionSample] = policy.act(
            prompts, candidates, greedy=greedy, temperature=temperature, generator=generator, **scripted
        )
        still = []
        for i, prompt, cands, s in zip(live, prompts, candidates, samples, strict=True):
            env, view, ep = envs[i], views[i], episodes[i]
            anchor = view.info["anchor"]
            obs, reward, terminated, truncated, info = env.step(s.action)
            ep.turns.append(
                Turn(
                    prompt=prompt,
                    candidates=cands,
                    action=s.action,
                    choice=s.choice,
                    action_ids=s.action_ids,
                    token_logprobs=s.token_logprobs,
                    anchor=anchor,
                    outcome_reward=reward,
                    process_reward=info["process_reward"],
                    valid=bool(info["valid"] and s.valid_format),
                    value=s.value,
                )
            )
            ep.score += reward
            view.record(s.action, obs, info)
            if terminated or truncated:
                ep.won, ep.progress, ep.truncated = (
                    bool(info["won"]),
                    float(info["progress"]),
                    bool(truncated),
                )
            else:
                still.append(i)
        live = still
        turn += 1
        if on_turn is not None:
            on_turn(turn, len(live))
    return episodes


def expert_demonstrations(
    env_name: str,
    split: str,
    task_ids: Sequence[str],
    *,
    history: int = 2,
    show_admissible: bool = True,
    action_mode: str = "score",
    random_frac: float = 0.0,
    seed: int = 0,
    env_options: dict | None = None,
) -> list[tuple[str, list[str], str]]:
    """(prompt, admissible actions, action) for every step of the expert on each task.

    The prompts are built exactly as :func:`collect` builds them, so supervised fine-tuning on these
    pairs warm-starts a policy for the same inputs it sees in RL. With ``random_frac`` > 0 each step
    plays a uniformly random admissible action instead, with that probability (seeded by ``seed``):
    at 1 the demonstrations are random play, which teaches the action space but not the task.
    """
    env = rspo.core.envs.make(env_name, split=split, **(env_options or {}))
    rng = random.Random(seed)
    out = []
    for task_id in task_ids:
        obs, info = env.reset(task_id=task_id)
        view = AgentView(env, history=history, show_admissible=show_admissible, action_mode=action_mode)
        view.start(obs, info)
        done = False
        while not done:
            if random_frac and rng.random() < random_frac:
                action = rng.choice(view.info["admissible_actions"])
            else:
                action = env.expert_action()
            out.append((view.prompt(), list(view.info["admissible_actions"]), action))
            obs, reward, terminated, truncated, info = env.step(action)
            view.record(action, obs, info)
            done = terminated or truncated
    return out
