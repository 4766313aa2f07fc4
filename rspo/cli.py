"""The `rspo` command line: `rspo envs`, `rspo play <env>`, `rspo demo`, `rspo train`, `rspo reproduce`,
`rspo badges`."""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import re
import sys
import textwrap
from pathlib import Path

from rspo.core import envs, profiles
from rspo.core.atomic import RunLockedError, atomic_write_text

HELP_TEXT = """Type the number of an admissible action, or any command as free text.
  e / expert   take the expert's next action      ?  / help  show this help
  doc          explain the process reward          q  / quit  end the episode"""


def _format_actions(actions: list[str], width: int = 100) -> str:
    cells = [f"[{i}] {a}" for i, a in enumerate(actions)]
    col = min(max(len(c) for c in cells) + 2, width) if cells else width
    per_row = max(1, width // col)
    rows = [cells[i : i + per_row] for i in range(0, len(cells), per_row)]
    return "\n".join("".join(c.ljust(col) for c in row).rstrip() for row in rows)


def _action_number(raw: str, n: int) -> int | None:
    """``raw`` as the number of one of ``n`` listed actions, or None: ASCII digits only (``²`` is a
    digit to ``str.isdigit`` but ``int`` refuses it), in range."""
    if raw.isascii() and raw.isdigit() and len(raw) <= len(str(n)) and int(raw) < n:
        return int(raw)
    return None


def read_line(prompt: str) -> str:
    """One line of input: ``input`` at a terminal; from a pipe or file at most MAX_LINE characters
    (``rspo play < /dev/zero`` never ends a line: it read without end, filling memory). EOFError at
    the end; a line too long or not UTF-8 is a one-line ValueError."""
    if sys.stdin is None:
        raise EOFError
    if sys.stdin.isatty():
        return input(prompt)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    try:
        line = sys.stdin.readline(MAX_LINE + 1)
    except UnicodeDecodeError:
        raise ValueError("standard input is not UTF-8 text; rspo play reads one action per line") from None
    if not line:
        raise EOFError
    if len(line) > MAX_LINE and not line.endswith("\n"):
        raise ValueError(
            f"standard input: a line longer than {MAX_LINE} characters; rspo play reads one action per line"
        )
    return line.rstrip("\n")


def play(args: argparse.Namespace, read=read_line, write=print) -> int:
    """An episode in the terminal: observation, admissible actions, rewards and progress each step."""
    env = envs.make(args.env, split=args.split, misalignment=args.misalignment, max_steps=args.max_steps)
    obs, info = env.reset(seed=args.seed, task_id=args.task_id)
    write(f"== {env.name} | split {env.split} | task {info['task_id']} | horizon {env.max_steps} steps ==")
    write(f"Task: {info['task']}")
    if not args.expert:
        write(HELP_TEXT)
    total_reward = total_process = 0.0
    while True:
        write("\n" + obs)
        write("\nAdmissible actions:\n" + _format_actions(info["admissible_actions"]))
        if args.expert:
            action = env.expert_action()
            write(f"> {action}   (expert)")
        else:
            try:
                raw = read("> ").strip()
            except EOFError:
                raw = "q"
            if raw in ("q", "quit", "exit"):
                write("Stopped.")
                return 0
            if raw in ("?", "help"):
                write(HELP_TEXT)
                continue
            if raw == "doc":
                write(env.process_reward_doc or "(no process reward documentation)")
                continue
            if raw in ("e", "expert"):
                action = env.expert_action()
                write(f"expert: {action}")
            elif (number := _action_number(raw, len(info["admissible_actions"]))) is not None:
                action = info["admissible_actions"][number]
            else:
                action = raw
        obs, reward, terminated, truncated, info = env.step(action)
        if not info["valid"]:
            write(f"{action!r} is not a valid action here: nothing happens (the step counts); ? for help")
        total_reward += reward
        total_process += info["process_reward"]
        write(
            f"-- step {info['step']}/{env.max_steps} | valid {info['valid']} | reward {reward:.2f} "
            f"| process reward {info['process_reward']:+.2f} (total {total_process:.2f}) "
            f"| progress {info['progress']:.2f}"
        )
        if terminated or truncated:
            write("\n" + obs)
            verdict = "WON" if info["won"] else ("ended" if terminated else "out of steps")
            write(
                f"\n== {verdict}: outcome reward {total_reward:.2f}, process return {total_process:.2f}, {env.steps} steps =="
            )
            return 0


def demo(args: argparse.Namespace, write=print) -> int:
    """Scripted baselines on every environment's evaluation splits: the expert and a random policy."""
    from rspo.core.envs.baselines import expert_policy, play_tasks, random_policy

    out = Path(args.out)
    check_out_folder(out)  # before the minutes of play, not after
    rows = []
    for name in envs.list_envs():
        for split in envs.env_class(name).eval_splits:
            env = envs.make(name, split=split)
            tasks = env.task_ids[: args.limit] if args.limit else env.task_ids
            for policy_name, policy in (("expert", expert_policy), ("random", random_policy(args.seed))):
                r = play_tasks(env, policy, tasks, progress_bar=True)
                rows.append({"env": name, "split": split, "policy": policy_name, **r})
    header = "| env | split | policy | episodes | success | outcome reward | progress | steps | invalid | steps/s |"
    lines = [header, "|---" * (header.count("|") - 1) + "|"]
    for r in rows:
        lines.append(
            f"| {r['env']} | {r['split']} | {r['policy']} | {r['episodes']} | {r['success']:.1%} "
            f"| {r['outcome_reward']:.3f} | {r['progress']:.3f} | {r['steps']:.1f} | {r['invalid']:.2f} "
            f"| {r['steps_per_s']:,.0f} |"
        )
    table = "\n".join(lines)
    write(table)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.json", json.dumps(rows, indent=1))
    atomic_write_text(out / "results.md", table + "\n")
    write(f"\nwritten: {out / 'results.md'} and {out / 'results.json'}")
    return 0


def check_out_folder(out: Path, flag: str = "--out") -> None:
    """A one-line ValueError unless ``out`` is a folder or can be made one (``--out /etc/passwd``)."""
    existing = out
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{flag} {out}: {existing} is a file, not a folder; choose another {flag}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(
            f"{flag} {out}: cannot write in {existing} (permission denied); choose another {flag}"
        )


def list_cmd(args: argparse.Namespace, write=print) -> int:
    for name in envs.list_envs():
        cls = envs.env_class(name)
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        write(f"{name:10s} splits: {', '.join(cls.splits)} | horizon {cls.default_max_steps} | {doc}")
    return 0


def cores() -> int:
    """The CPU cores this process may use (``--threads`` is capped at it: 100000 threads segfaulted)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# the allowed range of every size-like number of the command line, checked at parse time (before,
# --tasks-per-iter 1000000000 or --max-steps 10**21 ran until the machine ran out of memory or time):
# TrainConfig's integer fields (tests/test_reliability2.py checks that each has one), the other commands'
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "seed": (0, 2**63 - 1),
    "max_prompt_tokens": (1, 131_072),
    "max_new_tokens": (1, 8192),
    "micro_batch": (1, 4096),
    "iterations": (1, 1_000_000),
    "tasks_per_iter": (1, 4096),
    "group_size": (1, 1024),
    "task_pool": (0, 1_000_000),
    "history": (-1, 1000),
    "max_steps": (0, 10_000),
    "resample_tries": (0, 100),
    "buffer_groups": (1, 100_000),
    "buffer_max_age": (0, 1_000_000),
    "replay_groups": (1, 100_000),
    "ppo_epochs": (1, 1000),
    "minibatch_turns": (1, 1_000_000),
    "eval_every": (0, 1_000_000),
    "eval_tasks": (0, 1_000_000),
    "checkpoint_every": (0, 1_000_000),
    "threads": (0, -1),  # -1: this machine's cores (cores())
    "limit": (0, 1_000_000),  # rspo demo
}
FLOAT_BOUNDS: dict[str, tuple[float, float]] = {
    "temperature": (0.01, 1000.0),  # 1e-300 divided the logits into inf and nan
}
MAX_EPISODES = 65_536  # tasks_per_iter x group_size: environments built per iteration
MAX_LINE = 4096  # characters of one line `rspo play` reads (stdin may be /dev/zero: no newline, ever)
MAX_JSON_BYTES = 1 << 20  # a --config file or a model's config.json


def bounds(name: str) -> tuple[int, int]:
    lo, hi = INT_BOUNDS[name]
    return lo, cores() if hi == -1 else hi


def _range_text(name: str) -> str:
    lo, hi = bounds(name)
    return f"{lo}..{hi}" + (" (this machine's CPU cores)" if name == "threads" else "")


def bounded_int(name: str):
    """An argparse type: an integer in ``INT_BOUNDS[name]``, else one line with the range."""

    def parse(text: str) -> int:
        lo, hi = bounds(name)
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer in {_range_text(name)}, got {text!r}"
            ) from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer in {_range_text(name)}, got {text}")
        return value

    parse.__name__ = "integer"
    return parse


def check_bounds(data: dict, where: str) -> None:
    """The size-like fields of a TrainConfig's ``data`` (a --config file's too) within their ranges;
    a one-line ValueError naming ``where`` (a file, or ``TrainConfig`` for the flags) and the range."""
    sep = "." if where == "TrainConfig" else ": "
    for name, value in data.items():
        if name in INT_BOUNDS and isinstance(value, int) and not isinstance(value, bool):
            lo, hi = bounds(name)
            if not lo <= value <= hi:
                raise ValueError(f"{where}{sep}{name} must be an integer in {_range_text(name)}, got {value}")
        if name in FLOAT_BOUNDS and isinstance(value, int | float) and not isinstance(value, bool):
            lo, hi = FLOAT_BOUNDS[name]
            if not lo <= value <= hi:
                raise ValueError(f"{where}{sep}{name} must be a number in [{lo:g}, {hi:g}], got {value}")


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line, ``rspo: error: ...`` (without the usage, which for
    ``rspo train`` is some fifty lines), exit code 2."""

    def error(self, message: str):
        self.exit(2, f"rspo: error: {self.prog}: {message} (see {self.prog} --help)\n")


