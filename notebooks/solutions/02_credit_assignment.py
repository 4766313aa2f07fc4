"""Solutions to notebook 02's exercises (the code that fills each stub)."""

import torch


# Exercise 1: GRPO's group advantage, one per trajectory
def my_grpo_advantage(returns, groups):
    adv = torch.zeros_like(returns)
    for g in groups.unique():
        members = groups == g
        r = returns[members]
        if torch.all(r == r[0]):  # no signal in the group (e.g. every copy failed): exactly 0
            continue
        adv[members] = (r - r.mean()) / (r.std() + 1e-6)  # torch.std: unbiased (n - 1)
    return adv


# Exercise 2: GiGPO's anchor-state groups, lists of row indices
def my_anchor_groups(task_ids, anchors):
    groups = {}
    for row, key in enumerate(zip(task_ids, anchors, strict=True)):
        groups.setdefault(key, []).append(row)
    return list(groups.values())


# Exercise 3: the step advantage of the turns of one anchor group
def my_step_advantages(members, rewards, gamma):
    returns = []
    for i, t in members:
        r = rewards[i]
        returns.append(sum(gamma ** (k - t) * r[k] for k in range(t, len(r))))
    if len(set(returns)) == 1:  # a group of one, or of equal returns
        return [0.0] * len(returns)
    mean = sum(returns) / len(returns)
    std = (sum((x - mean) ** 2 for x in returns) / (len(returns) - 1)) ** 0.5
    return [(x - mean) / (std + 1e-6) for x in returns]
