"""The RL core: environments, policies, rollout, rewards and the swap, estimators, losses, the update,
the trainer and what it stands on (config, registries, profiles, checkpoints). Imports nothing from
:mod:`rspo.study` or :mod:`rspo.notebook`."""
