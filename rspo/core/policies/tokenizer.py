"""The offline default tokenizer: corpus, training, cache and cache key (docs/design.md §5).

Nothing is downloaded. The tokenizer is a byte-level BPE (lossless on any text, like GPT-2's) trained
on what the agent reads and writes in both environments - instructions, observations, admissible
actions, shop titles, the prompt template of :mod:`rspo.core.prompts` - gathered by running the expert and
a random policy on *train* tasks; the shop's product ids are added as whole tokens. It is wrapped in
:class:`~transformers.PreTrainedTokenizerFast` with a ChatML chat template, so
:class:`rspo.core.policies.lm.LMPolicy` treats it like any instruct model's. Sizes: 3,072 BPE tokens +
3,120 product ids (upper and lower case) = 6,192; "go to cabinet 12" is 4 tokens,
``click[b0o4yfbv8b]`` 4; household prompts are about 180 tokens (310 with the admissible actions),
shop prompts about 410. Each environment's registry entry names its tokenizer family
(``tokenizer_family``): household and shop share ``"default"``, the lab has its own.

>>> from rspo.core.policies.tokenizer import default_tokenizer
>>> tok = default_tokenizer()              # trained once (seconds), then read from the cache

The model built on it is :mod:`rspo.core.policies.tiny`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
from pathlib import Path

from rspo.core.atomic import atomic_dir

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>")
TOKENIZER_VERSION = 3  # bump when the corpus or the training recipe of the tokenizer changes
DEFAULT_VOCAB_SIZE = 3072
DEFAULT_FAMILY = (
    "default"  # household + shop; an environment's registry entry may name its own (tokenizer_family)
)
DEFAULT_FAMILY_ENVS = (  # the default family's members when its cache keys were first made
    "household",
    "shop",
)

# ChatML, as Qwen's instruct models render it; the assistant turn ends with <|im_end|> (the eos token).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}{% generation %}{{- message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

MODEL_MAX_LENGTH = 4096  # the tiny model's max_position_embeddings (rspo.core.policies.tiny.TINY_MODEL)


def cache_root() -> Path:
    """Where built artefacts are kept: ``$RSPO_CACHE``, else ``~/.cache/rspo``."""
    return Path(os.environ.get("RSPO_CACHE") or Path.home() / ".cache" / "rspo")


def data_fingerprint(family: str = DEFAULT_FAMILY) -> str:
    """A short hash of the committed environment data (tasks, catalogue, goals) that the texts of
    tokenizer ``family`` come from: each environment's registry entry names its ``data_files``."""
    import rspo.core.envs
    from rspo.core.paths import data_dir

    h = hashlib.sha256()
    for name in family_envs(family):
        for f in rspo.core.envs.spec(name).data_files:
            h.update(f"{name}/{f}".encode())
            h.update((data_dir(name) / f).read_bytes())
    return h.hexdigest()[:16]


def _chat(user: str, reply: str | None = None) -> str:
    text = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    return text if reply is None else text + reply + "<|im_end|>\n"


def family_envs(family: str = DEFAULT_FAMILY) -> list[str]:
    """The environments whose text trains tokenizer ``family``, sorted (each environment's registry
    entry names its ``tokenizer_family``: household and shop share ``"default"``, the lab has its own)."""
    import rspo.core.envs

    names = [n for n in rspo.core.envs.list_envs() if rspo.core.envs.spec(n).tokenizer_family == family]
    if not names:
        raise ValueError(f"no environment uses tokenizer family {family!r}")
    return names


def tokenizer_corpus(
    n_expert: int = 200, n_random: int = 100, seed: int = 0, family: str = DEFAULT_FAMILY
) -> list[str]:
    """Texts from the *train* tasks of the environments of tokenizer ``family``, as the agent sees and
    writes them.

    For each environment: the expert on the first ``n_expert`` train tasks and a seeded random policy
    (uniform over admissible actions, at most 20 steps) on the next ``n_random``; every step contributes
    its score-mode prompt and action rendered as a ChatML exchange (so actions also appear at the start
    of the assistant turn); the first step of each episode also in generate mode (its format line).
    """
    import rspo.core.envs
    from rspo.core.rollout import AgentView

    rng = random.Random(seed)
    texts = []
    for name in family_envs(family):
        env = rspo.core.envs.make(name, split="train")
        ids = env.task_ids
        runs = [(t, True) for t in ids[:n_expert]] + [(t, False) for t in ids[n_expert : n_expert + n_random]]
        for task_id, expert in runs:
            obs, info = env.reset(task_id=task_id)
            view, gen = AgentView(env), AgentView(env, action_mode="generate")
            view.start(obs, info)
            gen.start(obs, info)
            texts.append(_chat(gen.prompt()))
            done = False
            while not done and (expert or env.steps < 20):
                action = env.expert_action() if expert else rng.choice(view.info["admissible_actions"])
                texts.append(_chat(view.prompt(), action))
                obs, _, terminated, truncated, info = env.step(action)
                view.record(action, obs, info)
                done = terminated or truncated
    return texts


