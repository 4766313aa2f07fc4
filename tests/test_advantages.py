"""Advantage estimators: hand-computed cases, a slow loop reference on random batches, edge cases."""

from __future__ import annotations

import math
import random

import pytest
import torch

from rspo.core import advantages as A

S2 = math.sqrt(2.0)
EPS = 1e-6


def t(xs, dtype=torch.float64):
    return torch.tensor(xs, dtype=dtype)


def ids(xs):
    return torch.tensor(xs, dtype=torch.long)


def close(x, y, tol=1e-9):
    assert torch.allclose(torch.as_tensor(x, dtype=torch.float64), t(y), rtol=tol, atol=tol), (x, y)


# ----------------------------------------------------------------------------------------------
# Slow reference: plain Python loops over samples, written from the formulas, not from the code.
# ----------------------------------------------------------------------------------------------
def ref_norm(xs, normalize="std", eps=EPS):
    """Group-normalise a list: unbiased std; all-equal (incl. singleton) -> 0."""
    if len(set(xs)) <= 1:
        return [0.0] * len(xs)
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return [(x - m) / (sd + eps) if normalize == "std" else x - m for x in xs]


def ref_apply(keys, values, normalize="std"):
    """Normalise ``values`` within groups of equal ``keys`` (lists of equal length)."""
    groups = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    out = [0.0] * len(values)
    for rows in groups.values():
        for i, v in zip(rows, ref_norm([values[i] for i in rows], normalize), strict=True):
            out[i] = v
    return out


def ref_turns(traj):
    seen, out = {}, []
    for j in traj:
        out.append(seen.get(j, 0))
        seen[j] = seen.get(j, 0) + 1
    return out


def ref_returns(traj, rewards, gamma):
    out = [0.0] * len(rewards)
    for i in range(len(rewards)):
        later = [k for k in range(i, len(rewards)) if traj[k] == traj[i]]
        out[i] = sum(gamma ** (n) * rewards[k] for n, k in enumerate(later))
    return out


def ref_episode(task, traj, ret, normalize="std", stats="trajectory"):
    if stats == "turn":
        return ref_apply(task, ret, normalize)
    first = {}
    for i, j in enumerate(traj):
        first.setdefault(j, i)
    trajs = list(first)
    per = dict(
        zip(
            trajs,
            ref_apply([task[first[j]] for j in trajs], [ret[first[j]] for j in trajs], normalize),
            strict=True,
        )
    )
    return [per[j] for j in traj]


def ref_rloo(task, traj, ret):
    first = {}
    for i, j in enumerate(traj):
        first.setdefault(j, i)
    out = []
    for i, j in enumerate(traj):
        others = [ret[first[k]] for k in first if k != j and task[first[k]] == task[i]]
        out.append(
            0.0 if not others or len(set(others + [ret[i]])) == 1 else ret[i] - sum(others) / len(others)
        )
    return out


def ref_gigpo(task, traj, rew, ret, anchor, gamma, omega, normalize, stats):
    ep = ref_episode(task, traj, ret, normalize, stats)
    step = ref_apply(list(zip(task, anchor, strict=True)), ref_returns(traj, rew, gamma), normalize)
    return [e + omega * s for e, s in zip(ep, step, strict=True)]


def ref_turn_level(task, traj, rew, gamma, form, group_by, normalize):
    turns = ref_turns(traj)
    keys = list(zip(task, turns, strict=True)) if group_by == "task_turn" else list(task)
    if form == "return":
        return ref_apply(keys, ref_returns(traj, rew, gamma), normalize)
    return ref_returns(traj, ref_apply(keys, rew, normalize), gamma)


def ref_gae(traj, rew, val, gamma, lam, dones, boot):
    out = [0.0] * len(rew)
    for i in reversed(range(len(rew))):
        nxt = i + 1 if i + 1 < len(rew) and traj[i + 1] == traj[i] else None
        last = nxt is None
        done = last if dones is None else dones[i]
        v_next = (boot[i] if boot is not None else 0.0) if last else val[nxt]
        delta = rew[i] + gamma * v_next * (not done) - val[i]
        out[i] = delta + (0.0 if last or done else gamma * lam * out[nxt])
    return out


def random_batch(seed):
    """Random tasks x groups x lengths; interleaved task order; anchors with collisions; tied values."""
    rng = random.Random(seed)
    task, traj, rew, ret, anchor, val = [], [], [], [], [], []
    tasks = [rng.randrange(100) for _ in range(rng.randint(1, 4))]
    plan = [(k, rng.randint(1, 5)) for k in tasks for _ in range(rng.randint(1, 5))]
    rng.shuffle(plan)
    traj_ids = rng.sample(range(1000), len(plan))
    tied = rng.random() < 0.5
    for (k, length), j in zip(plan, traj_ids, strict=True):
        rs = [rng.choice([0.0, 0.5, 1.0]) if tied else rng.gauss(0, 1) for _ in range(length)]
        for n in range(length):
            task.append(k)
            traj.append(j)
            rew.append(rs[n])
            ret.append(sum(rs))
            anchor.append(rng.randrange(4))
            val.append(rng.gauss(0, 1))
    return task, traj, rew, ret, anchor, val


