"""Build the shop's synthetic catalogue and goals: ``products.jsonl`` and ``goals.jsonl``.

    python data/shop/build_catalogue.py            # rewrite the committed files in data/shop/
    python data/shop/build_catalogue.py --out DIR  # write them elsewhere (the test compares bytes)

Deterministic: one ``random.Random(SEED)`` drives everything, no global RNG, no ``hash()``; the same
files come out on every machine. The vocabulary is in ``taxonomy.py`` and ``product_types.py`` beside this script. The build
checks that the vocabulary is unambiguous under the reward's fuzzy rules and that every goal is
satisfied (reward 1.0) by its source product; see README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import string
import sys
from itertools import combinations
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from product_types import TYPES  # noqa: E402
from taxonomy import ATTRIBUTES, BLURBS, BRANDS, CATEGORIES, OPTIONS, SIZE_POOLS  # noqa: E402

from rspo.core.envs.shop.catalogue import Goal, Product  # noqa: E402
from rspo.core.envs.shop.reward import (  # noqa: E402
    EXACT_OPTIONS,
    attribute_matches,
    option_matches,
    shop_reward,
)

SEED = 20220704  # WebShop's arXiv month; any fixed int works
PRODUCTS_PER_TYPE = 20
N_GOALS = 6500
UPPER = {"usb", "hd", "gmo", "usda", "rgb", "led", "uv", "pu", "4k"}

# How an option appears in an instruction; "{v}" is the value.
OPTION_PHRASES = {
    "color": "{v} color",
    "size": "size {v}",
    "flavor": "{v} flavor",
    "shape": "{v} shape",
    "firmness": "{v} firmness",
    "roast": "{v}",
    "switch": "{v}es",
}
TEMPLATES = (
    "i am looking for {art}{attrs} {type}{opts}, and price lower than {price} dollars",
    "i need {art}{type} that is {attrs}{opts}, and price lower than {price} dollars",
    "i want to buy {art}{attrs} {type}{opts}, and price lower than {price} dollars",
    "find me {art}{attrs} {type}{opts}, with price lower than {price} dollars",
    "i'm looking for {art}{type} which is {attrs}{opts}, and price lower than {price} dollars",
)
MASS_TYPES = ("jeans", "leggings", "sandals", "socks", "shoes", "chips", "bars", "mix", "jerky", "popcorn",
              "coffee", "tea", "water", "oil", "pasta", "butter", "honey", "granola", "chocolate", "candy",
              "cookies", "wipes", "powder", "polish")  # fmt: skip


def split(s: str) -> list[str]:
    return s.split("|")


def title_case(phrase: str) -> str:
    return " ".join(w.upper() if w in UPPER else w.capitalize() for w in phrase.split())


def option_specs(spec: str) -> list[tuple[str, list[str]]]:
    """``"size|color=denim"`` -> [("size", size values), ("color", denim values)]."""
    out = []
    for item in split(spec):
        name, renamed, pool = item.partition("=")
        pool = pool or name
        if pool in SIZE_POOLS and not renamed:
            name = "size"
        out.append((name, split(OPTIONS[pool])))
    return out


def check_vocabulary() -> None:
    """No two attributes of a category, nor two values of a non-size option pool, match fuzzily."""
    probe = Product("B000000000", "", ("", "", ""), (), {}, 0.0, "")
    for cat, attrs in ATTRIBUTES.items():
        for a, b in combinations(split(attrs), 2):
            probe.attributes, probe.text = (b,), b
            assert not attribute_matches(a, probe), f"{cat}: attributes {a!r} and {b!r} match"
    for pool, values in OPTIONS.items():
        if pool not in SIZE_POOLS:
            for a, b in combinations(split(values), 2):
                assert not option_matches(pool, a, b), f"option pool {pool}: {a!r} and {b!r} match"
    for cat in CATEGORIES:
        vocab = set(split(ATTRIBUTES[cat]))
        for t in TYPES[cat]:
            missing = set(split(t[4])) - vocab
            assert not missing, f"{t[1]}: attributes {missing} not in the {cat} vocabulary"


def make_asin(rng: random.Random, taken: set[str]) -> str:
    alphabet = string.ascii_uppercase + string.digits
    while True:
        asin = "B0" + "".join(rng.choice(alphabet) for _ in range(8))
        if asin not in taken:
            taken.add(asin)
            return asin


def ordered_sample(rng: random.Random, pool: list[str], lo: int, hi: int) -> list[str]:
    """A random subset of ``pool`` of size in [lo, hi], in pool order."""
    k = min(len(pool), rng.randint(lo, hi))
    chosen = set(rng.sample(range(len(pool)), k))
    return [v for i, v in enumerate(pool) if i in chosen]


def make_price(rng: random.Random, base: float) -> float:
    p = max(1.0, base * rng.uniform(0.8, 1.25))
    return round(int(p) + rng.choice((0.99, 0.49, 0.95, 0.0, 0.99)), 2)


def build_products(rng: random.Random) -> list[Product]:
    products: list[Product] = []
    taken: set[str] = set()
    for cat in CATEGORIES:
        brands, blurbs = split(BRANDS[cat]), split(BLURBS[cat])
        for sub, tname, nouns, descs, attr_pool, opt_spec, (lo, hi) in TYPES[cat]:
            specs = option_specs(opt_spec)
            attr_pool = split(attr_pool)
            count = 0
            while count < PRODUCTS_PER_TYPE:
                brand, desc, noun = rng.choice(brands), rng.choice(split(descs)), rng.choice(split(nouns))
                base = rng.uniform(lo, hi)
                for _ in range(min(rng.choice((1, 2, 2, 3, 3, 4)), PRODUCTS_PER_TYPE - count)):
                    attrs = ordered_sample(rng, attr_pool, 2, 4)
                    options = {name: ordered_sample(rng, values, 3, 6) for name, values in specs}
                    shown = rng.sample(attrs, rng.choice((0, 1, 1, 2)))
                    title = f"{brand} {desc} {noun}"
                    if shown:
                        title += ", " + " & ".join(title_case(a) for a in shown)
                    told = rng.sample(attrs, min(len(attrs), rng.choice((1, 2))))
                    description = f"{brand} {desc.lower()} {noun.lower()}. {rng.choice(blurbs)} "
                    description += "It is " + " and ".join(told) + "."
                    products.append(
                        Product(
                            asin=make_asin(rng, taken),
                            title=title,
                            category=(cat, sub, tname),
                            attributes=tuple(attrs),
                            options=options,
                            price=make_price(rng, base),
                            description=description,
                        )
                    )
                    count += 1
    return products


def check_products(products: list[Product]) -> None:
    """No product has an attribute of its category by accident (through its title or description)."""
    for p in products:
        for a in split(ATTRIBUTES[p.category[0]]):
            if a not in p.attributes:
                assert not attribute_matches(a, p), f"{p.asin} {p.title!r} matches {a!r} by accident"
        values = [v for vs in p.options.values() for v in vs]
        assert len(values) == len(set(values)), f"{p.asin}: an option value repeats across option names"


def join_words(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def article(next_word: str, type_name: str) -> str:
    if type_name.split()[-1] in MASS_TYPES:
        return ""
    return "an " if next_word[:1] in "aeiou" else "a "


def make_goal(rng: random.Random, p: Product) -> Goal:
    attrs = rng.sample(p.attributes, min(len(p.attributes), rng.choice((1, 2, 2, 3))))
    names = rng.sample(list(p.options), min(len(p.options), rng.choice((0, 1, 1, 2))))
    options = {n: rng.choice(p.options[n]) for n in sorted(names, key=list(p.options).index)}
    step = 10 if p.price >= 20 else 5
    price_upper = float(math.ceil(p.price * rng.uniform(1.1, 1.9) / step) * step)
    type_name = p.category[2]
    template = rng.choice(TEMPLATES)
    first = attrs[0] if template.index("{attrs}") < template.index("{type}") else type_name
    phrases = [OPTION_PHRASES.get(n, "{v} " + n).format(v=v) for n, v in options.items()]
    instruction = template.format(
        art=article(first, type_name),
        attrs=join_words(attrs),
        type=type_name,
        opts=" with " + " and ".join(phrases) if phrases else "",
        price=f"{price_upper:.2f}",
    )
    return Goal(
        instruction=instruction,
        asin=p.asin,
        category=p.category,
        attributes=tuple(attrs),
        options=options,
        price_upper=price_upper,
    )


def build_goals(rng: random.Random, products: list[Product]) -> list[Goal]:
    goals, seen = [], set()
    while len(goals) < N_GOALS:
        p = products[rng.randrange(len(products))]
        g = make_goal(rng, p)
        if g.instruction in seen:
            continue
        assert shop_reward(g, p, g.options) == 1.0, g
        assert all(n not in EXACT_OPTIONS or v in p.options[n] for n, v in g.options.items())
        seen.add(g.instruction)
        goals.append(g)
    return goals


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=True, separators=(",", ":")) + "\n")


def build(out_dir: Path) -> tuple[list[Product], list[Goal]]:
    """Generate and write ``products.jsonl`` and ``goals.jsonl`` into ``out_dir``."""
    check_vocabulary()
    rng = random.Random(SEED)
    products = build_products(rng)
    check_products(products)
    goals = build_goals(rng, products)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "products.jsonl", [p.to_json() for p in products])
    write_jsonl(out_dir / "goals.jsonl", [g.to_json() for g in goals])
    return products, goals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    args = parser.parse_args(argv)
    products, goals = build(args.out)
    print(f"{len(products)} products, {len(goals)} goals -> {args.out}")


if __name__ == "__main__":
    main()
