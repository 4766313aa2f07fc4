"""``textworld``: TextWorld games (generated offline with ``tw-make``) behind the kit's contract.

    >>> from rspo.core.envs.textworld import TextWorldEnv
    >>> env = TextWorldEnv(split="train", games="games/")  # doctest: +SKIP

Needs the extra: ``pip install -e .[textworld]``. Importing this package does not import TextWorld.
"""

from rspo.core.envs.textworld.env import PROCESS_REWARD_DOC, TextWorldEnv

__all__ = ["TextWorldEnv", "PROCESS_REWARD_DOC"]