SEEDS = range(12)


# ----------------------------------------------------------------------------------------------
# Hand-computed cases
# ----------------------------------------------------------------------------------------------
def test_grpo_by_hand():
    # one task; trajectories of 2, 1, 1 turns with returns 1, 0, 0
    task, traj, ret = ids([0, 0, 0, 0]), ids([7, 7, 8, 9]), t([1, 1, 0, 0])
    # over trajectories: mean 1/3, unbiased var ((2/3)^2 + 2 (1/3)^2) / 2 = 1/3, std = 1/sqrt(3)
    sd = 1 / math.sqrt(3)
    close(A.grpo(task, traj, ret), [2 / 3 / (sd + EPS)] * 2 + [-1 / 3 / (sd + EPS)] * 2)
    close(A.grpo(task, traj, ret, normalize="none"), [2 / 3, 2 / 3, -1 / 3, -1 / 3])
    # over turn rows [1, 1, 0, 0]: mean 1/2, unbiased var 4 (1/4) / 3 = 1/3 -> +-0.5 / std
    close(A.grpo(task, traj, ret, episode_stats="turn"), [0.5 / (sd + EPS)] * 2 + [-0.5 / (sd + EPS)] * 2)


def test_rloo_by_hand():
    # task 0: returns 3, 1, 2 -> 3 - (1+2)/2 = 1.5, 1 - (3+2)/2 = -1.5, 2 - (3+1)/2 = 0; task 5 alone -> 0
    task, traj, ret = ids([0, 0, 0, 0, 5]), ids([1, 1, 2, 3, 4]), t([3, 3, 1, 2, 9])
    close(A.rloo(task, traj, ret), [1.5, 1.5, -1.5, 0.0, 0.0])


def test_turn_level_by_hand():
    # one task, two trajectories of two turns: rewards a = [1, 0], b = [0, 1]; gamma 0.5
    task, traj, rew = ids([0, 0, 0, 0]), ids([0, 0, 1, 1]), t([1, 0, 0, 1])
    s = math.sqrt(0.125)  # std of a pair that differs by 0.5: sqrt(2 * 0.25^2 / 1)
    # return form: G_a = [1, 0], G_b = [0.5, 1]; turn 0 pair (1, 0.5) -> +-0.25/s; turn 1 (0, 1) -> -+0.5/sqrt(.5)
    h = 0.5 / (1 / S2 + EPS)
    close(A.turn_level(task, traj, rew, gamma=0.5), [0.25 / (s + EPS), -h, -0.25 / (s + EPS), h])
    # mt_grpo form: norm(r) at turn 0 = (+h, -h), at turn 1 = (-h, +h); A_0 = norm r_0 + 0.5 norm r_1
    close(A.turn_level(task, traj, rew, gamma=0.5, form="mt_grpo"), [h / 2, -h, -h / 2, h])
    # two turns, gamma = alpha: exactly MT-GRPO's A_1 = Â^I + alpha Â^O, A_2 = Â^O
    alpha = 0.3
    close(A.turn_level(task, traj, rew, gamma=alpha, form="mt_grpo"), [h - alpha * h, -h, -h + alpha * h, h])


def test_gigpo_by_hand():
    # traj 0: anchors s0, s1; rewards 0, 1; R = 1.   traj 1: anchors s0, s2, s1; rewards 0; R = 0
    task, traj = ids([0] * 5), ids([0, 0, 1, 1, 1])
    rew, ret, anchor = t([0, 1, 0, 0, 0]), t([1, 1, 0, 0, 0]), ids([10, 11, 10, 12, 11])
    h = 0.5 / (1 / S2 + EPS)  # a pair differing by 1: centred +-0.5, std 1/sqrt(2)
    q = 0.25 / (math.sqrt(0.125) + EPS)  # a pair differing by 0.5
    # gamma 0.5: step returns traj0 = [0.5, 1], traj1 = [0, 0, 0]
    # s0 = {0.5, 0} -> +-q;  s1 = {1, 0} -> +-h;  s2 singleton -> 0
    step = [q, h, -q, 0.0, -h]
    close(A.step_advantage(task, traj, rew, anchor, gamma=0.5), step)
    # episode over trajectories: {1, 0} -> +-h
    episode = [h, h, -h, -h, -h]
    close(
        A.gigpo(task, traj, rew, ret, anchor, gamma=0.5), [e + s for e, s in zip(episode, step, strict=True)]
    )
    close(
        A.gigpo(task, traj, rew, ret, anchor, gamma=0.5, omega=0.5),
        [e + s / 2 for e, s in zip(episode, step, strict=True)],
    )
    # episode over turns: rows [1, 1, 0, 0, 0], mean 0.4, unbiased var (2 .36 + 3 .16) / 4 = 0.3
    sd = math.sqrt(0.3)
    turn_ep = [0.6 / (sd + EPS)] * 2 + [-0.4 / (sd + EPS)] * 3
    got = A.gigpo(task, traj, rew, ret, anchor, gamma=0.5, episode_stats="turn")
    close(got, [e + s for e, s in zip(turn_ep, step, strict=True)])
    # "none": F = 1 at both levels: s0 +-0.25, s1 +-0.5, episode +-0.5
    got = A.gigpo(task, traj, rew, ret, anchor, gamma=0.5, normalize="none")
    close(got, [0.5 + 0.25, 0.5 + 0.5, -0.5 - 0.25, -0.5, -0.5 - 0.5])


