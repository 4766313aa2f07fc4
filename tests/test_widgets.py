"""rspo.notebook.widgets: the notebooks' widgets, built and clicked without a display, and their headless fallbacks."""

from __future__ import annotations

import io
import sys

import pytest

import rspo.core.envs
from rspo.notebook import widgets


@pytest.fixture
def env():
    return rspo.core.envs.make("household", split="valid_seen")


def test_step_line_wraps_the_whole_observation_between_words():
    info = {"process_reward": 0.5, "progress": 0.25, "valid": True}
    obs = "On the sidetable 1, you see a keychain 2, a creditcard 1 and a pencil 3. " * 6
    line = widgets._step_line("go to desk 1", obs, 0.0, info)
    first, *body, last = line.splitlines()
    assert first == "> go to desk 1" and last == "  outcome 0.0  process 0.50  progress 0.25"
    assert len(body) > 1 and all(b.startswith("  ") and len(b) <= 100 for b in body)
    assert " ".join(b.strip() for b in body) == obs.strip()  # nothing cut, no word split
    assert "(invalid action)" in widgets._step_line("fly", "Nothing happens.", 0.0, {**info, "valid": False})
    assert "x" * 300 in widgets._step_line("a", "x" * 300, 0.0, info, width=None)
    two = widgets._step_line("look", "line one\nline two", 0.0, info)
    assert "\n  line one\n  line two\n" in two  # the observation's own lines are kept


def test_headless_play_of_the_expert_wins_and_prints_one_text_per_step(env):
    lines = []
    summary = widgets.play_episode(env, env.task_ids[0], interactive=False, out=lines.append)
    assert summary["won"] and summary["task_id"] == env.task_ids[0]
    assert summary["steps"] == env.steps > 0 and summary["outcome_return"] > 0
    assert lines[0].startswith("task: ") and lines[-1] == "won!"
    steps = lines[1:-1]
    assert len(steps) == summary["steps"] and all(s.startswith("> ") for s in steps)
    assert summary["process_return"] == pytest.approx(
        sum(float(s.rsplit("process ", 1)[1].split()[0]) for s in steps), abs=0.01 * len(steps)
    )


def test_headless_play_with_a_policy_and_max_steps(env):
    lines, seen = [], []

    def first_action(obs, info):
        seen.append(obs)
        return info["admissible_actions"][0]

    summary = widgets.play_episode(
        env, env.task_ids[1], interactive=False, policy=first_action, out=lines.append, max_steps=3
    )
    assert summary["steps"] == 3 == len(seen) and not summary["won"]
    assert lines[-1] == "stopped after 3 steps"
    with pytest.raises(ValueError, match="max_steps"):
        widgets.play_episode(env, interactive=False, max_steps=0)


def test_interactive_play_clicked_to_the_end_wins(env):
    box = widgets.play_episode(env, env.task_ids[0], interactive=True)
    assert [type(c).__name__ for c in box.children] == ["Label", "Label", "Dropdown", "Button", "Output"]
    state = box.state
    assert box.hint.value == f"expert's move: {env.expert_action()}"
    for _ in range(60):
        if box.button.disabled:
            break
        assert list(box.choice.options) == list(state.info["admissible_actions"])  # refreshed each step
        box.choice.value = env.expert_action()
        box.button.click()
    assert box.button.disabled and state.done and state.won and env.done
    assert state.steps == env.steps and state.lines[-1] == "won!" and len(state.lines) == state.steps + 1
    log = "".join(o["text"] for o in box.output.outputs)
    assert log.count("\n> ") + log.startswith("> ") == state.steps and log.endswith("won!\n")
    steps = state.steps
    box.button.click()  # a click after the end does nothing
    assert state.steps == steps


def test_interactive_play_ends_with_episode_over_when_lost(env):
    box = widgets.play_episode(env, env.task_ids[0], interactive=True, max_steps=2)
    for _ in range(2):
        box.button.click()  # the first admissible action, twice
    assert box.button.disabled and not box.state.won and box.state.lines[-1] == "episode over"


class FakeFigure:
    def __init__(self, args):
        self.args = args
        self.shown = 0

    def show(self):
        self.shown += 1


def recorder():
    calls = []

    def figure_fn(gamma, omega, adv_norm):
        calls.append((gamma, omega, adv_norm))
        return FakeFigure((gamma, omega, adv_norm))

    return figure_fn, calls


def test_knob_settings_are_every_slider_position():
    settings = widgets.knob_settings()
    assert len(settings) == 11 * 9 * 2 == len(set(settings))
    assert (0.95, 1.0, "std") in settings and (0.7, 0.25, "none") in settings  # rounded: 0.7, not 0.700..01
    box = widgets.advantage_knobs(recorder()[0], interactive=True)
    gamma, omega = box.controls["gamma"], box.controls["omega"]
    assert {g for g, _, _ in settings} == {round(gamma.min + k * gamma.step, 6) for k in range(11)}
    assert max(o for _, o, _ in settings) == omega.max and set(box.controls["adv_norm"].options) == {
        "std",
        "none",
    }


