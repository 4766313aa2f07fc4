"""The shop's expert: a planner that buys a product worth reward 1.0 from any page.

It may read the goal's hidden constraints (unlike an agent). From the search page it searches the
goal's query; on a results page it goes to the page of the first result whose best purchase is worth
1.0 (``next >`` / ``< prev``) and clicks it, or goes back to search when the results hold none (after
an agent searched something else); on an item page it chooses each goal option that is not yet
chosen, then buys, or goes back (``< prev``) when the item cannot reach 1.0; from a description,
features or reviews page it goes back to the item. Called from the start of an episode it needs at
most 1 + 4 + 1 + 2 + 1 = 9 steps, within the 15-step horizon.
"""

from __future__ import annotations

from typing import Protocol

from rspo.core.envs.shop.catalogue import Catalogue, Goal
from rspo.core.envs.shop.pages import PAGE_SIZE
from rspo.core.envs.shop.reward import matching_value, option_matches


class ShopState(Protocol):
    """What the expert reads of the shop (:class:`rspo.core.envs.shop.env.ShopEnv` is one): the page, the
    goal with its hidden constraints, and the reward of each product's best purchase."""

    page: str  # "search", "results", "item", "done" or a sub-page of an item
    goal: Goal
    catalogue: Catalogue
    results: tuple[int, ...]  # the last search's product indices, best first
    page_no: int  # the results page shown (from 1)
    item: int  # the product of the item page
    chosen: dict[str, str]  # the options chosen on the item page

    def best_reward(self, i: int) -> float: ...


def expert_action(env: ShopState) -> str:
    """The expert's next action in ``env``'s current state ("" once the episode has ended)."""
    if env.page == "done":
        return ""
    goal = env.goal
    if env.page == "search":
        return f"search[{goal.query}]"
    if env.page == "results":
        target = next((j for j, i in enumerate(env.results) if env.best_reward(i) == 1.0), None)
        if target is None:
            return "click[back to search]"
        page = target // PAGE_SIZE + 1
        if page == env.page_no:
            return f"click[{env.catalogue.products[env.results[target]].asin.lower()}]"
        return "click[next >]" if page > env.page_no else "click[< prev]"
    if env.page == "item":
        if env.best_reward(env.item) < 1.0:
            return "click[< prev]"
        product = env.catalogue.products[env.item]
        for name, value in goal.options.items():
            if not option_matches(name, value, env.chosen.get(name)):
                return f"click[{matching_value(goal, product, name).lower()}]"
        return "click[buy now]"
    return "click[< prev]"  # description, features or reviews page: back to the item