def test_gae_by_hand():
    traj, rew, val = ids([3, 3]), t([0, 1]), t([0.5, 0.8])
    # gamma = lam = 1: delta_1 = 1 - 0.8 = 0.2, delta_0 = 0 + 0.8 - 0.5 = 0.3 -> A = [0.5, 0.2]
    adv, ret = A.gae(traj, rew, val)
    close(adv, [0.5, 0.2])
    close(ret, [1.0, 1.0])  # A + V = the Monte Carlo return
    # gamma 0.9, lam 0.5: delta_0 = 0.9 * 0.8 - 0.5 = 0.22; A_0 = 0.22 + 0.45 * 0.2 = 0.31
    close(A.gae(traj, rew, val, gamma=0.9, lam=0.5)[0], [0.31, 0.2])
    # truncated (not done) with V(s_T) = 2: delta_1 = 1 + 2 - 0.8 = 2.2, A_0 = 0.3 + 2.2
    adv, _ = A.gae(traj, rew, val, dones=torch.tensor([False, False]), bootstrap_values=t([2, 2]))
    close(adv, [2.5, 2.2])
    # not done but no bootstrap value: bootstraps 0, same as terminal
    close(A.gae(traj, rew, val, dones=torch.tensor([False, False]))[0], [0.5, 0.2])


def test_discounted_returns_and_turn_index():
    traj, rew = ids([4, 4, 4, 2, 2]), t([1, 0, 2, 3, 1])
    assert A.turn_index(traj).tolist() == [0, 1, 2, 0, 1]
    close(A.discounted_returns(traj, rew, gamma=0.5), [1 + 0 + 0.25 * 2, 0 + 0.5 * 2, 2, 3 + 0.5, 1])
    close(A.discounted_returns(traj, rew, gamma=0.0), rew.tolist())  # gamma 0: the reward itself
    close(A.discounted_returns(traj, rew, gamma=1.0), [3, 2, 2, 4, 1])  # gamma 1: plain reward-to-go
    # rows of a trajectory need not be contiguous, only in turn order
    assert A.turn_index(ids([1, 2, 1, 2, 1])).tolist() == [0, 0, 1, 1, 2]


# ----------------------------------------------------------------------------------------------
# Vectorised == slow reference on random batches
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_against_reference(seed):
    task, traj, rew, ret, anchor, val = random_batch(seed)
    T, J, R, G, X, V = ids(task), ids(traj), t(rew), t(ret), ids(anchor), t(val)
    for normalize in ("std", "none"):
        for stats in ("trajectory", "turn"):
            close(
                A.grpo(T, J, G, normalize=normalize, episode_stats=stats),
                ref_episode(task, traj, ret, normalize, stats),
            )
            for gamma, omega in ((0.95, 1.0), (0.5, 0.3)):
                got = A.gigpo(
                    T, J, R, G, X, gamma=gamma, omega=omega, normalize=normalize, episode_stats=stats
                )
                close(got, ref_gigpo(task, traj, rew, ret, anchor, gamma, omega, normalize, stats))
        for form in ("return", "mt_grpo"):
            for group_by in ("task_turn", "task"):
                got = A.turn_level(T, J, R, gamma=0.9, form=form, group_by=group_by, normalize=normalize)
                close(got, ref_turn_level(task, traj, rew, 0.9, form, group_by, normalize))
    close(A.rloo(T, J, G), ref_rloo(task, traj, ret))
    rng = random.Random(seed)
    dones = [rng.random() < 0.3 for _ in rew]
    boot = [rng.gauss(0, 1) for _ in rew]
    for gamma, lam in ((1.0, 1.0), (0.9, 0.7)):
        close(A.gae(J, R, V, gamma=gamma, lam=lam)[0], ref_gae(traj, rew, val, gamma, lam, None, None))
        got, targets = A.gae(
            J, R, V, gamma=gamma, lam=lam, dones=torch.tensor(dones), bootstrap_values=t(boot)
        )
        close(got, ref_gae(traj, rew, val, gamma, lam, dones, boot))
        close(targets, (got + V).tolist())


# ----------------------------------------------------------------------------------------------
# Edge cases
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.1, 0.7, 1 / 3, 2.2, 1e8 + 0.1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_zero_variance_group_is_exactly_zero(value, dtype):
    task, traj = ids([0] * 7), ids([0, 1, 1, 2, 3, 4, 5])
    x = torch.full((7,), value, dtype=dtype)
    for estimator in (A.grpo, A.rloo):
        assert torch.equal(estimator(task, traj, x), torch.zeros(7, dtype=dtype))
    assert torch.equal(A.grpo(task, traj, x, episode_stats="turn"), torch.zeros(7, dtype=dtype))
    same_anchor = ids([5] * 7)
    flat = torch.zeros(7, dtype=dtype).index_fill_(0, ids([0, 2, 3, 4, 5, 6]), value)  # every R_t equal
    got = A.gigpo(task, traj, flat, x, same_anchor, gamma=1.0)  # step returns all equal, episode flat
    assert torch.equal(got, torch.zeros(7, dtype=dtype))
    # a pair of equal values (unbiased std 0) -> 0, not a float residue / 1e-6
    assert torch.equal(
        A.turn_level(ids([0, 0]), ids([0, 1]), torch.full((2,), value, dtype=dtype)),
        torch.zeros(2, dtype=dtype),
    )


