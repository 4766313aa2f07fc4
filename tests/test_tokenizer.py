"""rspo.core.policies.tokenizer: the offline tokenizer (determinism, losslessness, chat template, families)."""

from __future__ import annotations

import pytest

import rspo.core.envs
from rspo.core.policies import tokenizer
from rspo.core.rollout import expert_demonstrations


@pytest.fixture(scope="module")
def tok():
    return tokenizer.small_tokenizer()


@pytest.fixture(scope="module")
def env_texts():
    """Prompts and actions of both environments, from splits the small tokenizer was not trained on."""
    texts = []
    for name in ("household", "shop"):
        split = rspo.core.envs.env_class(name).eval_splits[-1]
        ids = rspo.core.envs.make(name, split=split).task_ids[:2]
        texts += [t for p, _, a in expert_demonstrations(name, split, ids) for t in (p, a)]
    return texts


def test_tokenizer_is_deterministic_and_lossless(tok, env_texts):
    texts = tokenizer.tokenizer_corpus(n_expert=3, n_random=1)
    a = tokenizer.train_tokenizer(texts, vocab_size=512).backend_tokenizer.to_str()
    b = tokenizer.train_tokenizer(texts, vocab_size=512).backend_tokenizer.to_str()
    assert a == b
    for text in env_texts:
        assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    for special in tokenizer.SPECIAL_TOKENS:
        assert len(tok(special, add_special_tokens=False)["input_ids"]) == 1
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|pad|>"
    assert len(tok("go to cabinet 12", add_special_tokens=False)["input_ids"]) <= 6
    asin = tokenizer.catalogue_ids()[-1]  # a lowercase product id; its uppercase form is also one token
    assert tok.tokenize(f"click[{asin}]") == ["click", "[", asin, "]"]
    assert asin.upper() in tok.tokenize(f" {asin.upper()} [SEP] $18.00")


def test_chat_template(tok):
    user = [{"role": "user", "content": "hello"}]
    text = tok.apply_chat_template(user, add_generation_prompt=True, tokenize=False)
    assert text == "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
    full = tok.apply_chat_template([*user, {"role": "assistant", "content": "look"}], tokenize=False)
    assert full == text + "look<|im_end|>\n"


def test_tokenizer_families_follow_the_registry():
    assert tokenizer.family_envs() == ["household", "shop"]
    assert tokenizer.family_envs("detour") == ["detour"]
    with pytest.raises(ValueError, match="tokenizer family"):
        tokenizer.family_envs("nope")
    texts = tokenizer.tokenizer_corpus(n_expert=5, n_random=5, family="detour")
    assert texts and all("chest" in t for t in texts)
    assert not any("cabinet" in t or "search[" in t for t in texts)
    # the lab's own tokenizer is small and keys on its corpus, apart from the default's data files
    assert tokenizer.tokenizer_key(512, "detour") != tokenizer.tokenizer_key(512)
