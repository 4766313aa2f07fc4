"""The glue between the pure pieces: what the rollout stores, which reward each of RSPO's two policies
trains on, and the numbers one update applies and logs (entropy sign, gradient clipping, approx-KL).

Each test here was checked against a bug injected by hand into a copy of the source (docs/mutation.md):
the explorer trained on the outcome reward, the rollout storing the process reward as the outcome, an
entropy bonus of the wrong sign, gradient clipping switched off, a wrong approx-KL.

Cross-module by design: rspo.core.rollout -> rspo.core.rewards -> rspo.core.swap -> rspo.core.update -> rspo.core.trainer, with a
model; each module's own tests are in tests/test_<module>.py.
"""

from __future__ import annotations

import contextlib
import math

import pytest
import torch
from test_trainer import small

import rspo.core.explorer
import rspo.core.trainer
from rspo.core.config import TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import collect, make_envs
from rspo.core.trainer import Trainer
from rspo.core.update import build_batch, ppo_update

pytestmark = pytest.mark.usefixtures("one_thread")


def rollout(policy, n_tasks=2, group_size=2, max_steps=3, temperature=3.0, seed=0):
    envs = make_envs("household", "train", n_tasks * group_size, max_steps=max_steps)
    return collect(
        policy,
        envs,
        envs[0].task_ids[:n_tasks],
        group_size,
        temperature=temperature,
        generator=torch.Generator().manual_seed(seed),
    )


def flat(rows):
    return [x for row in rows for x in row]


# --- the rollout's records -------------------------------------------------------------------------
def test_rollout_turn_reward_is_the_outcome_and_process_reward_the_info_entry():
    """``Turn.outcome_reward`` is the environment's outcome reward, ``Turn.process_reward`` its
    ``info["process_reward"]``; the episode's score sums the outcomes. The environment's step is wrapped
    to return distinct, recognisable numbers for the two."""
    policy = untrained_tiny_policy(0)
    envs = make_envs("household", "train", 4, max_steps=3)
    returned = {i: [] for i in range(len(envs))}
    for i, env in enumerate(envs):
        real = env.step

        def step(action, real=real, i=i):
            obs, reward, terminated, truncated, info = real(action)
            k = len(returned[i])
            outcome, process = 0.25 + k + 10 * i, -(0.125 + k + 10 * i)  # never equal, never zero
            info = {**info, "process_reward": process, "valid": k != 1}
            returned[i].append((outcome, process, info["valid"]))
            return obs, outcome, terminated, truncated, info

        env.step = step
    eps = collect(
        policy, envs, envs[0].task_ids[:2], 2, temperature=3.0, generator=torch.Generator().manual_seed(0)
    )
    assert [(ep.group, ep.copy) for ep in eps] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for i, ep in enumerate(eps):
        assert len(ep.turns) == len(returned[i]) == 3  # max_steps
        assert [t.outcome_reward for t in ep.turns] == [r[0] for r in returned[i]]
        assert [t.process_reward for t in ep.turns] == [r[1] for r in returned[i]]
        assert [t.valid for t in ep.turns] == [r[2] for r in returned[i]]
        assert ep.score == pytest.approx(sum(r[0] for r in returned[i]))
        assert ep.truncated and not ep.won
        assert all(t.token_logprobs and len(t.candidates) > 1 and t.action in t.candidates for t in ep.turns)
    # the reward modes read the stored fields: outcome = 10 * outcome - 0.1 on the invalid turn
    out = compute_rewards("outcome", eps, RewardSpec())
    assert out[0] == pytest.approx([2.5, 12.5 - 0.1, 22.5])


