"""Per-step prompts for LM agents, built as verl-agent builds them (docs/design.md §4).

A prompt is rebuilt at every step from: the task, the step count, the last ``history`` observation /
action pairs, the environment's memory line (e.g. places visited), the current observation and the
admissible actions - not an ever-growing transcript. :func:`build_prompt` returns plain text; the
policy wraps it in the tokenizer's chat template as one user message.

The two action modes end the prompt differently: in ``generate`` mode the model is asked to answer
``<action>...</action>`` (parsed by :func:`rspo.core.policies.parser.parse_action`); in ``score`` mode
the admissible actions are scored as the assistant's reply, so no format instruction is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from rspo.core.envs.registry import ENVS, GENERIC_INTRO

GENERATE_SUFFIX = (
    "Choose one admissible action. Reason briefly if you wish, then give the action inside "
    "<action></action> tags, e.g. <action>{example}</action>."
)


def build_prompt(
    env_name: str,
    task: str,
    step: int,
    observation: str,
    admissible: Sequence[str],
    history: Sequence[tuple[str, str]] = (),
    memory: str = "",
    show_admissible: bool = True,
    action_mode: str = "score",
) -> str:
    """The text of the user message at one step.

    Args:
        env_name: the environment (its registry entry's one-line ``intro``; unknown names get a generic one).
        task: the instruction (``info["task"]``).
        step: how many steps were already taken (0 at the first step).
        observation: the current observation.
        admissible: ``info["admissible_actions"]``.
        history: the last H (observation, action) pairs, oldest first; the caller keeps the window.
        memory: ``env.memory()`` (e.g. "Visited: countertop 1, fridge 1."), omitted when empty.
        show_admissible: list the admissible actions (verl-agent does; costs tokens).
        action_mode: "generate" adds the ``<action>`` format instruction.
    """
    intro = (ENVS[env_name].intro if env_name in ENVS else GENERIC_INTRO).format(task=task)
    parts = [intro]
    if history:
        lines = [f"Observation: {obs}\nAction: {act}" for obs, act in history]
        parts.append(
            f"You have taken {step} step(s). Your last {len(history)} observation(s) and action(s):\n"
            + "\n".join(lines)
        )
    if memory:
        parts.append(memory)
    parts.append(f"Step {step + 1}. Current observation: {observation}")
    if show_admissible:
        parts.append("Admissible actions: " + " | ".join(admissible))
    if action_mode == "generate":
        parts.append(GENERATE_SUFFIX.format(example=admissible[0] if admissible else "look"))
    return "\n".join(parts)
