"""The shop's pages in WebShop's text format, and the action parser (pure functions).

Every page is one string of segments joined by ``" [SEP] "``, as WebShop's ``text`` observation mode:

=============  =====================================================================================
page           text
=============  =====================================================================================
search         ``WebShop [SEP] Instruction: [SEP] <instruction> [SEP] Search``
results        ``Instruction: [SEP] <instruction> [SEP] Back to Search [SEP] Page 2 (Total results:
               50) [SEP] < Prev [SEP] Next > [SEP] <ASIN> [SEP] <title> [SEP] $<price> ...``
               (10 products a page; ``< Prev`` from page 2 on, ``Next >`` while more pages follow)
item           ``Instruction: [SEP] <instruction> [SEP] Back to Search [SEP] < Prev [SEP] <option
               name> [SEP] <value> [SEP] <value> (selected) ... [SEP] <title> [SEP] Price: $<price>
               [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now``
description,   ``Instruction: [SEP] <instruction> [SEP] Back to Search [SEP] < Prev [SEP] <text>``
features,      (features are the product's attribute bullet points)
reviews
done           ``Thank you for shopping with us! [SEP] Purchased [SEP] <ASIN> [SEP] <title> [SEP]
               Options: <name: value, ...> [SEP] Price: $<price> [SEP] Your score (min 0.0, max
               1.0) [SEP] <reward>``
=============  =====================================================================================

A chosen option value is shown as ``<value> (selected)``; its clickable name stays ``<value>``.

Actions (:func:`parse_action`): ``search[<query>]`` on the search page, ``click[<element>]`` where the
element is one of the page's clickables. Normalisation: the kit's one rule for action text
(:func:`rspo.core.envs.text.normalize_action`, as in the household): an action with a character outside
printable ASCII (besides tab, newline, carriage return) is invalid - look-alike letters, Unicode spaces,
control characters; otherwise case is ignored, whitespace runs become one space and the ends are
stripped. The verb is then directly followed by ``[``; the argument's surrounding spaces are stripped.
A click argument must equal a clickable (``back to search``, ``next >``, ``< prev``, a product ASIN,
an option value, ``description``, ``features``, ``reviews``, ``buy now``). A query must be 1..200
characters with at least one letter or digit. An action longer than 1,000 characters is invalid.
"""

from __future__ import annotations

import re

from rspo.core.envs.shop.catalogue import Product
from rspo.core.envs.text import normalize_action

SEP = " [SEP] "
PAGE_SIZE = 10
MAX_ACTION_CHARS = 1000
MAX_QUERY_CHARS = 200
_ACTION_RE = re.compile(r"(search|click)\[(.*)\]")

# clickables: (label as matched, lowercase) -> (kind, argument)
Clicks = dict[str, tuple[str, object]]


def parse_action(action: str) -> tuple[str, str] | None:
    """``"click[ Buy  Now ]"`` -> ``("click", "buy now")``; ``None`` when the action is malformed."""
    if not isinstance(action, str) or len(action) > MAX_ACTION_CHARS:
        return None
    text = normalize_action(action)  # ASCII only, lowercased, whitespace runs collapsed (rspo.core.envs.text)
    m = None if text is None else _ACTION_RE.fullmatch(text)
    if m is None:
        return None
    verb, arg = m.group(1), " ".join(m.group(2).split())
    if not arg:
        return None
    if verb == "search" and (len(arg) > MAX_QUERY_CHARS or not any(ch.isalnum() for ch in arg)):
        return None
    return verb, arg


def _head(instruction: str) -> str:
    return f"Instruction:{SEP}{instruction}{SEP}Back to Search"


def price_text(price: float) -> str:
    return f"${price:.2f}"


def search_page(instruction: str) -> str:
    return f"WebShop{SEP}Instruction:{SEP}{instruction}{SEP}Search"


def n_pages(n_results: int) -> int:
    return max(1, -(-n_results // PAGE_SIZE))


def results_page(
    instruction: str, products: list[Product], results: tuple[int, ...], page: int
) -> tuple[str, Clicks]:
    """The results page ``page`` (1-based) of ``results`` (product indices, best first)."""
    parts = [_head(instruction), f"Page {page} (Total results: {len(results)})"]
    clicks: Clicks = {"back to search": ("back", None)}
    if page > 1:
        parts.append("< Prev")
        clicks["< prev"] = ("page", page - 1)
    if page < n_pages(len(results)):
        parts.append("Next >")
        clicks["next >"] = ("page", page + 1)
    for i in results[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]:
        p = products[i]
        parts += (p.asin, p.title, price_text(p.price))
        clicks[p.asin.lower()] = ("item", i)
    return SEP.join(parts), clicks


def item_page(instruction: str, product: Product, chosen: dict[str, str]) -> tuple[str, Clicks]:
    """The item page of ``product`` with the ``chosen`` options (name -> value) marked."""
    parts = [_head(instruction), "< Prev"]
    clicks: Clicks = {"back to search": ("back", None), "< prev": ("prev", None)}
    for name, values in product.options.items():
        parts.append(name)
        for v in values:
            parts.append(f"{v} (selected)" if chosen.get(name) == v else v)
            clicks[v.lower()] = ("option", (name, v))
    parts += (product.title, f"Price: {price_text(product.price)}", "Rating: N.A.")
    parts += ("Description", "Features", "Reviews", "Buy Now")
    clicks.update(
        {
            "description": ("sub", "description"),
            "features": ("sub", "features"),
            "reviews": ("sub", "reviews"),
            "buy now": ("buy", None),
        }
    )
    return SEP.join(parts), clicks


def sub_page(instruction: str, product: Product, kind: str) -> tuple[str, Clicks]:
    """The description, features or reviews page of ``product``."""
    if kind == "description":
        body = product.description
    elif kind == "features":
        body = SEP.join(a.capitalize() for a in product.attributes)
    else:
        body = "No reviews yet."
    clicks: Clicks = {"back to search": ("back", None), "< prev": ("prev", None)}
    return f"{_head(instruction)}{SEP}< Prev{SEP}{body}", clicks


def done_page(product: Product, chosen: dict[str, str], reward: float) -> str:
    """The page after ``Buy Now``, with the purchase reward."""
    options = ", ".join(f"{k}: {v}" for k, v in chosen.items()) or "none"
    return SEP.join(
        (
            "Thank you for shopping with us!",
            "Purchased",
            product.asin,
            product.title,
            f"Options: {options}",
            f"Price: {price_text(product.price)}",
            "Your score (min 0.0, max 1.0)",
            f"{reward:.2f}",
        )
    )