# --- RSPO: which reward each policy trains on ------------------------------------------------------
def test_rspo_explorer_trains_on_the_dense_reward_and_the_learner_on_the_outcome(tmp_path, monkeypatch):
    """Every rollout's turns get a process reward, so the dense and the outcome reward differ on every
    turn; the explorer's update must see the dense reward of its own episodes and the learner's update
    (its own turns and the replayed explorer turns) the outcome reward only."""
    real_rollout = Trainer.rollout

    def with_process(self, *args, **kwargs):
        eps = real_rollout(self, *args, **kwargs)
        for ep in eps:
            for k, t in enumerate(ep.turns):
                t.process_reward = 0.05 * (k + 1)
            ep.turns[-1].outcome_reward = 1.0 if ep.copy == 0 else 0.0  # outcome signal in every group
        return eps

    updates = []
    real_update = rspo.core.trainer.ppo_update

    def recording(policy, optimizer, params, batch, *args, name="policy", **kwargs):
        updates.append((name, policy, [t for t in batch.turns], batch.step_rewards.clone()))
        return real_update(policy, optimizer, params, batch, *args, name=name, **kwargs)

    monkeypatch.setattr(Trainer, "rollout", with_process)
    monkeypatch.setattr(rspo.core.trainer, "ppo_update", recording)  # the learner's update
    monkeypatch.setattr(rspo.core.explorer, "ppo_update", recording)  # the explorer's
    cfg = small(tmp_path, algo="grpo", reward="rspo", iterations=2, checkpoint_every=0)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    rows = trainer.run()
    spec = RewardSpec(cfg.outcome_scale, cfg.invalid_penalty, cfg.process_weight)

    def outcome(t):
        return spec.outcome_scale * t.outcome_reward + (0.0 if t.valid else spec.invalid_penalty)

    def dense(t):
        return spec.outcome_scale * (t.outcome_reward + spec.process_weight * t.process_reward) + (
            0.0 if t.valid else spec.invalid_penalty
        )

    names = [u[0] for u in updates]
    assert names == ["explorer", "policy"] * 2  # per iteration: the explorer's update, then the learner's
    for name, policy, turns, rewards in updates:
        assert policy is (trainer.explorer.policy if name == "explorer" else trainer.policy)
        want = [dense(t) if name == "explorer" else outcome(t) for t in turns]
        other = [outcome(t) if name == "explorer" else dense(t) for t in turns]
        assert rewards.tolist() == pytest.approx(want, abs=1e-5), name
        assert all(abs(a - b) > 0.1 for a, b in zip(want, other, strict=True))  # the test can tell them apart
    learner_turns = updates[-1][2]
    n_own = rows[-1]["rollout/turns"]
    assert len(learner_turns) == n_own + rows[-1]["swap/turns"] > n_own  # explorer turns replayed, relabelled
    # the logged explorer return is the dense one of its episodes
    ex_rewards = updates[-2][3]
    assert rows[-1]["explorer/return"] == pytest.approx(
        float(ex_rewards.sum()) / (cfg.tasks_per_iter * cfg.group_size), rel=1e-5
    )
    assert rows[-1]["reward/return"] > 0


# --- one update: entropy, clipping, logged numbers ---------------------------------------------------
def update_setup(seed=0, **cfg_kw):
    policy = untrained_tiny_policy(seed)
    eps = rollout(policy, seed=seed)
    for ep in eps:
        ep.turns[-1].outcome_reward = 1.0 if ep.copy == 0 else 0.0
    base = dict(algo="grpo", micro_batch=4, minibatch_turns=64, kl_coef=0.0, temperature=3.0)
    cfg = TrainConfig(**{**base, **cfg_kw})
    batch = build_batch(eps, compute_rewards("outcome", eps, RewardSpec()), cfg)
    # advantages that do not cancel where two copies took the same action in the same state
    batch.adv = torch.tensor([(1.0, -0.5, 2.0, 0.5)[i % 4] for i in range(len(batch.turns))])
    return policy, batch, cfg


def evaluate_all(policy, batch, cfg):
    with torch.no_grad():
        return policy.logprobs(batch.inputs(range(len(batch.turns))), temperature=cfg.temperature)


def weighted_entropy(policy, batch, cfg):
    return float((batch.weights * evaluate_all(policy, batch, cfg).entropy).sum())


def test_positive_entropy_bonus_raises_the_entropy():
    """With zero advantages and no KL only the entropy term moves the policy: a positive
    ``entropy_coef`` must raise the entropy of the action distributions (the loss is ``- coef * H``)."""
    policy, batch, cfg = update_setup(entropy_coef=1.0)
    batch.adv.zero_()
    params = list(policy.trainable_parameters())
    before = weighted_entropy(policy, batch, cfg)
    stats = ppo_update(
        policy, torch.optim.SGD(params, lr=0.05), params, batch, cfg, 0, contextlib.nullcontext
    )
    after = weighted_entropy(policy, batch, cfg)
    assert stats["loss/entropy"] == pytest.approx(before, rel=1e-4)  # logged: the entropy before the step
    assert stats["loss/grad_norm"] > 0
    assert after > before + 1e-4, (before, after)

    # and without the bonus (coefficient 0) nothing moves: the change above is the bonus's
    policy0, batch0, cfg0 = update_setup(entropy_coef=0.0)
    batch0.adv.zero_()
    p0 = list(policy0.trainable_parameters())
    snapshot = [p.detach().clone() for p in p0]
    ppo_update(policy0, torch.optim.SGD(p0, lr=0.05), p0, batch0, cfg0, 0, contextlib.nullcontext)
    assert all(torch.equal(a, b) for a, b in zip(snapshot, p0, strict=True))