def test_naive_formula_leaves_a_residue_the_kit_removes():
    # why the kit masks flat groups: (x - mean) / (std + 1e-6) of seven equal float32 0.7 is not 0
    x = torch.full((7,), 0.7, dtype=torch.float32)
    assert ((x - x.mean()) / (x.std() + 1e-6)).abs().max() > 1e-3
    assert torch.equal(A.grpo(ids([0] * 7), ids(range(7)), x), torch.zeros(7))


def test_singleton_anchor_group_gives_zero_step_advantage():
    task, traj, rew = ids([0, 0, 0]), ids([0, 1, 2]), t([0.3, 1.0, -2.0])
    assert torch.equal(A.step_advantage(task, traj, rew, ids([1, 2, 3])), torch.zeros(3, dtype=torch.float64))
    # the same anchor id in *different tasks* is not one group
    assert torch.equal(
        A.step_advantage(ids([0, 1, 2]), traj, rew, ids([1, 1, 1])), torch.zeros(3, dtype=torch.float64)
    )


def test_single_trajectory_task_group():
    task, traj, rew, ret = ids([0, 0, 0]), ids([4, 4, 4]), t([0, 0, 10]), t([10, 10, 10])
    zeros = torch.zeros(3, dtype=torch.float64)
    for stats in ("trajectory", "turn"):
        assert torch.equal(
            A.grpo(task, traj, ret, episode_stats=stats), zeros
        )  # verl-agent: R (mean 0, std 1)
    assert torch.equal(A.rloo(task, traj, ret), zeros)
    assert torch.equal(A.gigpo(task, traj, rew, ret, ids([1, 2, 3])), zeros)  # distinct anchors
    # a state revisited inside one trajectory is still an anchor group of two rows
    step = A.step_advantage(task, traj, rew, ids([1, 2, 1]), gamma=0.5)  # R_t = 2.5, 5, 10
    assert step[1] == 0 and step[0] < 0 < step[2]


@pytest.mark.parametrize("seed", SEEDS)
def test_omega_zero_is_grpo(seed):
    task, traj, rew, ret, anchor, _ = random_batch(seed)
    for stats in ("trajectory", "turn"):
        got = A.gigpo(ids(task), ids(traj), t(rew), t(ret), ids(anchor), omega=0.0, episode_stats=stats)
        assert torch.equal(got, A.grpo(ids(task), ids(traj), t(ret), episode_stats=stats))


def test_episode_stats_trajectory_vs_turn():
    task, ret = ids([0] * 5), t([1, 1, 1, 0, 0])
    unequal = ids([0, 0, 0, 1, 2])  # lengths 3, 1, 1: the long success weighs 3x in "turn"
    assert not torch.allclose(A.grpo(task, unequal, ret), A.grpo(task, unequal, ret, episode_stats="turn"))
    task, ret, equal = ids([0] * 6), t([1, 1, 0, 0, 0, 0]), ids([0, 0, 1, 1, 2, 2])  # lengths 2, 2, 2
    for normalize in ("std", "none"):
        by_traj = A.grpo(task, equal, ret, normalize=normalize)
        by_turn = A.grpo(task, equal, ret, normalize=normalize, episode_stats="turn")
        if normalize == "none":
            close(by_traj, by_turn.tolist())  # equal lengths: same mean
        else:  # same mean; the unbiased std differs only by the n-1 vs kn-1 correction
            assert torch.equal(torch.sign(by_traj), torch.sign(by_turn))
            close(by_traj / by_traj[0], (by_turn / by_turn[0]).tolist(), tol=1e-12)


def test_gamma_behaviour_in_gigpo():
    # two trajectories through the same first state; only the later reward differs
    task, traj, anchor = ids([0] * 4), ids([0, 0, 1, 1]), ids([1, 2, 1, 3])
    rew = t([0, 1, 0, 0])
    step0 = A.step_advantage(task, traj, rew, anchor, gamma=0.0, normalize="none")
    assert torch.equal(step0, torch.zeros(4, dtype=torch.float64))  # gamma 0: first-turn rewards tie
    close(A.step_advantage(task, traj, rew, anchor, gamma=0.95, normalize="none"), [0.475, 0, -0.475, 0])


