"""The notebooks' interactive widgets, each with a headless fallback.

Every function here takes ``interactive``:

- ``interactive=True`` builds ipywidgets objects and returns the widget box (show it by making it
  the last expression of a cell, or with ``IPython.display.display``). If ipywidgets cannot be
  imported this raises :class:`ImportError` naming ``pip install ipywidgets`` — it never falls back
  silently, so a user who asked for widgets learns why there are none.
- ``interactive=False`` runs without widgets and without a display: the episode is played by the
  expert (or a given policy) and printed step by step, the knobs are set to a few fixed settings and
  their figures returned. This is what a headless run (papermill, ``rspo reproduce``, CI) does.
- ``interactive=None`` (the default) decides automatically: widgets only when ipywidgets is importable
  *and* the code runs inside a live IPython kernel (``IPython.get_ipython()`` has a ``kernel``).
  A papermill run also has a kernel, so the notebooks do not rely on this: they pass their
  ``interactive`` parameter (``False`` by default) explicitly.

The widget objects can be built without a display (in tests, in a plain interpreter); button clicks
can be simulated with ``button.click()`` and slider or dropdown values set programmatically. The
episode log is kept both in the ``Output`` widget and as plain text in the returned state, since an
``Output`` widget only captures ``print`` inside a kernel.

>>> import rspo.envs
>>> from rspo import widgets
>>> env = rspo.envs.make("household", split="valid_seen")
>>> summary = widgets.play_episode(env, env.task_ids[0], interactive=False, out=lambda s: None)
>>> summary["won"]
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpisodeState", "advantage_knobs", "live_kernel", "play_episode", "use_widgets"]

_INSTALL_HINT = (
    "the interactive widgets need ipywidgets: pip install ipywidgets "
    "(or pass interactive=False for the headless version)"
)


# --- when to use widgets ------------------------------------------------------------------------
def _import_widgets():
    """``ipywidgets``, or an ImportError that says how to install it."""
    try:
        import ipywidgets
    except ImportError as err:
        raise ImportError(_INSTALL_HINT) from err
    return ipywidgets


def live_kernel() -> bool:
    """True when running inside an IPython kernel (a notebook, papermill), not a terminal or a script."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def use_widgets(interactive: bool | None) -> bool:
    """Resolve ``interactive``: None means "ipywidgets importable and a live kernel"; True demands ipywidgets."""
    if interactive is None:
        if not live_kernel():
            return False
        try:
            _import_widgets()
        except ImportError:
            return False
        return True
    if interactive:
        _import_widgets()  # raises with the install hint
        return True
    return False


# --- playing an episode ---------------------------------------------------------------------------
def _step_line(
    action: str, obs: str, reward: float, info: dict[str, Any], obs_chars: int | None = 120
) -> str:
    """The text of one step: the action, the observation (cut to ``obs_chars``), the rewards and progress."""
    shown = obs if obs_chars is None else obs[:obs_chars]
    invalid = "" if info.get("valid", True) else "  (invalid action)"
    return (
        f"> {action}{invalid}\n  {shown}\n"
        f"  outcome {reward}  process {info['process_reward']:.2f}  progress {info['progress']:.2f}"
    )


@dataclass
class EpisodeState:
    """One episode in progress: the environment, the latest observation and info, the running totals.

    ``lines`` holds the text of every step (the same text the widget log or the headless run shows).
    """

    env: Any
    obs: str
    info: dict[str, Any]
    max_steps: int | None = None
    steps: int = 0
    outcome_return: float = 0.0
    process_return: float = 0.0
    done: bool = False
    stopped: bool = False  # ended by ``max_steps`` before the environment ended the episode
    lines: list[str] = field(default_factory=list)

    @property
    def won(self) -> bool:
        return bool(self.info.get("won", False))

    def step(self, action: str, obs_chars: int | None = 120) -> str:
        """Take ``action``; update the totals; return (and record) the step's text."""
        if self.done:
            raise RuntimeError("the episode has ended")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.obs, self.info = obs, info
        self.steps += 1
        self.outcome_return += float(reward)
        self.process_return += float(info["process_reward"])
        self.stopped = (
            not (terminated or truncated) and self.max_steps is not None and self.steps >= self.max_steps
        )
        self.done = bool(terminated or truncated or self.stopped)
        line = _step_line(action, obs, reward, info, obs_chars)
        self.lines.append(line)
        return line

    def summary(self) -> dict[str, Any]:
        return {
            "task_id": self.info.get("task_id"),
            "steps": self.steps,
            "won": self.won,
            "outcome_return": self.outcome_return,
            "process_return": self.process_return,
        }


