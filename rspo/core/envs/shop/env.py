"""``ShopEnv``: a WebShop-style shopping environment over a synthetic catalogue (pure Python).

An episode is one instruction ("i am looking for a machine washable men's t-shirt with navy blue
color, and price lower than 30.00 dollars"). The agent searches (BM25 over 1,560 products), pages
through results, opens items, chooses options and buys; buying ends the episode with WebShop's reward
(:mod:`rspo.core.envs.shop.reward`). Pages and the action grammar: :mod:`rspo.core.envs.shop.pages`.

=================== ============================================================================
info key            value in the shop
=================== ============================================================================
task                the instruction
admissible_actions  search page: 5 candidate ``search[...]`` queries (the goal's own query and 4
                    distractors from other product types, in a per-task shuffled order); other
                    pages: every clickable element as ``click[<lowercase element>]``, in page
                    order; after buying ``["click[back to search]"]`` only because the contract
                    wants a non-empty list (the episode has ended: ``step`` raises)
anchor              the page text (the observation)
won                 the purchase earned reward 1.0
progress            the reward that buying now would earn: the open product (item page or its
                    description/features/reviews page) with the options chosen so far; 0.0 on the
                    search and results pages; the purchase reward after buying
process_reward      see ``ShopEnv.process_reward_doc`` (:mod:`rspo.core.envs.shop.process`)
=================== ============================================================================

Splits as WebShop: goals 0-499 are ``test``, 500-999 ``valid``, the remaining 5,500 ``train``; task ids
are ``"<split>/<index within split, 5 digits>"``. Horizon 15 steps.

The process reward (``ShopEnv.process_reward_doc``, :data:`rspo.core.envs.shop.process.PROCESS_REWARD_DOC`)
is appended below.
"""

from __future__ import annotations

from typing import Any

from rspo.core.envs.base import TextEnv
from rspo.core.envs.shop import expert
from rspo.core.envs.shop.catalogue import get_catalogue
from rspo.core.envs.shop.pages import done_page, item_page, parse_action, results_page, search_page, sub_page
from rspo.core.envs.shop.process import PROCESS_REWARD_DOC, ProcessReward
from rspo.core.envs.shop.reward import best_reward, shop_reward

__doc__ += "\n" + PROCESS_REWARD_DOC + "\n"

N_TEST = 500
N_VALID = 500


