"""``shop``: a WebShop-style text environment over a synthetic catalogue (docs/design.md §3.2).

    >>> from rspo.core.envs.shop import ShopEnv
    >>> env = ShopEnv(split="test")
    >>> obs, info = env.reset(task_id="test/00000")

Modules: :mod:`~rspo.core.envs.shop.catalogue` (data, BM25 search), :mod:`~rspo.core.envs.shop.reward`
(WebShop's reward, pure functions), :mod:`~rspo.core.envs.shop.pages` (page text, action parser),
:mod:`~rspo.core.envs.shop.process` (process reward), :mod:`~rspo.core.envs.shop.expert`,
:mod:`~rspo.core.envs.shop.env` (the environment).
"""

from rspo.core.envs.shop.env import ShopEnv
from rspo.core.envs.shop.process import PROCESS_REWARD_DOC
from rspo.core.envs.shop.reward import is_success, score, shop_reward

__all__ = ["ShopEnv", "PROCESS_REWARD_DOC", "shop_reward", "score", "is_success"]