# GPT-2's pre-tokenizer split, with two changes for the shop's text: " [SEP]" is one piece (BPE then
# makes it one token, not three), and a letter run touching a digit is split into single characters,
# so that codes which are not whole tokens (an id outside the catalogue) tokenise character by character
# the same way in upper and lower case, without arbitrary merges.
PRE_TOKENIZER_PATTERN = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\[SEP\]| ?(?<!\p{N})\p{L}+(?![\p{L}\p{N}])| ?\p{N}+| ?\p{L}"
    r"| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
)


def catalogue_ids() -> list[str]:
    """The shop's product ids as pages show them (``B0O4YFBV8B``) and as the agent clicks them
    (``b0o4yfbv8b``), sorted (:func:`rspo.core.envs.shop.catalogue.product_tokens`)."""
    from rspo.core.envs.shop.catalogue import product_tokens

    return product_tokens()


def family_tokens(family: str = DEFAULT_FAMILY) -> list[str]:
    """The whole tokens added to tokenizer ``family``: its environments' ``extra_tokens``, in turn
    (the default family: the shop's product ids, :func:`catalogue_ids`)."""
    import rspo.core.envs

    return [t for name in family_envs(family) for t in rspo.core.envs.spec(name).tokens()]


def train_tokenizer(texts: list[str], vocab_size: int = DEFAULT_VOCAB_SIZE, extra_tokens: list[str] = ()):
    """A byte-level BPE tokenizer trained on ``texts``, as a ``PreTrainedTokenizerFast`` with ChatML.

    Lossless (any text decodes back to itself) and deterministic: the same texts give a byte-identical
    ``tokenizer.json``. Special tokens: ``<|endoftext|>`` (0), ``<|im_start|>``, ``<|im_end|>`` (eos),
    ``<|pad|>`` (padding). Pre-tokenization: :data:`PRE_TOKENIZER_PATTERN`. ``extra_tokens`` are added
    whole after training (:func:`catalogue_ids`: one token per product id, so that clicking a product
    is copying one token - as recommender LMs give each item an id token - not ten characters).
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRE_TOKENIZER_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    tok.add_tokens([AddedToken(t, normalized=False) for t in extra_tokens])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token=None,
        bos_token=None,
        additional_special_tokens=["<|endoftext|>", "<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
        model_max_length=MODEL_MAX_LENGTH,
        clean_up_tokenization_spaces=False,
    )


@functools.cache
def _family_corpus(family: str, members: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`tokenizer_corpus` of ``family`` with its defaults, made once per process and membership
    (``members``: :func:`family_envs`; the key of a non-default family hashes it, a build trains on it)."""
    return tuple(tokenizer_corpus(family=family))


def tokenizer_key(vocab_size: int = DEFAULT_VOCAB_SIZE, family: str = DEFAULT_FAMILY) -> str:
    """The cache key of a family's tokenizer: recipe version, vocabulary size and the data it reads
    (the default family: the committed data files, and its members when they are not household and
    shop; another family: a hash of its corpus, which its environments generate in code). Computed
    once per membership: an environment that joins the family later gets another key."""
    return _tokenizer_key(vocab_size, family, tuple(family_envs(family)))


@functools.cache
def _tokenizer_key(vocab_size: int, family: str, members: tuple[str, ...]) -> str:
    spec = {"version": TOKENIZER_VERSION, "vocab_size": vocab_size}
    if family == DEFAULT_FAMILY:
        spec["data"] = data_fingerprint()
        if members != DEFAULT_FAMILY_ENVS:  # another membership, another tokenizer (the keys made
            spec["envs"] = list(members)  # before members were keyed stay as they were)
    else:
        spec["family"] = family
        spec["corpus"] = hashlib.sha256("\x00".join(_family_corpus(family, members)).encode()).hexdigest()
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def default_tokenizer(vocab_size: int = DEFAULT_VOCAB_SIZE, family: str = DEFAULT_FAMILY):
    """The tokenizer of ``family`` (the default: shared by household and shop): trained once (a few
    seconds), then read from the cache (``<cache_root>/tokenizer-<key>/``). Kept in memory per key."""
    return _tokenizer_at(tokenizer_key(vocab_size, family), vocab_size, family)


@functools.cache
def _tokenizer_at(key: str, vocab_size: int, family: str):
    from transformers import AutoTokenizer

    path = cache_root() / f"tokenizer-{key}"
    if not path.is_dir():
        members = tuple(family_envs(family))
        tok = train_tokenizer(list(_family_corpus(family, members)), vocab_size, family_tokens(family))
        with atomic_dir(path) as tmp:
            tok.save_pretrained(tmp)
    return AutoTokenizer.from_pretrained(path)


@functools.cache
def small_tokenizer(vocab_size: int = 1024):
    """A tokenizer with the same recipe trained on a small sample (10 expert tasks per environment),
    in about a second and without touching the disk: for tests that need a model, not a good one."""
    return train_tokenizer(tokenizer_corpus(n_expert=10, n_random=0), vocab_size, family_tokens())
