"""The shop's data: products, goals, and BM25 search over the products.

The committed files ``data/shop/products.jsonl`` and ``data/shop/goals.jsonl`` are built by the seeded
script ``data/shop/build_catalogue.py`` (see ``data/shop/README.md``). They are read once per process,
and the BM25 index (the ``bm25s`` library) is built on first use, by :func:`get_catalogue`.

Search text of a product = title + attributes + category path words, tokenised by :func:`tokenize`
(lowercase alphanumeric runs, a few stopwords dropped). A query returns at most :data:`TOP_K` products
with a positive BM25 score, best first; equal scores keep catalogue order, so results are the same on
every machine. Results are cached per normalised query (:func:`normalize_query`).
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from rspo.core import paths

DATA_DIR = paths.CHECKOUT / "data" / "shop"  # the source checkout's copy (build, tests)
TOP_K = 50  # results a search returns, as WebShop
N_CANDIDATE_QUERIES = 5  # search actions offered on the search page: the goal's query + 4 distractors
SEARCH_CACHE_SIZE = 4096  # queries kept in the LRU cache

_TOKEN_RE = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an and the for of with in on to s i am is are that which me my need want".split())


@dataclass
class Product:
    """One product of the catalogue. ``options`` maps an option name to its values, in page order."""

    asin: str
    title: str
    category: tuple[str, str, str]  # (category, subcategory, product type)
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]]
    price: float
    description: str = ""
    text: str = field(init=False, repr=False)  # lowercase title + description, for attribute substrings

    def __post_init__(self):
        self.category = tuple(self.category)
        self.attributes = tuple(self.attributes)
        self.options = {k: tuple(v) for k, v in self.options.items()}
        self.text = f"{self.title}\n{self.description}".lower()

    def to_json(self) -> dict:
        return {
            "asin": self.asin,
            "title": self.title,
            "category": list(self.category),
            "attributes": list(self.attributes),
            "options": {k: list(v) for k, v in self.options.items()},
            "price": self.price,
            "description": self.description,
        }


@dataclass
class Goal:
    """One instruction: its hidden constraints and the product it was generated from (``asin``)."""

    instruction: str
    asin: str
    category: tuple[str, str, str]
    attributes: tuple[str, ...]
    options: dict[str, str]
    price_upper: float
    query: str = field(init=False)  # the search query derived from the goal: attributes + type words

    def __post_init__(self):
        self.category = tuple(self.category)
        self.attributes = tuple(self.attributes)
        self.options = dict(self.options)
        self.query = " ".join((*self.attributes, self.category[2]))

    def to_json(self) -> dict:
        return {
            "instruction": self.instruction,
            "asin": self.asin,
            "category": list(self.category),
            "attributes": list(self.attributes),
            "options": dict(self.options),
            "price_upper": self.price_upper,
        }


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric runs of ``text``, without :data:`STOPWORDS`."""
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


def normalize_query(query: str) -> str:
    """The cache key of a query: lowercase, whitespace runs collapsed to one space, stripped."""
    return " ".join(query.lower().split())


def product_search_text(p: Product) -> str:
    return " ".join((p.title, " ".join(p.attributes), " ".join(p.category)))


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Catalogue:
    """Products, goals and the BM25 index. Build one with :func:`get_catalogue`."""

    def __init__(self, products: list[Product], goals: list[Goal]):
        import bm25s  # imported here so that `import rspo.core.envs` stays cheap

        t0 = time.perf_counter()
        self.products = products
        self.goals = goals
        self.by_asin = {p.asin: i for i, p in enumerate(products)}
        self._bm25 = bm25s.BM25()
        self._bm25.index([tokenize(product_search_text(p)) for p in products], show_progress=False)
        self._vocab = self._bm25.vocab_dict
        self._cache: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self.index_seconds = time.perf_counter() - t0
        # goal queries grouped by category and type, for the distractor candidate queries
        self.queries_by_type: dict[tuple[str, ...], list[str]] = {}
        for g in goals:
            self.queries_by_type.setdefault(g.category, []).append(g.query)
        for key, queries in self.queries_by_type.items():
            self.queries_by_type[key] = sorted(set(queries))
        self.types = sorted(self.queries_by_type)
        self._candidates: dict[int, tuple[str, ...]] = {}

    def candidate_queries(self, goal_index: int) -> tuple[str, ...]:
        """The search queries offered for goal ``goal_index``: its own query, 3 queries of other goals of
        other product types of its category and 1 of another category, in a shuffled order fixed by
        the goal index."""
        hit = self._candidates.get(goal_index)
        if hit is None:
            g = self.goals[goal_index]
            rng = random.Random(goal_index)
            same = [t for t in self.types if t[0] == g.category[0] and t != g.category]
            other = [t for t in self.types if t[0] != g.category[0]]
            types = rng.sample(same, N_CANDIDATE_QUERIES - 2) + [rng.choice(other)]
            queries = [g.query] + [rng.choice(self.queries_by_type[t]) for t in types]
            rng.shuffle(queries)
            hit = self._candidates[goal_index] = tuple(queries)
        return hit

    def search(self, query: str) -> tuple[int, ...]:
        """Indices of the top :data:`TOP_K` products for ``query`` (positive BM25 score, best first)."""
        key = normalize_query(query)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        import numpy as np

        tokens = [t for t in tokenize(key) if t in self._vocab]
        if tokens:
            scores = self._bm25.get_scores(tokens)
            order = np.argsort(-scores, kind="stable")[:TOP_K]
            result = tuple(int(i) for i in order if scores[i] > 0)
        else:
            result = ()
        self._cache[key] = result
        if len(self._cache) > SEARCH_CACHE_SIZE:
            self._cache.popitem(last=False)
        return result


def product_tokens() -> list[str]:
    """The product ids as pages show them (``B0O4YFBV8B``) and as the agent clicks them
    (``b0o4yfbv8b``), sorted: whole tokens of the offline tokenizer (:mod:`rspo.core.envs.registry`)."""
    lines = (paths.data_dir("shop") / "products.jsonl").read_text().splitlines()
    ids = {json.loads(line)["asin"] for line in lines if line.strip()}
    return sorted(ids | {i.lower() for i in ids})


def load_catalogue(data_dir: Path | str | None = None) -> Catalogue:
    """Read products and goals from ``data_dir`` (default: :func:`rspo.core.paths.data_dir`) and build the BM25 index."""
    data_dir = Path(data_dir) if data_dir is not None else paths.data_dir("shop")
    products = [Product(**d) for d in read_jsonl(data_dir / "products.jsonl")]
    goals = [Goal(**d) for d in read_jsonl(data_dir / "goals.jsonl")]
    return Catalogue(products, goals)


_CATALOGUE: Catalogue | None = None


def get_catalogue() -> Catalogue:
    """The process-wide catalogue of the committed data, loaded and indexed on first call."""
    global _CATALOGUE
    if _CATALOGUE is None:
        _CATALOGUE = load_catalogue()
    return _CATALOGUE