def _unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text}")
    return value


def _json_object(text: str) -> dict:
    """A flag's JSON object (``--env-options '{"length": 7}'``), or argparse's one-line error."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON ({err.msg}): {text[:80]!r}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError("JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"a JSON object is expected, e.g. '{{\"length\": 7}}', got {text!r}")
    return value


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field (``--tasks-per-iter 8``, ``--lora/--no-lora``), help from its comment."""
    import dataclasses

    from rspo.core.config import TrainConfig, field_choices, field_docs

    docs, choices = field_docs(), field_choices()
    p.add_argument("--config", default=None, help="a JSON file of TrainConfig fields (flags override it)")
    for f in dataclasses.fields(TrainConfig):
        if f.name == "extra":
            continue
        flag = "--" + f.name.replace("_", "-")
        kind = {"int": int, "float": float, "str": str, "bool": bool, "dict": _json_object}[str(f.type)]
        if f.name in INT_BOUNDS:
            kind = bounded_int(f.name)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        named = f"; one of: {', '.join(choices[f.name])}" if f.name in choices else ""
        help_ = f"{docs.get(f.name, '')} (default: {default!r}{named})"
        if kind is bool:
            p.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_)
        else:
            p.add_argument(flag, dest=f.name, type=kind, default=None, help=help_)