class RecordingSGD(torch.optim.SGD):
    """Plain SGD that records the norm of the gradient it applies at each step."""

    def __init__(self, params, lr):
        super().__init__(params, lr=lr)
        self.applied: list[float] = []

    def step(self, closure=None):
        grads = [
            p.grad.detach().double().flatten()
            for g in self.param_groups
            for p in g["params"]
            if p.grad is not None
        ]
        self.applied.append(float(torch.cat(grads).norm()))
        return super().step(closure)


@pytest.mark.parametrize("max_grad_norm", [1e-3, 1e3])
def test_gradient_is_clipped_to_max_grad_norm_and_the_logged_norm_is_the_unclipped_one(max_grad_norm):
    policy, batch, cfg = update_setup(max_grad_norm=max_grad_norm)
    params = list(policy.trainable_parameters())
    optimizer = RecordingSGD(params, lr=1e-3)
    stats = ppo_update(policy, optimizer, params, batch, cfg, 0, contextlib.nullcontext)
    assert stats["loss/steps"] == len(optimizer.applied) == 1
    logged = stats["loss/grad_norm"]
    assert 10 * 1e-3 < logged < 1e3 / 10  # the unclipped norm lies between the two settings
    assert optimizer.applied[0] == pytest.approx(min(logged, max_grad_norm), rel=1e-4)


def shifted_behaviour(policy, batch, cfg):
    """Behaviour log-probs moved by known offsets d_i from the current policy's (a one-token turn's
    PPO ratio is then exp(-d_i)), and the update's logged numbers computed by hand from them."""
    now = evaluate_all(policy, batch, cfg).logp[:, 0].tolist()
    n = len(batch.turns)
    offsets = [(-0.3, 0.1, 0.25, -0.05, 0.4)[i % 5] for i in range(n)]
    for t, lp, d in zip(batch.turns, now, offsets, strict=True):
        t.token_logprobs = [lp + d]
    w, adv = batch.weights.tolist(), batch.adv.tolist()
    total = sum(w)
    ratio = [math.exp(-d) for d in offsets]
    clipped = [min(max(r, 1 - cfg.clip_eps), 1 + cfg.clip_eps) for r in ratio]
    loss = [-min(r * a, c * a) for r, c, a in zip(ratio, clipped, adv, strict=True)]
    return {
        "loss/approx_kl": sum(wi * 0.5 * d * d for wi, d in zip(w, offsets, strict=True)) / total,
        "loss/ratio_max": max(ratio),
        "loss/policy": sum(wi * li for wi, li in zip(w, loss, strict=True)) / total,
        "loss/clipfrac": sum(wi for wi, r in zip(w, ratio, strict=True) if abs(r - 1) > cfg.clip_eps) / total,
    }


def test_update_logs_hand_computed_policy_loss_approx_kl_ratio_and_clipfrac():
    """approx-KL = sum_i w_i 0.5 d_i^2 / sum_i w_i, the ratio's maximum, and the policy loss and
    clipped fraction from the ratios and the advantages - all by hand, before the update's step."""
    policy, batch, cfg = update_setup(clip_eps=0.2, kl_coef=0.0)
    want = shifted_behaviour(policy, batch, cfg)
    params = list(policy.trainable_parameters())
    stats = ppo_update(
        policy, torch.optim.SGD(params, lr=1e-3), params, batch, cfg, 0, contextlib.nullcontext
    )
    for key, value in want.items():
        assert stats[key] == pytest.approx(value, rel=1e-3), key
    assert (
        0 < want["loss/clipfrac"] < 1 and stats["loss/kl"] == 0.0 and stats["loss/turns"] == len(batch.turns)
    )


