"""Tests of the WebShop-style ``shop`` environment (rspo.core.envs.shop)."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rspo.core.envs
from rspo.core.envs import INFO_KEYS
from rspo.core.envs.shop import ShopEnv
from rspo.core.envs.shop import env as shop_env_module
from rspo.core.envs.shop.catalogue import DATA_DIR, Goal, Product, get_catalogue
from rspo.core.envs.shop.pages import parse_action
from rspo.core.envs.shop.process import MISALIGNED_OPTION, PROCESS_REWARD_DOC
from rspo.core.envs.shop.reward import (
    attribute_matches,
    best_reward,
    option_matches,
    reward_parts,
    score,
    shop_reward,
    type_score,
)

SEP = " [SEP] "


# --- WebShop reward, by hand --------------------------------------------------------------------
def _shirt(**kw) -> Product:
    fields = dict(
        asin="B0TESTAAAA",
        title="Acme Classic Men's T-Shirt",
        category=("fashion", "men", "men's t-shirt"),
        attributes=("machine-washable", "short sleeve"),
        options={"size": ("small", "large", "x-large"), "color": ("navy-blue", "black")},
        price=19.99,
        description="A soft tee. It is wrinkle free.",
    )
    fields.update(kw)
    return Product(**fields)


GOAL = Goal(
    instruction="i need a machine washable and short sleeve men's t-shirt with navy blue color and size "
    "large, and price lower than 30.00 dollars",
    asin="B0TESTAAAA",
    category=("fashion", "men", "men's t-shirt"),
    attributes=("machine washable", "short sleeve"),
    options={"color": "navy blue", "size": "large"},
    price_upper=30.0,
)


def test_reward_full_match_is_one():
    assert shop_reward(GOAL, _shirt(), {"color": "navy-blue", "size": "large"}) == 1.0
    assert best_reward(GOAL, _shirt()) == 1.0
    assert GOAL.query == "machine washable short sleeve men's t-shirt"


def test_reward_missing_and_wrong_options():
    # 2 attributes + 0 options + price = 3 of 2 + 2 + 1 = 5
    assert shop_reward(GOAL, _shirt(), {}) == pytest.approx(3 / 5)
    # size must match exactly: "x-large" is not "large"; color matches fuzzily
    assert shop_reward(GOAL, _shirt(), {"color": "navy-blue", "size": "x-large"}) == pytest.approx(4 / 5)
    assert shop_reward(GOAL, _shirt(), {"color": "black", "size": "large"}) == pytest.approx(4 / 5)


def test_reward_over_price():
    assert shop_reward(GOAL, _shirt(price=30.01), {"color": "navy-blue", "size": "large"}) == pytest.approx(
        4 / 5
    )
    assert shop_reward(GOAL, _shirt(price=30.0), {"color": "navy-blue", "size": "large"}) == 1.0


def test_reward_type_score():
    chosen = {"color": "navy-blue", "size": "large"}
    assert shop_reward(GOAL, _shirt(category=("fashion", "men", "men's hoodie")), chosen) == 0.5
    assert shop_reward(GOAL, _shirt(category=("fashion", "women", "women's dress")), chosen) == pytest.approx(
        0.1
    )
    assert shop_reward(GOAL, _shirt(category=("food", "snacks", "popcorn")), chosen) == 0.0
    assert type_score(("a", "b", "c"), ("a", "b", "c")) == 1.0
    assert type_score(("a", "b", "c"), ("a", "x", "c")) == 0.1


def test_attribute_fuzzy_match_and_non_match():
    p = _shirt()
    assert attribute_matches("machine washable", p)  # token_set_ratio 93.75 against "machine-washable"
    assert attribute_matches("short sleeve", p)
    assert attribute_matches("wrinkle free", p)  # a substring of the description
    assert not attribute_matches("long sleeve", p)  # token_set_ratio 70.6 against "short sleeve"
    assert not attribute_matches("quick drying", p)
    parts = reward_parts(GOAL, _shirt(attributes=("long sleeve", "machine washable")), {})
    assert (parts.attributes_matched, parts.attributes_total) == (1, 2)  # "short sleeve" is missing
    assert (parts.options_matched, parts.options_total, parts.price_ok) == (0, 2, True)
    assert parts.reward == pytest.approx(2 / 5)


def test_option_match_rules():
    assert option_matches("size", "large", "Large")
    assert not option_matches("size", "large", "x-large")
    assert not option_matches("size", "12 ounce", "12 ounces")  # size is exact
    assert option_matches("color", "navy blue", "navy-blue")
    assert not option_matches("color", "navy blue", "royal blue")
    assert not option_matches("color", "navy blue", None)


def test_score_helper():
    assert score([1.0, 0.5, 0.0, 0.5]) == 50.0
    assert score([]) == 0.0


# --- data -------------------------------------------------------------------------------------------
def test_catalogue_sizes_and_format():
    cat = get_catalogue()
    assert len(cat.products) >= 1000
    assert {p.category[0] for p in cat.products} == {"fashion", "makeup", "electronics", "furniture", "food"}
    assert len(cat.goals) >= 6000
    assert len({p.asin for p in cat.products}) == len(cat.products)
    assert all(re.fullmatch(r"B0[0-9A-Z]{8}", p.asin) for p in cat.products)
    assert all(p.attributes and p.options and p.price > 0 and p.description for p in cat.products)
    size = sum((DATA_DIR / f).stat().st_size for f in ("products.jsonl", "goals.jsonl"))
    assert size < 3_000_000


def test_goals_are_satisfied_by_their_source_product():
    cat = get_catalogue()
    for g in cat.goals:
        p = cat.products[cat.by_asin[g.asin]]
        assert shop_reward(g, p, g.options) == 1.0, g
        assert 1 <= len(g.attributes) <= 3 and len(g.options) <= 2
        assert g.instruction.endswith(f"price lower than {g.price_upper:.2f} dollars")


def test_build_regenerates_identical_bytes(tmp_path):
    script = DATA_DIR / "build_catalogue.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, capture_output=True)
    for name in ("products.jsonl", "goals.jsonl"):
        assert (tmp_path / name).read_bytes() == (DATA_DIR / name).read_bytes(), name


# --- splits, ids, seeds ------------------------------------------------------------------------------
def test_splits_and_task_ids():
    cat = get_catalogue()
    sizes = {s: len(ShopEnv(split=s)) for s in ShopEnv.splits}
    assert sizes == {"test": 500, "valid": 500, "train": len(cat.goals) - 1000}
    env = rspo.core.envs.make("shop", split="valid")
    assert env.task_ids[0] == "valid/00000"
    env.reset(task_id="valid/00000")
    assert env.goal is cat.goals[500]
    env = ShopEnv(split="test")
    _, info = env.reset(task_id="test/00499")
    assert env.goal is cat.goals[499] and info["task"] == cat.goals[499].instruction


def test_unknown_task_id_and_split():
    env = ShopEnv(split="test")
    with pytest.raises(ValueError, match="test/00000"):
        env.reset(task_id="test/99999")
    with pytest.raises(ValueError, match="train, valid, test"):
        ShopEnv(split="dev")


def test_reset_by_seed_is_deterministic():
    a, b = ShopEnv(split="train"), ShopEnv(split="train")
    for seed in (0, 7):
        assert a.reset(seed=seed) == b.reset(seed=seed)
        assert [a.reset()[1]["task_id"] for _ in range(5)] == [b.reset()[1]["task_id"] for _ in range(5)]


# --- pages and actions -------------------------------------------------------------------------------
def _goal_env(task_id="test/00000", **kw):
    env = ShopEnv(split=task_id.split("/")[0], **kw)
    obs, info = env.reset(task_id=task_id)
    return env, obs, info


def test_search_page_and_candidate_queries():
    env, obs, info = _goal_env()
    assert obs == f"WebShop{SEP}Instruction:{SEP}{env.goal.instruction}{SEP}Search"
    assert set(INFO_KEYS) <= set(info) and info["anchor"] == obs and info["valid"]
    acts = info["admissible_actions"]
    assert len(acts) == len(set(acts)) == 5 and all(a.startswith("search[") for a in acts)
    assert f"search[{env.goal.query}]" in acts
    positions = set()
    for i in range(30):
        _, info = env.reset(task_id=f"test/{i:05d}")
        positions.add(info["admissible_actions"].index(f"search[{env.goal.query}]"))
    assert len(positions) > 1  # the goal's own query is not always first


def test_results_page_format_and_paging():
    env, _, _ = _goal_env()
    obs, r, term, trunc, info = env.step(f"search[{env.goal.query}]")
    head = f"Instruction:{SEP}{env.goal.instruction}{SEP}Back to Search{SEP}Page 1 (Total results: 50){SEP}Next >"
    assert obs.startswith(head + SEP) and info["valid"] and (r, term, trunc) == (0.0, False, False)
    items = obs[len(head) + len(SEP) :].split(SEP)
    assert len(items) == 30
    for asin, title, price in zip(items[::3], items[1::3], items[2::3], strict=True):
        assert re.fullmatch(r"B0[0-9A-Z]{8}", asin) and title and re.fullmatch(r"\$\d+\.\d\d", price)
    acts = info["admissible_actions"]
    assert acts[:2] == ["click[back to search]", "click[next >]"] and len(acts) == 12
    page1 = obs
    obs2, *_, info2 = env.step("click[next >]")
    assert "Page 2 (Total results: 50)" + SEP + "< Prev" + SEP + "Next >" in obs2
    assert "click[< prev]" in info2["admissible_actions"]
    for _ in range(3):
        obs5, *_ = env.step("click[Next >]")
    assert "Page 5 (Total results: 50)" in obs5 and "Next >" not in obs5
    *_, info = env.step("click[next >]")
    assert not info["valid"]
    for _ in range(4):
        obs, *_ = env.step("click[< prev]")
    assert obs == page1
    obs, *_ = env.step("click[back to search]")
    assert obs.startswith("WebShop [SEP] Instruction:")


def test_free_text_search_and_cache():
    env, _, _ = _goal_env()
    obs, *_, info = env.step("search[  Zzqx   Qqzz ]")  # no known word: no results, still a valid search
    assert info["valid"] and "Page 1 (Total results: 0)" in obs and "Next >" not in obs
    cat = get_catalogue()
    assert cat.search("Navy  Blue T-Shirt") is cat.search("navy blue t-shirt")


def test_item_page_options_and_buy():
    env, _, _ = _goal_env()
    env.step(f"search[{env.goal.query}]")
    i = env.results[0]
    p = env.catalogue.products[i]
    obs, *_, info = env.step(f"click[{p.asin}]")  # upper case is accepted too
    assert info["valid"] and env.item == i
    assert obs.startswith(f"Instruction:{SEP}{env.goal.instruction}{SEP}Back to Search{SEP}< Prev{SEP}")
    assert obs.endswith(
        f"{p.title}{SEP}Price: ${p.price:.2f}{SEP}Rating: N.A.{SEP}Description{SEP}Features{SEP}Reviews{SEP}Buy Now"
    )
    name, values = next(iter(p.options.items()))
    assert f"{SEP}{name}{SEP}{SEP.join(values)}{SEP}" in obs
    assert info["admissible_actions"][-4:] == [
        "click[description]",
        "click[features]",
        "click[reviews]",
        "click[buy now]",
    ]
    obs, *_ = env.step(f"click[{values[0]}]")
    assert f"{values[0]} (selected)" in obs and env.chosen == {name: values[0]}
    obs, *_ = env.step(f"click[{values[1]}]")
    assert f"{values[1]} (selected)" in obs and f"{values[0]} (selected)" not in obs
    item_obs = obs
    obs, *_ = env.step("click[features]")
    assert obs.endswith(SEP.join(a.capitalize() for a in p.attributes))
    obs, *_ = env.step("click[< prev]")
    assert obs == item_obs
    expected = shop_reward(env.goal, p, env.chosen)
    assert env.step("click[description]")[-1]["progress"] == expected
    env.step("click[< prev]")
    obs, r, term, trunc, info = env.step("click[buy now]")
    assert term and not trunc and r == expected and info["progress"] == expected
    assert info["won"] == (r == 1.0) and info["admissible_actions"] == ["click[back to search]"]
    assert obs.startswith("Thank you for shopping with us!") and p.asin in obs
    with pytest.raises(RuntimeError):
        env.step("click[buy now]")


INVALID = [
    "",
    "x" * 10_000,
    "click[" + "a" * 10_000 + "]",
    "click[ünïcødé ☃]",
    "点击[buy now]",
    "click[buy now\x00]",
    "click[\x1b[31mbuy now]",
    "click[buy]",
    "click [buy now]",
    "click[buy now]]",
    "search[]",
    "search[   ]",
    "search[!!!]",
    "search[" + "q" * 300 + "]",
    "buy now",
    "click[b0notthere]",
    "click[next]",
    "click[]",
]


def test_invalid_actions_leave_the_page_unchanged():
    env, _, _ = _goal_env(max_steps=200)
    setups = [None, f"search[{env.goal.query}]", "click[next >]", "ITEM", "click[description]"]
    for setup in setups:
        if setup == "ITEM":
            setup = "click[" + next(k for k, (kind, _) in env.clicks.items() if kind == "item") + "]"
        if setup:
            assert env.step(setup)[-1]["valid"]
        before, page = env.obs, env.page
        if page == "search":
            extra = ["click[back to search]", "click[buy now]", "click[search]"]
        else:
            extra = ["search[shoes]", f"search[{env.goal.query}]"]
            extra += ["click[buy now]", "click[description]"] if page != "item" else ["click[next >]"]
        for action in INVALID + extra:
            steps = env.steps
            obs, r, term, trunc, info = env.step(action)
            assert obs == before and not info["valid"] and info["step"] == steps + 1, (page, action)
            assert (r, term, info["process_reward"], env.page) == (0.0, False, 0.0, page)


def test_parse_action_normalisation():
    assert parse_action("  Click[  Buy   NOW ] ") == ("click", "buy now")
    assert parse_action("search[Men's\tT-Shirt]") == ("search", "men's t-shirt")
    # ASCII only (rspo.core.envs.text): a query with another character is invalid, as every other action
    assert parse_action("search[chaussures été]") is None
    assert parse_action("search[chaussures ete]") == ("search", "chaussures ete")
    assert parse_action("click[buy now]x") is None and parse_action(None) is None


def test_random_walks_all_admissible_actions_valid_and_success_low():
    env = ShopEnv(split="train")
    rng = random.Random(1)
    wins = episodes = 0
    obs, info = env.reset(seed=1)
    while episodes < 300:
        obs, r, term, trunc, info = env.step(rng.choice(info["admissible_actions"]))
        assert info["valid"] and set(INFO_KEYS) <= set(info) and info["anchor"] == obs
        assert 0.0 <= info["progress"] <= 1.0 and info["process_reward"] >= 0.0
        if term or trunc:
            episodes += 1
            wins += info["won"]
            obs, info = env.reset()
    print(f"random admissible policy: success {wins / episodes:.1%} over {episodes} episodes")
    assert wins / episodes < 0.05


# --- expert -----------------------------------------------------------------------------------------
def _run(env, policy, task_id):
    obs, info = env.reset(task_id=task_id)
    total_process = 0.0
    while True:
        obs, r, term, trunc, info = env.step(policy(env))
        assert info["valid"]
        total_process += info["process_reward"]
        if term or trunc:
            return r, info, total_process


def test_expert_solves_test_goals_and_train_sample():
    env = ShopEnv(split="test")
    wins = sum(_run(env, ShopEnv.expert_action, t)[1]["won"] for t in env.task_ids)
    print(f"expert success on test: {wins}/500")
    assert wins / 500 >= 0.99
    env = ShopEnv(split="train")
    sample = random.Random(0).sample(env.task_ids, 300)
    assert sum(_run(env, ShopEnv.expert_action, t)[1]["won"] for t in sample) / 300 >= 0.99


def test_expert_recovers_mid_episode():
    env = ShopEnv(split="valid", max_steps=40)
    rng = random.Random(3)
    wins = 0
    for task in env.task_ids[:150]:
        obs, info = env.reset(task_id=task)
        done = False
        for _ in range(rng.randrange(8)):  # random detours first: wrong searches, items, options
            action = rng.choice(info["admissible_actions"])
            if action == "click[buy now]":
                continue
            obs, r, term, trunc, info = env.step(action)
        while not done:
            obs, r, term, trunc, info = env.step(env.expert_action())
            assert info["valid"]
            done = term or trunc
        wins += info["won"]
    assert wins / 150 >= 0.99


# --- process reward ----------------------------------------------------------------------------------
def _farmer(env: ShopEnv) -> str:
    """Browse look-alike products (a goal attribute, wrong type or price) and pick their options."""
    if env.page == "search":
        return f"search[{env.goal.query}]"
    if env.page == "results":
        for kind, i in env.clicks.values():
            if kind == "item" and ("product", i) not in env.process.paid:
                right_type, n_attr, price_ok = env.process.facts(i)
                if n_attr >= 1 and not (right_type and price_ok):
                    return f"click[{env.catalogue.products[i].asin}]"
        return "click[next >]" if "next >" in env.clicks else "click[back to search]"
    if env.page == "item":
        for name, values in env.catalogue.products[env.item].options.items():
            if ("any option", env.item, name) not in env.process.paid:
                return f"click[{values[0]}]"
    return "click[< prev]"


def test_process_reward_aligned_at_m0_and_farmed_at_m1():
    tasks = [f"test/{i:05d}" for i in range(0, 500, 5)]
    means = {}
    for m in (0.0, 1.0):
        env = ShopEnv(split="test", misalignment=m)
        for name, policy in (("expert", ShopEnv.expert_action), ("farmer", _farmer)):
            runs = [_run(env, policy, t) for t in tasks]
            means[m, name] = sum(p for _, _, p in runs) / len(runs)
            if name == "expert":
                for t, (r, _, p) in zip(tasks, runs, strict=True):
                    env.reset(task_id=t)
                    k = len(env.goal.options)
                    assert r == 1.0 and p == pytest.approx(0.30 + 0.05 * k + m * MISALIGNED_OPTION * k)
            else:
                assert all(r == 0.0 for r, _, _ in runs)  # the farmer never buys
    print("mean process reward per episode", {f"m={m} {n}": round(v, 3) for (m, n), v in means.items()})
    assert means[0.0, "farmer"] < means[0.0, "expert"]
    assert means[1.0, "farmer"] > means[1.0, "expert"] + 0.2
    # the dense baseline's sum (outcome + process): browsing beats buying at m = 1
    assert means[1.0, "farmer"] > 1.0 + means[1.0, "expert"]


def test_process_reward_paid_once():
    env, _, _ = _goal_env()
    *_, info = env.step(f"search[{env.goal.query}]")
    assert info["process_reward"] == pytest.approx(0.10)
    target = env.expert_action()
    assert env.step(target)[-1]["process_reward"] > 0
    assert env.step("click[< prev]")[-1]["process_reward"] == 0.0  # the results milestone is paid
    assert env.step(target)[-1]["process_reward"] == 0.0  # and so are the item milestones


def test_process_reward_doc_is_published():
    assert ShopEnv.process_reward_doc == PROCESS_REWARD_DOC and "misalignment" in PROCESS_REWARD_DOC
    assert PROCESS_REWARD_DOC in shop_env_module.__doc__
    assert Path(DATA_DIR / "README.md").exists()