# a Hugging Face hub id: NAME or OWNER/NAME (letters, digits, "-", "_", "."; no "..")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def check_model(model: str, gguf_file: str = "") -> None:
    """A one-line ValueError unless ``model`` is "" (the tiny default), an existing local path or
    something that can be a hub id (``Qwen/Qwen2.5-1.5B-Instruct``: not downloaded or looked up here);
    with ``gguf_file`` in a local folder, the file must be there."""
    if not model:
        return
    path = Path(model)
    if path.exists():
        if gguf_file and path.is_dir() and not (path / gguf_file).is_file():
            raise ValueError(f"--gguf-file {gguf_file}: no such file in {model}; check the name")
        if path.is_dir() and (path / "config.json").exists():
            config = read_json_file(path / "config.json", f"--model {model}: its config.json")
            if not isinstance(config, dict):
                raise ValueError(f"--model {model}: its config.json is not a JSON object: not a model folder")
            kind = config.get("model_type")
            if kind is not None:
                from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

                if not isinstance(kind, str) or kind not in CONFIG_MAPPING_NAMES:
                    raise ValueError(
                        f"--model {model}: its config.json names model_type {str(kind)[:60]!r}, which "
                        "transformers does not know: not a model folder, or a damaged config.json"
                    )
        return
    if not _HUB_ID.fullmatch(model) or ".." in model:
        raise ValueError(
            f"--model {model}: no such file or folder, and not a hub id (NAME or OWNER/NAME, e.g. "
            "Qwen/Qwen2.5-1.5B-Instruct); pass an existing local path or a hub id"
        )