def test_dtype_and_empty():
    task, traj, rew, ret, anchor, val = random_batch(3)
    out = A.gigpo(ids(task), ids(traj), t(rew, torch.float32), t(ret, torch.float32), ids(anchor))
    assert out.dtype == torch.float32 and out.shape == (len(task),)
    as64 = A.gigpo(
        ids(task),
        ids(traj),
        t(t(rew, torch.float32).tolist()),
        t(t(ret, torch.float32).tolist()),
        ids(anchor),
    )
    assert torch.equal(out, as64.float())  # float32 in: float64 inside, rounded once at the end
    adv, targets = A.gae(ids(traj), t(rew, torch.float32), t(val, torch.float32))
    assert adv.dtype == targets.dtype == torch.float32
    empty_i, empty_f = ids([]), t([], torch.float32)
    assert A.gigpo(empty_i, empty_i, empty_f, empty_f, empty_i).shape == (0,)
    assert A.grpo(empty_i, empty_i, empty_f).shape == A.rloo(empty_i, empty_i, empty_f).shape == (0,)
    assert A.turn_level(empty_i, empty_i, empty_f).shape == A.gae(empty_i, empty_f, empty_f)[0].shape == (0,)


def test_input_validation():
    with pytest.raises(ValueError, match="constant within each trajectory"):
        A.grpo(ids([0, 0]), ids([1, 1]), t([1, 0]))  # step rewards passed as episode returns
    with pytest.raises(ValueError, match="task_ids must be constant"):
        A.rloo(ids([0, 1]), ids([1, 1]), t([1, 1]))
    with pytest.raises(ValueError, match="choose one of: std, none"):
        A.grpo(ids([0]), ids([0]), t([1]), normalize="zscore")
    with pytest.raises(ValueError, match="choose one of: trajectory, turn"):
        A.gigpo(ids([0]), ids([0]), t([1]), t([1]), ids([0]), episode_stats="token")
    with pytest.raises(ValueError, match="shape"):
        A.grpo(ids([0, 0]), ids([0]), t([1, 1]))


def test_broadcast_to_tokens():
    adv = t([1.5, -2.0, 0.25])
    mask = torch.tensor([[0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1]], dtype=torch.bool)
    out = A.broadcast_to_tokens(adv, response_mask=mask)
    assert out.shape == (3, 4) and out.dtype == adv.dtype
    close(out.flatten(), [0, 1.5, 1.5, 0, -2, -2, 0, 0, 0, 0, 0, 0.25])
    # two sequences holding several turns each; -1 = prompt / observation / padding tokens
    index = ids([[-1, 0, 0, -1, 1, 1], [-1, -1, 2, 2, 2, -1]])
    out = A.broadcast_to_tokens(adv, token_turn_index=index)
    assert out.shape == (2, 6)
    close(out.flatten(), [0, 1.5, 1.5, 0, -2, -2, 0, 0, 0.25, 0.25, 0.25, 0])
    with pytest.raises(ValueError, match="exactly one"):
        A.broadcast_to_tokens(adv)
    with pytest.raises(ValueError, match="exactly one"):
        A.broadcast_to_tokens(adv, response_mask=mask, token_turn_index=index)
    with pytest.raises(ValueError, match=r"\[-1, 2\]"):
        A.broadcast_to_tokens(adv, token_turn_index=ids([[3]]))
    with pytest.raises(ValueError, match="integer tensor"):
        A.broadcast_to_tokens(adv, token_turn_index=t([[0.0]]))
    with pytest.raises(ValueError, match="response_mask must have shape"):
        A.broadcast_to_tokens(adv, response_mask=mask[:2])


def test_registry_and_uniform_entry():
    task, traj, rew, ret, anchor, val = random_batch(5)
    batch = dict(
        task_ids=ids(task),
        traj_ids=ids(traj),
        step_rewards=t(rew),
        episode_returns=t(ret),
        anchor_ids=ids(anchor),
        values=t(val),
    )
    assert set(A.ESTIMATORS) == {"grpo", "rloo", "turn_level", "gigpo", "gae"}
    for name in A.ESTIMATORS:
        adv, returns = A.compute_advantages(name, batch)
        assert adv.shape == (len(task),) and torch.isfinite(adv).all()
        assert (returns is not None) == (name == "gae")
    batch["dones"] = torch.zeros(len(task), dtype=torch.bool)  # all truncated ...
    batch["bootstrap_values"] = torch.ones(len(task), dtype=torch.float64)  # ... with V(s_T) = 1
    adv, targets = A.compute_advantages("gae", batch, gamma=0.9)
    expect = A.gae(
        batch["traj_ids"],
        batch["step_rewards"],
        batch["values"],
        gamma=0.9,
        **{k: batch[k] for k in ("dones", "bootstrap_values")},
    )
    assert torch.equal(adv, expect[0]) and torch.equal(targets, expect[1])
    adv, _ = A.compute_advantages("gigpo", batch, omega=0.0)
    assert torch.equal(adv, A.grpo(batch["task_ids"], batch["traj_ids"], batch["episode_returns"]))
    with pytest.raises(
        ValueError, match="unknown advantage estimator 'ppo'; choose one of: gae, gigpo, grpo"
    ):
        A.compute_advantages("ppo", batch)
    with pytest.raises(ValueError, match="needs batch fields \\['values'\\]"):
        A.compute_advantages("gae", {k: v for k, v in batch.items() if k != "values"})
    with pytest.raises(TypeError):
        A.compute_advantages("grpo", batch, omgea=1.0)


