"""Solutions to notebook 03's exercises (the code that fills each stub)."""

import torch

# Exercise 1: the true statements about the colleague's objective clamp(r) A (the min is missing):
# for A < 0 it is flat past 1 + eps, for A > 0 flat below 1 - eps; where PPO-clip's pessimistic min
# keeps the unclipped r A, whose gradient undoes a step that went the wrong way.
bug_statements = {"b", "c"}


# Exercise 2: the fixed objective
def my_clip_objective(ratio, adv, eps):
    return torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps, 1 + eps) * adv)