def read_json_file(path: Path, what: str):
    """The JSON value in ``path``, read only if it is a regular file of at most MAX_JSON_BYTES; a
    one-line ValueError (``what`` first) for a folder, a device, too big, not UTF-8, not JSON, or
    nested too deeply."""
    import stat

    try:
        st = os.stat(path)
    except OSError as e:
        raise ValueError(f"{what} ({path}): {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{what} ({path}) is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what} ({path}) is not a regular file (a device or a pipe)")
    if st.st_size > MAX_JSON_BYTES:
        raise ValueError(f"{what} ({path}) is {st.st_size} bytes, over {MAX_JSON_BYTES}: not a config")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} ({path}) is not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{what} ({path}) is not JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise ValueError(f"{what} ({path}) is JSON nested too deeply") from None


def train_config(args: argparse.Namespace, write=None):
    """The TrainConfig of ``rspo train``: --profile's settings, the --config file, then the flags
    (without a GPU and --profile, the sizes none of them set are :func:`rspo.core.plan.machine_sizes`'s,
    said with ``write``); every check that needs no model (the file, the fields, --model, the run
    folder), each a one-line ValueError."""
    import dataclasses

    from rspo.core.checkpoint import check_run_dir
    from rspo.core.config import TrainConfig, read_config_file, unknown_fields_error

    data = {}
    if args.config:
        path = Path(args.config)
        if path.exists() and not path.is_dir():  # not a device, not huge (read_config_file reads it all)
            read_json_file(path, "config file")
        try:
            data = read_config_file(args.config)
        except RecursionError:
            raise ValueError(f"config file {args.config} is JSON nested too deeply") from None
        error = unknown_fields_error(data)
        if error is not None:
            raise ValueError(f"config file {args.config}: {error}")
        check_bounds(data, f"config file {args.config}")
    flags = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(TrainConfig)
        if getattr(args, f.name, None) is not None
    }
    check_bounds(flags, "TrainConfig")  # the integers were checked by argparse; the temperature here
    data.update(flags)
    data = _sized(args, data, write)  # --profile, or the machine's sizes where no flag or file set one
    cfg = TrainConfig.from_dict(data)
    if cfg.tasks_per_iter * cfg.group_size > MAX_EPISODES:
        raise ValueError(
            f"tasks_per_iter x group_size = {cfg.tasks_per_iter * cfg.group_size} episodes per iteration, "
            f"over {MAX_EPISODES}; choose smaller --tasks-per-iter or --group-size"
        )
    check_model(cfg.model, cfg.gguf_file)
    check_run_dir(cfg, must_exist=cfg.resume)
    return cfg


def _sized(args: argparse.Namespace, data: dict, write=None) -> dict:
    """``data`` (the --config file and flags) over --profile's settings or, without a GPU, the sizes
    of :func:`rspo.core.plan.machine_sizes` (the line that says which is written with ``write``)."""
    from rspo.core import plan
    from rspo.core.config import TrainConfig

    env, reward = data.get("env", TrainConfig.env), data.get("reward", TrainConfig.reward)
    if getattr(args, "profile", None):
        return {**profiles.profile_settings(args.profile, env, reward), **data}
    sizes, note = plan.machine_sizes(env, reward, data, data.get("device", TrainConfig.device))
    if note and write is not None:
        write(note)
    return {**sizes, **data}


