"""Shared pytest fixtures."""

from __future__ import annotations

import os
import threading
import time

import pytest
import torch
from household_worlds import SPLITS

from rspo.core.envs.household import HouseholdEnv


@pytest.fixture(scope="module")
def envs():
    """One household environment per split."""
    return {split: HouseholdEnv(split=split) for split in SPLITS}


@pytest.fixture
def one_thread():
    """Torch on one thread for the test (training tests: steadier and faster on a busy 2-core CPU)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def first_copy_succeeds():
    """An untrained model never succeeds in 4 steps, so every group would be without signal:
    pretend the first copy of every task succeeded at its last turn (a synthetic outcome)."""
    from tiny_fixtures import with_successes

    from rspo.core.registry import REWARD_MODES, RewardMode

    wrapped = [RewardMode(n, with_successes(REWARD_MODES[n].function)) for n in ("outcome", "dense")]
    with REWARD_MODES.temporary(*wrapped):
        yield


@pytest.fixture
def bars(monkeypatch):
    """The trainer's terminal progress bars of the test, each recording its arguments, updates, postfixes
    and whether it was closed (a library that wraps an iterable in a bar keeps the real one)."""
    import huggingface_hub.utils.tqdm  # noqa: F401  (subclasses tqdm.auto's bar when first imported)
    import tqdm.auto

    made = []

    class Bar:
        def __init__(self, **kw):
            self.kw, self.updates, self.posts, self.closed = kw, 0, [], False
            made.append(self)

        def update(self, n):
            self.updates += n

        def set_postfix(self, post):
            self.posts.append(post)

        def close(self):
            self.closed = True

    real = tqdm.auto.tqdm
    monkeypatch.setattr(tqdm.auto, "tqdm", lambda *a, **kw: real(*a, **kw) if a else Bar(**kw))
    return made


# the one environment whose full warm start the suite builds (the smallest: about 2 min on a fresh idle
# 2-core machine, where shop's took 11): make test (CI) builds it once
WARM_START_ENV = "detour"


@pytest.fixture(scope="session", autouse=True)
def announced_warm_starts(request):
    """A test that needs a warm-started default policy the cache lacks builds it (minutes): say so in
    the terminal, with the warm start's progress bar, instead of a silent test (pytest captures the
    output of tests, so this writes with capturing suspended)."""
    import time

    import rspo.core.sft as sft

    capture = request.config.pluginmanager.getplugin("capturemanager")
    build = sft.build_default

    def announced(env, config=None, *args, **kwargs):
        if config is None and env != WARM_START_ENV:
            raise AssertionError(
                f"a test builds the full {env} warm start (minutes; 11 for shop on an idle 2-core machine): "
                f"use {WARM_START_ENV!r}, whose warm start the suite builds anyway, or a small WarmStartConfig"
            )
        with capture.global_and_fixture_disabled():
            print(
                f"\n[rspo tests] building the warm-started default {env} policy once, for the tests that "
                f"need it (2-4 minutes on an idle 2-core machine; cached in {sft.default_policy_path(env).parent})",
                flush=True,
            )
            t0 = time.perf_counter()
            path = build(env, config, *args, **kwargs)
            print(f"[rspo tests] warm start of {env} built in {time.perf_counter() - t0:.0f} s", flush=True)
        return path

    sft.build_default = announced
    yield
    sft.build_default = build


@pytest.fixture(scope="session")
def terminal_fd(request):
    """A file descriptor of the terminal pytest started in, taken while capturing is off, so that a
    thread can write to it while a test's output is captured."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        fd = os.dup(1)
    else:
        with capture.global_and_fixture_disabled():
            fd = os.dup(1)
    yield fd
    os.close(fd)


@pytest.fixture(autouse=True)
def still_running(request, terminal_fd):
    """A test that runs longer than 20 s says so in the terminal every 20 s (pytest -q prints nothing
    while a test runs, and a terminal silent for a minute looks hung)."""
    stop = threading.Event()
    start = time.monotonic()

    def beat():
        while not stop.wait(20):
            line = f"\n[rspo tests] {request.node.nodeid} still running ({time.monotonic() - start:.0f} s)\n"
            os.write(terminal_fd, line.encode())

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()