# ----------------------------------------------------------------------------------------------
# Large and non-finite inputs (issue 20)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("big", [1e200, 1e300, 1.7e308])
def test_large_finite_returns_do_not_overflow(big):
    # two trajectories, returns big and 0 (or big and -big): mean big/2, unbiased std big/sqrt(2)
    # -> +-(big/2) / (big/sqrt(2)) = +-1/sqrt(2); naive float64 squares overflow to inf and give 0
    task, traj, half = ids([0, 0]), ids([0, 1]), 1 / math.sqrt(2)
    close(A.grpo(task, traj, t([big, 0.0])), [half, -half])
    close(A.grpo(task, traj, t([big, -big])), [half, -half])
    close(A.rloo(task, traj, t([big, 0.0])) / big, [1.0, -1.0])  # R_i - R_j, exact
    close(A.turn_level(task, traj, t([big, 0.0])), [half, -half])
    close(A.step_advantage(task, traj, t([big, 0.0]), ids([0, 0]), gamma=1.0), [half, -half])
    close(A.gigpo(task, traj, t([big, 0.0]), t([big, 0.0]), ids([0, 0]), gamma=1.0), [2 * half, -2 * half])


def test_large_returns_in_a_bigger_group_by_hand():
    # returns 3, 1, 2 (x 1e250): mean 2, unbiased std 1 -> (1, -1, 0); eps is negligible at this scale
    scale = 1e250
    task, traj = ids([0, 0, 0, 1, 1]), ids([0, 1, 2, 3, 4])
    ret = t([3 * scale, 1 * scale, 2 * scale, 5.0, 5.0])
    close(A.grpo(task, traj, ret), [1.0, -1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="episode_returns is not finite: inf at row 0"):
        A.grpo(task, traj, ret.float())  # 1e250 is inf in float32


def _unscaled_group_normalize(x, group, normalize, eps):
    """The same sums as the kit's, without the power-of-two scaling (the code before issue 20)."""
    g = int(group.max()) + 1
    count = torch.bincount(group, minlength=g).to(torch.float64)
    mean = torch.zeros(g, dtype=torch.float64).index_add_(0, group, x) / count
    out = x - mean[group]
    if normalize == "std":
        sq = torch.zeros(g, dtype=torch.float64).index_add_(0, group, out * out)
        out = out / ((sq / (count - 1).clamp(min=1)).sqrt()[group] + eps)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_scaling_by_a_power_of_two_changes_no_bit_of_ordinary_results(seed):
    # the overflow guard divides each group by a power of two: exact, so results stay the same bits
    rng = random.Random(seed)
    n = rng.randint(2, 30)
    x = t([rng.choice([0.0, 1.0, rng.uniform(-5, 5) * 10 ** rng.randint(-6, 6)]) for _ in range(n)])
    group = torch.unique(ids([rng.randrange(4) for _ in range(n)]), return_inverse=True)[1]
    for normalize in ("std", "none"):
        ours = A._group_normalize(x, group, normalize, EPS)
        naive = _unscaled_group_normalize(x, group, normalize, EPS)
        flat = torch.tensor([bool((x[group == g] == x[group == g][0]).all()) for g in group])
        assert torch.equal(ours[~flat], naive[~flat]), (ours, naive)
        assert (ours[flat] == 0).all()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_are_a_clear_error_naming_the_input(bad):
    task, traj = ids([0, 0, 0]), ids([0, 0, 1])
    # checked before "constant within each trajectory" (nan != nan would trip that check instead)
    with pytest.raises(ValueError, match=r"episode_returns is not finite: .* at row 1 \(1 of 3 rows"):
        A.grpo(task, traj, t([1.0, bad, 0.0]))
    with pytest.raises(ValueError, match="episode_returns is not finite"):
        A.rloo(task, traj, t([bad, bad, 0.0]))
    with pytest.raises(ValueError, match="step_rewards is not finite"):
        A.turn_level(task, traj, t([0.0, 1.0, bad]))
    with pytest.raises(ValueError, match="step_rewards is not finite"):
        A.gigpo(task, traj, t([0.0, bad, 0.0]), t([1.0, 1.0, 0.0]), ids([0, 1, 0]))
    with pytest.raises(ValueError, match="episode_returns is not finite"):
        A.gigpo(task, traj, t([0.0, 1.0, 0.0]), t([bad, bad, 0.0]), ids([0, 1, 0]))
    with pytest.raises(ValueError, match="step_rewards is not finite"):
        A.gae(traj, t([bad, 0.0, 0.0]), t([0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="values is not finite"):
        A.gae(traj, t([0.0, 0.0, 0.0]), t([0.0, 0.0, bad]))
    with pytest.raises(ValueError, match="step_rewards is not finite"):
        A.discounted_returns(traj, t([bad, 0.0, 0.0]))


# ----------------------------------------------------------------------------------------------
# Cases that kill the mutants mutmut left alive (benchmarks/mutation.py, docs/mutation.md).
# ----------------------------------------------------------------------------------------------
def test_default_discounts():
    """Default gammas: 1 for the discounted return and turn_level, 0.95 for GiGPO's step returns
    (centred, not divided by the std: a two-row group's z-scores are +-0.71 whatever gamma is)."""
    traj, r = ids([0, 0, 0, 1]), t([1.0, 0.0, 2.0, 3.0])
    close(A.discounted_returns(traj, r), [3.0, 2.0, 2.0, 3.0])
    task, anchor = ids([0, 0, 0, 0]), ids([0, 1, 2, 0])
    # anchor 0: the first turn of trajectory 0 (return 1 + 0.95^2 * 2 = 2.805) and trajectory 1 (3)
    close(A.step_advantage(task, traj, r, anchor, normalize="none"), [-0.0975, 0.0, 0.0, 0.0975])
    ret = t([3.0, 3.0, 3.0, 3.0])  # equal episode returns: gigpo is its step advantage
    close(A.gigpo(task, traj, r, ret, anchor, normalize="none"), [-0.0975, 0.0, 0.0, 0.0975])
    group = ids([0, 0, 0, 0])  # turn_level over the task: reward-to-go 3, 2, 2, 3 centred on 2.5
    close(A.turn_level(group, traj, r, group_by="task", normalize="none"), [0.5, -0.5, -0.5, 0.5])


def test_gigpo_passes_eps_to_both_levels():
    task, traj, rew, ret, anchor, _ = random_batch(11)
    task, traj, anchor, rew, ret = ids(task), ids(traj), ids(anchor), t(rew), t(ret)
    for eps in (0.5, 3.0):
        want = A.grpo(task, traj, ret, eps=eps) + A.step_advantage(task, traj, rew, anchor, eps=eps)
        assert torch.allclose(A.gigpo(task, traj, rew, ret, anchor, eps=eps), want, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(
        A.gigpo(task, traj, rew, ret, anchor, eps=3.0), A.gigpo(task, traj, rew, ret, anchor)
    )


def _each_estimator(rew, ret, val):
    """Every estimator's advantages on one small batch (two tasks, five trajectories, anchors shared)."""
    task, traj, anchor = ids([0, 0, 0, 0, 1, 1, 1]), ids([0, 0, 1, 1, 2, 3, 4]), ids([0, 1, 0, 2, 0, 0, 0])
    return {
        "grpo": A.grpo(task, traj, ret),
        "grpo_turn": A.grpo(task, traj, ret, episode_stats="turn"),
        "rloo": A.rloo(task, traj, ret),
        "turn_level": A.turn_level(task, traj, rew),
        "mt_grpo": A.turn_level(task, traj, rew, form="mt_grpo", group_by="task"),
        "step": A.step_advantage(task, traj, rew, anchor),
        "gigpo": A.gigpo(task, traj, rew, ret, anchor),
        "gae": A.gae(traj, rew, val)[0],
        "gae_returns": A.gae(traj, rew, val)[1],
        "returns": A.discounted_returns(traj, rew),
    }


def test_every_estimator_returns_its_inputs_dtype_and_a_float_for_integer_inputs():
    rew, ret, val = [0, 1, 0, 3, 2, 0, 5], [1, 1, 3, 3, 2, 0, 5], [1, 0, 2, 1, 0, 1, 3]
    as64 = _each_estimator(t(rew), t(ret), t(val))
    as32 = _each_estimator(t(rew, torch.float32), t(ret, torch.float32), t(val, torch.float32))
    as_int = _each_estimator(ids(rew), ids(ret), ids(val))
    for name, x in as64.items():
        assert x.dtype == torch.float64 and as32[name].dtype == torch.float32, name
        assert as_int[name].dtype == torch.get_default_dtype(), name  # integers in: floats out
        assert torch.equal(as32[name], x.float()) and torch.equal(as_int[name], x.float()), name
        assert x.abs().sum() > 0.5, name  # non-integer advantages would not survive an integer cast
    empty = ids([])
    assert A.discounted_returns(empty, empty).dtype == torch.get_default_dtype()
    assert [x.dtype for x in A.gae(empty, empty, empty)] == [torch.get_default_dtype()] * 2


def test_float32_rewards_are_accumulated_in_float64():
    """1e8 + 1 - 1e8 is 0 in float32 (1e8 + 1 rounds to 1e8) and 1 in float64."""
    traj, r = ids([0, 0, 0]), t([1e8, 1.0, -1e8], torch.float32)
    assert A.discounted_returns(traj, r).tolist() == [
        1.0,
        float(torch.tensor(1 - 1e8, dtype=torch.float32)),
        -1e8,
    ]
    # two trajectories meet in one anchor state: float64 step returns 1 - 1e8 and -1e8 differ, float32 not
    task, traj2, anchor = ids([0, 0, 0, 0]), ids([0, 0, 1, 1]), ids([0, 1, 0, 1])
    r2 = t([1.0, -1e8, 0.0, -1e8], torch.float32)
    adv = A.step_advantage(task, traj2, r2, anchor, gamma=1.0, normalize="none")
    assert adv.tolist() == [0.5, 0.0, -0.5, 0.0]
    mt = A.turn_level(task, traj2, t([1.0, 0.0, 0.0, 0.0], torch.float32), form="mt_grpo")
    assert mt.dtype == torch.float32 and mt.abs().sum() > 0


def test_broadcast_to_tokens_with_one_turn_index_and_out_of_range_negatives():
    adv = t([1.5, -2.0])
    close(A.broadcast_to_tokens(adv, token_turn_index=ids([[0, 0, 0]])).flatten(), [1.5, 1.5, 1.5])
    close(A.broadcast_to_tokens(adv, token_turn_index=ids([[1], [1]])).flatten(), [-2.0, -2.0])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        A.broadcast_to_tokens(adv, token_turn_index=ids([[-2, 0]]))


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: A.grpo(ids([0, 0, 0]), ids([0, 0, 0]), t([1, 1])),
            "episode_returns must have shape (3,), got (2,)",
        ),
        (lambda: A.grpo(ids([[0, 0]]), ids([0]), t([1])), "task_ids must have shape (N,), got (1, 2)"),
        (lambda: A.grpo(ids([0, 0]), ids([[0, 0]]), t([1, 1])), "traj_ids must have shape (2,), got (1, 2)"),
        (lambda: A.rloo(ids([0]), ids([0]), t([[1.0]])), "episode_returns must have shape (1,), got (1, 1)"),
        (lambda: A.discounted_returns(ids([[0]]), t([1.0])), "traj_ids must have shape (N,), got (1, 1)"),
        (
            lambda: A.discounted_returns(ids([0]), t([1.0, 2.0])),
            "step_rewards must have shape (1,), got (2,)",
        ),
        (lambda: A.turn_level(ids([[0]]), ids([0]), t([1.0])), "task_ids must have shape (N,), got (1, 1)"),
        (lambda: A.turn_level(ids([0]), ids([0, 0]), t([1.0])), "traj_ids must have shape (1,), got (2,)"),
        (
            lambda: A.turn_level(ids([0]), ids([0]), t([1.0, 2.0])),
            "step_rewards must have shape (1,), got (2,)",
        ),
        (lambda: A.turn_level(ids([0]), ids([0]), t([1.0]), form="x"), "unknown form 'x'"),
        (lambda: A.turn_level(ids([0]), ids([0]), t([1.0]), group_by="x"), "unknown group_by 'x'"),
        (lambda: A.grpo(ids([0]), ids([0]), t([1.0]), episode_stats="x"), "unknown episode_stats 'x'"),
        (lambda: A.grpo(ids([0]), ids([0]), t([1.0]), normalize="x"), "unknown normalize 'x'"),
        (
            lambda: A.step_advantage(ids([[0]]), ids([0]), t([1.0]), ids([0])),
            "task_ids must have shape (N,), got (1, 1)",
        ),
        (
            lambda: A.step_advantage(ids([0]), ids([0]), t([1.0, 2.0]), ids([0])),
            "step_rewards must have shape (1,), got (2,)",
        ),
        (
            lambda: A.step_advantage(ids([0]), ids([0]), t([1.0]), ids([0, 0])),
            "anchor_ids must have shape (1,), got (2,)",
        ),
        (
            lambda: A.step_advantage(ids([0]), ids([0, 0]), t([1.0]), ids([0])),
            "traj_ids must have shape (1,), got (2,)",
        ),
        (lambda: A.turn_index(ids([[0]])), "traj_ids must have shape (N,), got (1, 1)"),
        (lambda: A.gae(ids([[0]]), t([1.0]), t([1.0])), "traj_ids must have shape (N,), got (1, 1)"),
        (lambda: A.gae(ids([0]), t([1.0, 2.0]), t([1.0])), "step_rewards must have shape (1,), got (2,)"),
        (lambda: A.gae(ids([0]), t([1.0]), t([1.0, 2.0])), "values must have shape (1,), got (2,)"),
        (
            lambda: A.gae(ids([0]), t([1.0]), t([1.0]), dones=ids([1, 1])),
            "dones must have shape (1,), got (2,)",
        ),
        (
            lambda: A.gae(ids([0]), t([1.0]), t([1.0]), bootstrap_values=t([1.0, 1.0])),
            "bootstrap_values must have shape (1,), got (2,)",
        ),
        (
            lambda: A.broadcast_to_tokens(t([[1.0]]), response_mask=ids([[1]])),
            "turn_adv must have shape (N,), got (1, 1)",
        ),
        (
            lambda: A.turn_level(ids([0]), ids([0]), t([1.0, 2.0]), form="mt_grpo"),
            "step_rewards must have shape (1,), got (2,)",
        ),
        (
            lambda: A.grpo(ids([0, 0]), ids([1, 1]), t([1, 0])),
            "episode_returns must be constant within each trajectory (rows with equal traj_ids)",
        ),
        (
            lambda: A.grpo(ids([0]), ids([0]), t([math.nan])),
            "rows nan/inf); rewards, returns and values must be finite numbers",
        ),
    ],
)
def test_input_errors_name_the_input_and_its_expected_shape(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value)


def test_broadcast_to_tokens_layout_error_is_exact():
    with pytest.raises(ValueError) as err:
        A.broadcast_to_tokens(t([1.0]))
    assert str(err.value) == "give exactly one of response_mask (N, T) or token_turn_index (B, T)"
