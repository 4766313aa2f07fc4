"""The random streams of a run: every draw a run makes (its tasks, each policy's sampling, torch's
global seed, the replayed groups) comes from a generator seeded by :func:`derive` from the run's
seed, the stream's number and the iteration. The numbers are part of every committed run's
randomness (``rspo replay`` reproduces runs bit for bit from them), so they never change.
Standard library only; the trainer and the explorer both draw from here."""

from __future__ import annotations

import random

STREAM_INIT = 0  # torch's global seed at the start
STREAM_TASKS = 1  # which tasks an iteration draws
STREAM_ROLLOUT = 2  # the learner's action sampling
STREAM_ITERATION = 3  # torch's global seed at the start of every iteration
STREAM_REPLAY = 4  # which replayed groups RSPO's learner sees
STREAM_EXPLORER = 5  # the explorer's action sampling


def derive(seed: int, *parts: int) -> int:
    """A 63-bit seed from ``seed`` and integer ``parts`` (stable across machines and runs)."""
    return random.Random(f"{seed}:" + ":".join(map(str, parts))).getrandbits(63)