def test_progress_bars_off_for_a_headless_run_and_back_on():
    import tqdm.auto

    original = tqdm.auto.tqdm
    try:
        widgets.progress_bars(False)
        bar = tqdm.auto.tqdm(total=3, desc="warm start")
        assert bar.disable and isinstance(bar, original)
        bar.close()
        hf_logging = pytest.importorskip("transformers.utils.logging")
        assert hf_logging.tqdm(total=2, desc="Loading weights").disable  # transformers' bars go through it
        widgets.progress_bars(None)
        assert tqdm.auto.tqdm is original
        live = tqdm.auto.tqdm(total=3, disable=False, file=io.StringIO())
        assert not live.disable
        live.close()
    finally:
        widgets.progress_bars(True)
    assert tqdm.auto.tqdm is original


def test_advantage_knobs_headless_returns_one_figure_per_setting():
    figure_fn, calls = recorder()
    figs = widgets.advantage_knobs(figure_fn, interactive=False)
    assert [f.args for f in figs] == calls == [(0.95, 1.0, "std"), (0.6, 1.0, "std")]
    settings = ((0.9, 0.0, "none"),)
    assert [
        f.args for f in widgets.advantage_knobs(figure_fn, interactive=False, headless_settings=settings)
    ] == [(0.9, 0.0, "none")]


def test_advantage_knobs_interactive_redraws_on_every_change():
    figure_fn, calls = recorder()
    box = widgets.advantage_knobs(figure_fn, gamma=0.9, interactive=True)
    assert calls == [(0.9, 1.0, "std")] and box.figure.args == calls[0]  # drawn once at the start
    gamma, omega, norm = (box.controls[k] for k in ("gamma", "omega", "adv_norm"))
    assert (gamma.min, gamma.max, gamma.step, omega.min, omega.max, omega.step) == (
        0.5,
        1.0,
        0.05,
        0.0,
        2.0,
        0.25,
    )
    assert list(norm.options) == ["std", "none"] and box.children[-1] is box.output
    gamma.value = 0.7
    assert calls[-1] == (0.7, 1.0, "std")
    omega.value = 0.5
    norm.value = "none"
    assert calls[-2:] == [(0.7, 0.5, "std"), (0.7, 0.5, "none")] and len(calls) == 4


def test_advantage_knobs_with_a_plotly_figure():
    go = pytest.importorskip("plotly.graph_objects")
    box = widgets.advantage_knobs(lambda g, o, n: go.Figure(), interactive=True)  # builds without a display
    assert len(box.children) == 4


def test_interactive_without_ipywidgets_raises_a_clear_import_error(env, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match="pip install ipywidgets"):
        widgets.play_episode(env, interactive=True)
    with pytest.raises(ImportError, match="pip install ipywidgets"):
        widgets.advantage_knobs(lambda *a: None, interactive=True)
    # the automatic choice falls back to headless instead
    assert widgets.play_episode(env, env.task_ids[0], out=lambda s: None)["won"]
    assert len(widgets.advantage_knobs(recorder()[0])) == 2


def test_auto_uses_widgets_only_in_a_live_kernel(monkeypatch):
    import IPython

    assert not widgets.live_kernel() and not widgets.use_widgets(None)  # pytest: no kernel

    class Shell:
        kernel = object()

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    assert widgets.live_kernel() and widgets.use_widgets(None)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    assert not widgets.use_widgets(None)


def test_a_headless_notebook_run_keeps_no_frozen_progress_bar(tmp_path):
    """In a kernel tqdm.auto draws a widget bar, which a saved notebook keeps at its first frame ("0%")
    for good: with ``progress_bars(False)`` (``interactive`` False, as rspo reproduce sets it) the warm
    start's bar and transformers' bars leave nothing in the executed notebook."""
    nbformat = pytest.importorskip("nbformat")
    papermill = pytest.importorskip("papermill")
    pytest.importorskip("transformers")
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(
        cells=[
            new_code_cell("from rspo.notebook import widgets\nwidgets.progress_bars(False)"),
            new_code_cell(
                "from tqdm.auto import tqdm\nfor _ in tqdm(range(3), desc='warm start'):\n    pass"
            ),
            new_code_cell(
                "from transformers.utils import logging\n"
                "bar = logging.tqdm(total=2, desc='Loading weights')\nbar.update(2)\nbar.close()"
            ),
        ]
    )
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    src, out = tmp_path / "bars.ipynb", tmp_path / "bars-out.ipynb"
    nbformat.write(nb, src)
    papermill.execute_notebook(str(src), str(out), progress_bar=False, kernel_name="python3")
    outputs = [o for c in nbformat.read(out, as_version=4).cells for o in c.get("outputs", [])]
    assert outputs == [], outputs  # no widget bar, no text bar