class ShopEnv(TextEnv):
    """WebShop-style shop: ``search[query]`` / ``click[element]`` over a synthetic catalogue.

    Args:
        split: ``"train"`` (5,500 goals), ``"valid"`` (500) or ``"test"`` (500, WebShop's goals 0-499).
        max_steps: the horizon (default 15, as in WebShop RL work).
        misalignment: 0..1, how much the process reward also pays for browsing look-alike products
            (see :attr:`process_reward_doc`).
    """

    name = "shop"
    splits = ("train", "valid", "test")
    eval_splits = ("test",)
    default_max_steps = 15
    process_reward_doc = PROCESS_REWARD_DOC

    def __init__(self, split: str = "train", max_steps: int | None = None, misalignment: float = 0.0):
        self.catalogue = get_catalogue()
        super().__init__(split=split, max_steps=max_steps, misalignment=misalignment)
        self.page = "done"  # no episode yet

    # --- tasks ------------------------------------------------------------------------------
    def _split_range(self, split: str) -> tuple[int, int]:
        n = len(self.catalogue.goals)
        bounds = {"test": (0, N_TEST), "valid": (N_TEST, N_TEST + N_VALID), "train": (N_TEST + N_VALID, n)}
        return bounds[split]

    def _split_task_ids(self, split: str) -> list[str]:
        lo, hi = self._split_range(split)
        return [f"{split}/{i:05d}" for i in range(hi - lo)]

    def _load_task(self, task_id: str) -> str:
        self.goal_index = self._split_range(self.split)[0] + self._task_index[task_id]
        self.goal = self.catalogue.goals[self.goal_index]
        self.process = ProcessReward(self.goal, self.catalogue.products, self.misalignment)
        self.candidates = self.catalogue.candidate_queries(self.goal_index)
        self.query: str | None = None
        self.results: tuple[int, ...] = ()
        self.page_no = 1
        self.item: int | None = None
        self.chosen: dict[str, str] = {}
        self.reward = 0.0
        self.won = False
        self._best: dict[int, float] = {}
        self._show_search()
        return self.obs

    # --- pages ------------------------------------------------------------------------------
    def _set(self, page: str, obs: str, clicks: dict, progress: float = 0.0) -> None:
        self.page, self.obs, self.clicks, self.progress = page, obs, clicks, progress
        self.admissible = [f"click[{c}]" for c in clicks]

    def _show_search(self) -> None:
        self._set("search", search_page(self.goal.instruction), {})
        self.admissible = [f"search[{q}]" for q in self.candidates]

    def _show_results(self, page_no: int) -> float:
        self.page_no = page_no
        obs, clicks = results_page(self.goal.instruction, self.catalogue.products, self.results, page_no)
        self._set("results", obs, clicks)
        return self.process.on_results(a for kind, a in clicks.values() if kind == "item")

    def _item_progress(self) -> float:
        return shop_reward(self.goal, self.catalogue.products[self.item], self.chosen)

    def _show_item(self) -> None:
        product = self.catalogue.products[self.item]
        obs, clicks = item_page(self.goal.instruction, product, self.chosen)
        self._set("item", obs, clicks, self._item_progress())

    def best_reward(self, i: int) -> float:
        """The reward of buying product ``i`` with the best options for this goal (cached)."""
        r = self._best.get(i)
        if r is None:
            r = self._best[i] = best_reward(self.goal, self.catalogue.products[i])
        return r

    # --- the contract -----------------------------------------------------------------------
    def _step(self, action: str) -> tuple[str, float, bool, bool, float]:
        parsed = parse_action(action)
        if parsed is None or self.page == "done":
            return self.obs, 0.0, False, False, 0.0
        verb, arg = parsed
        if verb == "search":
            if self.page != "search":
                return self.obs, 0.0, False, False, 0.0
            self.query, self.results = arg, self.catalogue.search(arg)
            process_reward = self._show_results(1)
            return self.obs, 0.0, False, True, process_reward
        target = self.clicks.get(arg)
        if target is None:
            return self.obs, 0.0, False, False, 0.0
        kind, value = target
        process_reward = 0.0
        if kind == "back":
            self._show_search()
        elif kind == "page":
            process_reward = self._show_results(value)
        elif kind == "item":
            self.item, self.chosen = value, {}
            process_reward = self.process.on_item(value)
            self._show_item()
        elif kind == "prev":
            if self.page == "item":
                process_reward = self._show_results(self.page_no)
            else:
                self._show_item()
        elif kind == "option":
            name, v = value
            self.chosen[name] = v
            process_reward = self.process.on_option(self.item, name, v)
            self._show_item()
        elif kind == "sub":
            product = self.catalogue.products[self.item]
            self._set(value, *sub_page(self.goal.instruction, product, value), self._item_progress())
        else:  # buy
            product = self.catalogue.products[self.item]
            self.reward = self._item_progress()
            self.won = self.reward == 1.0
            self._set("done", done_page(product, self.chosen, self.reward), {}, self.reward)
            self.admissible = ["click[back to search]"]  # the contract's list is never empty; see docs
            return self.obs, self.reward, True, True, 0.0
        return self.obs, 0.0, False, True, process_reward

    def _info_extra(self) -> dict[str, Any]:
        return {
            "task": self.goal.instruction,
            "admissible_actions": list(self.admissible),
            "anchor": self.obs,
            "won": self.won,
            "progress": self.progress,
        }

    def expert_action(self) -> str:
        """The expert planner's next action (see :mod:`rspo.core.envs.shop.expert`)."""
        if self.task_id is None:
            raise RuntimeError("call reset() before expert_action()")
        return expert.expert_action(self)