def test_the_logged_numbers_average_over_minibatches_and_epochs():
    """Two epochs of several minibatches with a zero learning rate (the policy stays put): every
    logged number equals the one-pass hand computation, and the gradient norm is the mean of the
    norms of the steps taken (not the last one's, nor their sum)."""
    policy, batch, cfg = update_setup(
        clip_eps=0.2, kl_coef=0.0, minibatch_turns=3, ppo_epochs=2, max_grad_norm=1e3
    )
    want = shifted_behaviour(policy, batch, cfg)
    params = list(policy.trainable_parameters())
    optimizer = RecordingSGD(params, lr=0.0)
    stats = ppo_update(policy, optimizer, params, batch, cfg, 0, contextlib.nullcontext)
    assert stats["loss/steps"] == len(optimizer.applied) == 2 * -(-len(batch.turns) // 3) > 4
    for key, value in want.items():
        assert stats[key] == pytest.approx(value, rel=1e-3), key
    assert stats["loss/grad_norm"] == pytest.approx(sum(optimizer.applied) / len(optimizer.applied), rel=1e-4)
    assert len(set(round(a, 6) for a in optimizer.applied)) > 1  # the steps' norms differ


def test_kl_penalty_logs_the_k3_value_and_pulls_the_policy_back_to_its_reference():
    """The policy moved away from its frozen reference by a known perturbation, zero advantages and no
    entropy bonus, so only the KL term ``kl_coef * k3`` acts: the logged loss/kl is the weighted k3 of
    the log-probs before the step (computed here by hand), and the step lowers it (a penalty with the
    wrong sign, or one skipped for a coefficient under 1, does not)."""
    policy, batch, cfg = update_setup(kl_coef=0.5, entropy_coef=0.0)
    ref = evaluate_all(policy, batch, cfg).logp[:, 0]  # the frozen reference: the weights before
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in policy.trainable_parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    batch.adv = torch.zeros(len(batch.turns))
    now = evaluate_all(policy, batch, cfg).logp[:, 0]
    for t, lp in zip(batch.turns, now.tolist(), strict=True):
        t.token_logprobs = [lp]  # on-policy: every ratio is 1

    def weighted_k3(logp):
        r = ref - logp
        return float((batch.weights * (torch.exp(r) - r - 1)).sum() / batch.weights.sum())

    before = weighted_k3(now)
    params = list(policy.trainable_parameters())
    stats = ppo_update(policy, torch.optim.SGD(params, lr=0.1), params, batch, cfg, 0, contextlib.nullcontext)
    assert before > 1e-3 and len(batch.turns) > cfg.micro_batch  # several micro-batches are summed
    assert stats["loss/kl"] == pytest.approx(before, rel=1e-3)
    assert weighted_k3(evaluate_all(policy, batch, cfg).logp[:, 0]) < before


def test_off_policy_turns_use_their_proximal_log_probs_and_truncated_importance_weights():
    """Replayed turns (RSPO's learner) carry the proximal log-probs (the PPO ratio's denominator) and
    per-token importance weights: the logged policy loss is, by hand,
    sum_i w_i (-iw_i min(r_i A_i, clip(r_i) A_i)) / sum_i w_i with r_i = exp(logp_i - proximal_i).
    All turns but one are weighted, so some micro-batches are all weighted and one is mixed."""
    policy, batch, cfg = update_setup(clip_eps=0.2, kl_coef=0.0)
    now = evaluate_all(policy, batch, cfg).logp[:, 0].tolist()
    n = len(batch.turns)
    behaviour = [(0.3, -0.2, 0.1, 0.05)[i % 4] for i in range(n)]  # the stored (behaviour) log-probs' offsets
    proximal = [(-0.1, 0.15, -0.3, 0.0, 0.25)[i % 5] for i in range(n)]  # the ratio's denominator's
    iw = [(0.5, 0.8, 1.0, 0.3)[i % 4] for i in range(n)]
    for i, (t, lp) in enumerate(zip(batch.turns, now, strict=True)):
        t.token_logprobs = [lp + behaviour[i]]
        if i != n - 1:
            batch.proximal[i] = [lp + proximal[i]]
            batch.is_weights[i] = [iw[i]]
    params = list(policy.trainable_parameters())
    stats = ppo_update(
        policy, torch.optim.SGD(params, lr=1e-3), params, batch, cfg, 0, contextlib.nullcontext
    )
    w, adv = batch.weights.tolist(), batch.adv.tolist()
    d = [proximal[i] if i != n - 1 else behaviour[i] for i in range(n)]
    ratio = [math.exp(-di) for di in d]
    tw = [iw[i] if i != n - 1 else 1.0 for i in range(n)]
    loss = [
        -t * min(r * a, min(max(r, 1 - cfg.clip_eps), 1 + cfg.clip_eps) * a)
        for r, a, t in zip(ratio, adv, tw, strict=True)
    ]
    assert n > 2 * cfg.micro_batch
    assert stats["loss/policy"] == pytest.approx(
        sum(wi * li for wi, li in zip(w, loss, strict=True)) / sum(w), rel=1e-3
    )