def play_episode(
    env,
    task_id: str | None = None,
    *,
    interactive: bool | None = None,
    policy: Callable[[str, dict[str, Any]], str] | None = None,
    out: Callable[[str], Any] = print,
    max_steps: int | None = None,
):
    """Play one episode of ``env`` on ``task_id`` (a random task of the split when None).

    Interactive: returns an ipywidgets ``VBox`` — the task, a hint with the suggested move (the
    expert's, or ``policy``'s when given), a dropdown of the admissible actions, a *step* button and
    a log. The dropdown refreshes after each step; at the end the button is disabled and the log says
    ``won!`` or ``episode over``. The box carries its parts as attributes (``task``, ``hint``,
    ``choice``, ``button``, ``output`` — the log) and the episode as ``state`` (an :class:`EpisodeState`).

    Headless: ``policy(obs, info) -> action`` (default: ``env.expert_action()``) plays the episode;
    ``out`` receives the task line, one text per step (see :func:`_step_line`) and a verdict
    (``won!``, ``lost`` or ``stopped after N steps``). Returns :meth:`EpisodeState.summary`:
    ``{"task_id", "steps", "won", "outcome_return", "process_return"}``.

    ``max_steps`` stops the episode after that many steps (the environment's own horizon still applies).
    """
    if max_steps is not None and (
        not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1
    ):
        raise ValueError(f"max_steps must be a positive integer or None, got {max_steps!r}")
    widgets = use_widgets(interactive)
    obs, info = env.reset(task_id=task_id)
    state = EpisodeState(env=env, obs=obs, info=info, max_steps=max_steps)

    def suggest() -> str:
        return policy(state.obs, state.info) if policy is not None else env.expert_action()

    if not widgets:
        out(f"task: {info['task']}\n")
        while not state.done:
            out(state.step(suggest()))
        out("won!" if state.won else f"stopped after {state.steps} steps" if state.stopped else "lost")
        return state.summary()

    w = _import_widgets()
    who = "policy" if policy is not None else "expert"
    task = w.Label(value=f"task: {info['task']}")
    hint = w.Label()
    choice = w.Dropdown(options=list(info["admissible_actions"]), description="action")
    button = w.Button(description="step")
    log = w.Output()

    def refresh() -> None:
        choice.options = list(state.info["admissible_actions"])
        hint.value = f"{who}'s move: {suggest()}"

    def on_click(_button=None) -> None:
        if state.done or choice.value is None:
            return
        log.append_stdout(state.step(choice.value, obs_chars=None) + "\n")
        if state.done:
            button.disabled = True
            choice.disabled = True
            hint.value = ""
            verdict = "won!" if state.won else "episode over"
            state.lines.append(verdict)
            log.append_stdout(verdict + "\n")
        else:
            refresh()

    refresh()
    button.on_click(on_click)
    box = w.VBox([task, hint, choice, button, log])
    box.task, box.hint, box.choice, box.button, box.output, box.state = task, hint, choice, button, log, state
    return box


# --- the advantage knobs of notebook 02 ------------------------------------------------------------
def _show(fig) -> None:
    if hasattr(fig, "show"):
        fig.show()
    else:
        from IPython.display import display

        display(fig)


def advantage_knobs(
    figure_fn: Callable[[float, float, str], Any],
    *,
    gamma: float = 0.95,
    omega: float = 1.0,
    adv_norm: str = "std",
    interactive: bool | None = None,
    headless_settings: Sequence[tuple[float, float, str]] = ((0.95, 1.0, "std"), (0.6, 1.0, "std")),
):
    """Sliders for GiGPO's γ and ω and a dropdown for the normalisation, redrawing ``figure_fn(gamma, omega, adv_norm)``.

    Interactive: returns a ``VBox`` of the controls (γ 0.5..1 step 0.05, ω 0..2 step 0.25,
    adv_norm std | none) above an ``Output`` that shows the figure; it is drawn once at the start and
    again on every change. The box carries ``controls`` (a dict name -> widget), ``output`` and the
    latest ``figure`` (outside a kernel the figure is only kept there, not shown).

    Headless: returns ``[figure_fn(g, o, n) for (g, o, n) in headless_settings]``; show them yourself.
    """
    if not use_widgets(interactive):
        return [figure_fn(g, o, n) for g, o, n in headless_settings]

    w = _import_widgets()
    controls = {
        "gamma": w.FloatSlider(value=gamma, min=0.5, max=1.0, step=0.05, description="gamma"),
        "omega": w.FloatSlider(value=omega, min=0.0, max=2.0, step=0.25, description="omega"),
        "adv_norm": w.Dropdown(options=["std", "none"], value=adv_norm, description="adv_norm"),
    }
    output = w.Output()

    box = w.VBox([*controls.values(), output])
    box.controls, box.output, box.figure = controls, output, None

    def redraw(_change=None) -> None:
        box.figure = figure_fn(controls["gamma"].value, controls["omega"].value, controls["adv_norm"].value)
        if live_kernel():  # outside a kernel nothing can show it (and plotly's show() would open a browser)
            output.clear_output(wait=True)
            with output:
                _show(box.figure)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return box
