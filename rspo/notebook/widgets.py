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
  ``interactive`` parameter (``None`` by default; ``rspo reproduce`` sets it to ``False``) explicitly.

The same parameter switches progress bars (:func:`progress_bars`): live in JupyterLab and a terminal,
off in a headless run, whose saved notebook would keep a bar's first frame ("0%") for good.

The widget objects can be built without a display (in tests, in a plain interpreter); button clicks
can be simulated with ``button.click()`` and slider or dropdown values set programmatically. The
episode log is kept both in the ``Output`` widget and as plain text in the returned state, since an
``Output`` widget only captures ``print`` inside a kernel.

>>> import rspo.core.envs
>>> from rspo.notebook import widgets
>>> env = rspo.core.envs.make("household", split="valid_seen")
>>> summary = widgets.play_episode(env, env.task_ids[0], interactive=False, out=lambda s: None)
>>> summary["won"]
True
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EpisodeState",
    "advantage_knobs",
    "knob_settings",
    "live_kernel",
    "play_episode",
    "progress_bars",
    "use_widgets",
    "wrap_text",
]

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


# --- progress bars --------------------------------------------------------------------------------
_TQDM: Any = None  # tqdm.auto's own class, kept while progress_bars(False) has replaced it
_HUB_OFF = [False]  # huggingface_hub's bars turned off by progress_bars(False)


def progress_bars(show: bool | None) -> None:
    """Progress bars on (``None`` or ``True``: JupyterLab, a terminal) or off (``False``: a headless run)
    for the rest of this process.

    A headless run (papermill, ``rspo reproduce``) keeps a notebook progress bar as the first frame
    it displayed — "0%", for good — so the notebooks call ``progress_bars(interactive)`` with their
    ``interactive`` parameter, which ``rspo reproduce`` sets to False. Off means: every bar made with
    ``tqdm.auto`` (the warm start's, training's, and Hugging Face transformers' "Loading weights" and
    "Writing model shards", which go through it) and huggingface_hub's download bars are disabled.
    """
    global _TQDM
    import tqdm.auto

    if _TQDM is None:
        _TQDM = tqdm.auto.tqdm
    if show is False:

        class QuietTqdm(_TQDM):
            def __init__(self, *args, **kwargs):
                kwargs["disable"] = True
                super().__init__(*args, **kwargs)

        tqdm.auto.tqdm = QuietTqdm
    else:
        tqdm.auto.tqdm = _TQDM
    if (show is False) == _HUB_OFF[0]:
        return
    try:
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
    except ImportError:
        return
    (disable_progress_bars if show is False else enable_progress_bars)()  # only undoes what it did
    _HUB_OFF[0] = show is False


# --- playing an episode ---------------------------------------------------------------------------
def wrap_text(text: str, width: int | None = 100, indent: str = "  ") -> str:
    """``text`` indented, its lines wrapped at ``width`` characters between words (None: not wrapped)."""
    if width is None:
        return textwrap.indent(text, indent)
    return "\n".join(
        textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)
        or indent
        for line in text.splitlines() or [""]
    )


def _step_line(action: str, obs: str, reward: float, info: dict[str, Any], width: int | None = 100) -> str:
    """The text of one step: the action, the whole observation (wrapped at ``width`` characters between
    words, None: as it is), the rewards (the environment's units: a success pays 1.0) and progress."""
    invalid = "" if info.get("valid", True) else "  (invalid action)"
    return (
        f"> {action}{invalid}\n{wrap_text(obs, width)}\n"
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

    def step(self, action: str, width: int | None = 100) -> str:
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
        line = _step_line(action, obs, reward, info, width)
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
        log.append_stdout(state.step(choice.value) + "\n")
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
GAMMA_SLIDER = (0.5, 1.0, 0.05)  # min, max, step of the γ slider
OMEGA_SLIDER = (0.0, 2.0, 0.25)  # min, max, step of the ω slider
ADV_NORMS = ("std", "none")  # the normalisation dropdown


def _positions(lo: float, hi: float, step: float) -> list[float]:
    return [round(lo + k * step, 6) for k in range(round((hi - lo) / step) + 1)]


def knob_settings() -> list[tuple[float, float, str]]:
    """Every (γ, ω, adv_norm) the knobs of :func:`advantage_knobs` can be set to: 11 x 9 x 2 settings.
    :func:`rspo.notebook.plots.knob_heatmaps` fixes its colour ranges over them, so they do not move with the
    sliders."""
    return [
        (g, o, n) for n in ADV_NORMS for g in _positions(*GAMMA_SLIDER) for o in _positions(*OMEGA_SLIDER)
    ]


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
    (g_lo, g_hi, g_step), (o_lo, o_hi, o_step) = GAMMA_SLIDER, OMEGA_SLIDER
    controls = {
        "gamma": w.FloatSlider(value=gamma, min=g_lo, max=g_hi, step=g_step, description="gamma"),
        "omega": w.FloatSlider(value=omega, min=o_lo, max=o_hi, step=o_step, description="omega"),
        "adv_norm": w.Dropdown(options=list(ADV_NORMS), value=adv_norm, description="adv_norm"),
    }
    output = w.Output()

    box = w.VBox([*controls.values(), output])
    box.controls, box.output, box.figure = controls, output, None

    def redraw(_change=None) -> None:
        gamma, omega = (
            round(controls[k].value, 6) for k in ("gamma", "omega")
        )  # 0.7, not 0.7000000000000001
        box.figure = figure_fn(gamma, omega, controls["adv_norm"].value)
        if live_kernel():  # outside a kernel nothing can show it (and plotly's show() would open a browser)
            output.clear_output(wait=True)
            with output:
                _show(box.figure)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return box