def train(args: argparse.Namespace, write=print) -> int:
    """Build a TrainConfig from --config and flags, check it and its run folder, and run the trainer
    (with a progress bar on: its plan, a measured estimate and stage lines, :mod:`rspo.core.plan`)."""
    cfg = train_config(args, write)  # before the trainer's import and any model: errors come at once
    from rspo.core.trainer import Trainer

    trainer = Trainer(cfg)
    if cfg.progress and getattr(trainer, "dist", None) is not None and trainer.dist.main:  # not a stub
        from rspo.core import plan

        rows = plan.run_with_progress(trainer, write)  # the stage lines replace the trainer's bar
    else:
        rows = trainer.run()
    evals = [r for r in rows if "eval/success" in r]
    if evals:
        first, last = evals[0], evals[-1]
        write(
            f"{cfg.name}: eval success {first['eval/success']:.3f} -> {last['eval/success']:.3f} "
            f"(iteration {first['iteration']} -> {last['iteration']}); metrics in {cfg.run_dir / 'metrics.jsonl'}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rspo",
        description="rspo kit: RL of multi-turn LLM agents with Reward-Swap Policy Optimization.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent("""\
            examples:
              rspo envs
              rspo play household --split valid_seen --seed 3
              rspo play shop --expert
              rspo demo
              rspo train --env household --algo gigpo --reward dense --seed 0
              rspo reproduce --profile quick
              rspo replay results/lab/study2/confirm/L7/detour-grpo-outcome-s20 --iterations 2
              rspo badges --repo OWNER/NAME"""),
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("envs", help="list the environments")
    p.set_defaults(func=list_cmd)

    p = sub.add_parser("play", help="play an episode in the terminal")
    p.add_argument("env", choices=envs.list_envs())
    p.add_argument("--split", default="train")
    p.add_argument(
        "--seed", type=bounded_int("seed"), default=None, help="draws the task (same seed, same task)"
    )
    p.add_argument("--task-id", default=None, help="a task id, e.g. valid_seen/00003")
    p.add_argument(
        "--misalignment", type=_unit_float, default=0.0, help="process-reward misalignment knob, 0..1"
    )
    p.add_argument(
        "--max-steps",
        type=bounded_int("max_steps"),
        default=None,
        help="horizon (default: the environment's)",
    )
    p.add_argument("--expert", action="store_true", help="let the expert play and watch")
    p.set_defaults(func=play)

    p = sub.add_parser(
        "train",
        help="train a policy (any algo x reward mode)",
        description="Train a policy. Every TrainConfig field is a flag; see docs/training.md.",
    )
    _add_config_flags(p)
    p.add_argument(
        "--profile",
        default=None,
        choices=list(profiles.TRAIN_PROFILES),
        help="start from a profile's settings for --env and --reward (rspo.study.experiments; flags and "
        "--config override them; default: on a CPU the quick profile's sizes, on a GPU TrainConfig's)",
    )
    p.set_defaults(func=train)

    p = sub.add_parser("demo", help="expert and random baselines on every environment's evaluation splits")
    p.add_argument("--limit", type=bounded_int("limit"), default=0, help="tasks per split (0 = all)")
    p.add_argument("--seed", type=bounded_int("seed"), default=0)
    p.add_argument("--out", default="runs/demo")
    p.set_defaults(func=demo)

    p = sub.add_parser(
        "reproduce",
        help="execute the numbered notebooks with papermill and write a report",
        description="Run notebooks/NN_*.ipynb with a profile's parameters into runs/reproduce-<profile>/ "
        "and write report.md and report.html there.",
    )
    p.add_argument(
        "--profile",
        default="quick",
        choices=list(profiles.PROFILES),
        help="; ".join(f"{k}: {v}" for k, v in profiles.PROFILE_NOTES.items()),
    )
    p.add_argument("--out", default=None, help="output folder (default: runs/reproduce-<profile>)")
    p.add_argument("--notebooks", nargs="*", default=None, help="only these (stems or NN prefixes)")
    p.add_argument(
        "--env",
        default=None,
        metavar="NAME",
        help="run the profile on this environment only (a built-in or an adapter, e.g. --profile gpu "
        "--env alfworld): the notebooks' envs and env_name parameters; output in "
        "runs/reproduce-<profile>-<NAME>",
    )
    p.add_argument(
        "--finished-only",
        action="store_true",
        help="train nothing in notebooks 03-05: they use the runs already finished in the profile's runs "
        "folder (e.g. by benchmarks/bench_learning.py), and the report says how many of the profile's "
        "runs that is and which are missing",
    )
    p.add_argument(
        "--publish",
        default=None,
        metavar="PATH.md",
        help="also copy the report there for committing (e.g. docs/results-cpu.md), its PNG figures "
        "into a folder beside it (docs/results-cpu/) and the logs of its finished runs into the "
        "results tree beside its folder (results/cpu/runs/)",
    )
    p.add_argument(
        "--restore",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="first put the run logs published with a report (default: results/<profile>/runs/) "
        "into the profile's runs folder, where no run of that name is: with --finished-only, the "
        "published report is rebuilt from them without training",
    )
    p.set_defaults(func=reproduce)

    p = sub.add_parser(
        "replay",
        help="re-run an archived run's first iterations and compare every metrics row",
        description="Re-run the first K iterations of an archived run (its config.json) in a scratch "
        "folder and compare every metrics row with the archived one, exactly (timings aside). Exit 0 "
        "when they match; 1 with the first differing value and the fingerprint fields that changed.",
    )
    p.add_argument("run", help="the archived run's folder (config.json, metrics.jsonl, fingerprint.json)")
    p.add_argument(
        "--iterations", type=bounded_int("iterations"), default=2, help="iterations to replay (default: 2)"
    )
    p.add_argument("--out", default=None, help="where the replay trains (default: a new temporary folder)")
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="relative tolerance of the comparison (default 0: exact; loosen only for another machine type)",
    )
    p.set_defaults(func=replay_cmd)

    p = sub.add_parser(
        "badges",
        help="write Open-in-Colab badges into notebooks/README.md",
        description="Write an Open-in-Colab badge in the Colab column of every notebook row of "
        "notebooks/README.md, for the public GitHub repository (run again to change repository or branch).",
    )
    p.add_argument(
        "--repo",
        default=None,
        help="the public GitHub repository: OWNER/NAME or its URL (default: from `git remote get-url origin`)",
    )
    p.add_argument("--branch", default="main", help="the branch the badges open (default: main)")
    p.add_argument("--readme", default="notebooks/README.md", help="the README with the notebook table")
    p.set_defaults(func=badges)
    return parser


def reproduce(args: argparse.Namespace, write=print) -> int:
    from rspo.study import reproduce as job

    return job.main(args, write)


def replay_cmd(args: argparse.Namespace, write=print) -> int:
    from rspo.core.replay import replay

    if not math.isfinite(args.tolerance) or args.tolerance < 0:
        raise ValueError(f"--tolerance must be a finite number >= 0, got {args.tolerance}")
    return replay(args.run, args.iterations, args.out, args.tolerance, write)


def badges(args: argparse.Namespace, write=print) -> int:
    """Open-in-Colab badges for the repository given, or the one `origin` points at."""
    from rspo.notebook import colab

    readme = Path(args.readme)
    if not readme.is_file():
        raise ValueError(f"no such file: {readme} (pass --readme)")
    repo = args.repo or colab.repo_from_git(readme.resolve().parent)
    if not repo:
        raise ValueError(
            "the repository is not known here (no GitHub `origin` remote): "
            "pass --repo OWNER/NAME, the public GitHub repository"
        )
    owner_name = colab.parse_repo(repo)
    changed = colab.write_badges(readme, owner_name, branch=args.branch)
    if changed:
        write(f"updated {readme}: {changed} Colab badge(s) for {owner_name} (branch {args.branch})")
    else:
        write(f"{readme}: Colab badges for {owner_name} (branch {args.branch}) already up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:  # bad names, splits, task ids, knobs: one clear line, no traceback
        print(f"rspo: error: {err}", file=sys.stderr)
        return 2
    except (RunLockedError, FloatingPointError) as err:  # another process on the run; a nan/inf update
        print(f"rspo: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # disk full, permission denied, a name too long ...: the file and the reason
        where = f"{err.filename}: " if err.filename else ""
        hint = (
            "; free some space, then run again (rspo train: with --resume)"
            if err.errno == errno.ENOSPC
            else ""
        )
        print(f"rspo: error: {where}{err.strerror or err}{hint}", file=sys.stderr)
        return 1
    except MemoryError:
        print(
            "rspo: error: out of memory; try a smaller --tasks-per-iter, --group-size, --micro-batch or model",
            file=sys.stderr,
        )
        return 1
    except RecursionError:
        print("rspo: error: an input nested too deeply (JSON?) to read", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
