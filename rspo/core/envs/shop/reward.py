"""WebShop's purchase reward as pure functions (Yao et al., 2022, section 3.2; simplified type score).

    r = r_type * (matched goal attributes + matched goal options + [price <= limit])
               / (n goal attributes + n goal options + 1)

=================  ==========================================================================
term               rule
=================  ==========================================================================
attribute match    rapidfuzz ``token_set_ratio`` > 85 against any product attribute, or the
                   goal attribute occurs in the product's title or description (lowercase)
option match       the value chosen for the goal option's name equals the goal value
                   (case-insensitive) for ``size``; rapidfuzz ``ratio`` > 85 for other names
price              product price <= the goal's upper bound
r_type             1.0 same product type (category path equal to the type level);
                   0.5 same subcategory; 0.1 same category; 0.0 otherwise
=================  ==========================================================================

``r_type`` simplifies WebShop's rule (query match, shared category levels, shared title nouns) to the
category path, which the synthetic catalogue gives exactly. Success is ``r == 1.0``; the WebShop
*score* is ``100 * mean(r)`` (:func:`score`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from rapidfuzz import fuzz

from rspo.core.envs.shop.catalogue import Goal, Product

ATTRIBUTE_THRESHOLD = 85.0
OPTION_THRESHOLD = 85.0
EXACT_OPTIONS = frozenset({"size"})  # option names whose values must match exactly


@lru_cache(maxsize=1 << 18)
def _attribute_match(goal_attribute: str, attributes: tuple[str, ...], text: str) -> bool:
    if goal_attribute in text:
        return True
    return any(fuzz.token_set_ratio(goal_attribute, a) > ATTRIBUTE_THRESHOLD for a in attributes)


def attribute_matches(goal_attribute: str, product: Product) -> bool:
    """Does ``product`` have ``goal_attribute`` (fuzzy attribute match, or a title/description substring)?"""
    return _attribute_match(goal_attribute.lower().strip(), product.attributes, product.text)


def option_matches(name: str, goal_value: str, chosen_value: str | None) -> bool:
    """Does ``chosen_value`` satisfy the goal option ``name: goal_value``? (None: nothing chosen.)"""
    if chosen_value is None:
        return False
    goal_value, chosen_value = goal_value.lower().strip(), chosen_value.lower().strip()
    if name.lower() in EXACT_OPTIONS:
        return goal_value == chosen_value
    return fuzz.ratio(goal_value, chosen_value) > OPTION_THRESHOLD


def type_score(goal_category: tuple[str, ...], product_category: tuple[str, ...]) -> float:
    """r_type: 1.0 same type, 0.5 same subcategory, 0.1 same category, 0.0 otherwise."""
    if tuple(goal_category[:3]) == tuple(product_category[:3]):
        return 1.0
    if tuple(goal_category[:2]) == tuple(product_category[:2]):
        return 0.5
    if goal_category[:1] == product_category[:1]:
        return 0.1
    return 0.0


class RewardParts(NamedTuple):
    """The terms of the reward of one purchase."""

    r_type: float
    attributes_matched: int
    attributes_total: int
    options_matched: int
    options_total: int
    price_ok: bool

    @property
    def reward(self) -> float:
        matched = self.attributes_matched + self.options_matched + int(self.price_ok)
        return self.r_type * matched / (self.attributes_total + self.options_total + 1)


def reward_parts(goal: Goal, product: Product, chosen: dict[str, str]) -> RewardParts:
    """The reward terms of buying ``product`` with the ``chosen`` options (option name -> value)."""
    return RewardParts(
        r_type=type_score(goal.category, product.category),
        attributes_matched=sum(attribute_matches(a, product) for a in goal.attributes),
        attributes_total=len(goal.attributes),
        options_matched=sum(option_matches(n, v, chosen.get(n)) for n, v in goal.options.items()),
        options_total=len(goal.options),
        price_ok=product.price <= goal.price_upper,
    )


def shop_reward(goal: Goal, product: Product, chosen: dict[str, str]) -> float:
    """WebShop's reward r in [0, 1] of buying ``product`` with options ``chosen`` for ``goal``."""
    return reward_parts(goal, product, chosen).reward


def matching_value(goal: Goal, product: Product, name: str) -> str | None:
    """The first value of ``product``'s option ``name`` that matches the goal's value, or None."""
    for value in product.options.get(name, ()):
        if option_matches(name, goal.options[name], value):
            return value
    return None


def best_reward(goal: Goal, product: Product) -> float:
    """The reward of buying ``product`` with the best option choice for ``goal``."""
    chosen = {}
    for name in goal.options:
        value = matching_value(goal, product, name)
        if value is not None:
            chosen[name] = value
    return shop_reward(goal, product, chosen)


def is_success(reward: float) -> bool:
    """WebShop success: the purchase reward is exactly 1."""
    return reward == 1.0


def score(rewards) -> float:
    """WebShop score: 100 x the mean purchase reward (0 for no rewards)."""
    rewards = list(rewards)
    return 100.0 * sum(rewards) / len(rewards) if rewards else 0.0
