"""``LMPolicy``: any Hugging Face causal LM (+ optional LoRA) as a policy, in two action modes (docs/design.md §5).

- ``score``: every admissible action is scored by the summed log-prob of ``completion_text(action)``
  after the rendered prompt; the policy is ``softmax(scores / T)``. All candidates of a prompt share the
  prompt in one forward row (:mod:`rspo.core.policies.scoring`). Always valid; lets a tiny model learn on a CPU.
- ``generate``: the model writes a reply (:mod:`rspo.core.policies.generation`), parsed by
  :func:`rspo.core.policies.parser.parse_action`; log-probs are per generated token.

Temperature. ``act(temperature=T)`` reports behaviour log-probs at ``T``; ``evaluate`` scores at
``temperature`` if given, else at ``policy.temperature`` (constructor argument, default 1.0). A trainer
that samples at ``T != 1`` sets ``policy.temperature = T`` (or passes it), so that the PPO ratio is
exactly 1 before the first update. LoRA dropout is active in ``train()`` mode: for a ratio of exactly 1
call ``evaluate`` in ``eval()`` mode or set dropout to 0.

Reference policy (KL). With LoRA it is the base model with the adapters disabled (no extra memory).
Without LoRA it is ``reference_model`` if given, else a frozen deep copy of the model made at
construction - twice the model's memory; fine for the tiny model, for a real model use LoRA or pass a
``reference_model`` (e.g. in bf16).

Truncation. A rendered prompt longer than ``max_prompt_tokens`` keeps the chat template's beginning
(system text, ``<|im_start|>user``) and end (the generation prompt) and drops tokens from the start of
the user message - its end holds the current observation and the admissible actions.
"""

from __future__ import annotations

import copy
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path

import torch

from rspo.core.policies.base import ACTION_MODES, ActionSample, PolicyOutput, TurnInput
from rspo.core.policies.generation import act_generate, logprobs_generate, sample_from
from rspo.core.policies.scoring import score_rows

_MARK = "\u2063RSPO\u2063"  # a marker that no chat template changes
_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_POLICY_KEYS = ("max_prompt_tokens", "max_new_tokens", "micro_batch", "temperature", "reference_model")
SETTINGS_FILE, VALUE_HEAD_FILE, BASE_DIR = "rspo_policy.json", "value_head.pt", "base"


def default_lora_config(model: torch.nn.Module, **overrides):
    """r=16, alpha=32, dropout 0.05 on the attention and MLP projections (``all-linear`` if unnamed)."""
    from peft import LoraConfig

    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    targets = [t for t in _LORA_TARGETS if t in names] or "all-linear"
    kwargs = dict(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=targets, task_type="CAUSAL_LM")
    return LoraConfig(**{**kwargs, **overrides})


@contextmanager
def _quiet_local_load(path: Path):
    """No "Loading weights 0/24" bar for a local folder (the tiny default loads in milliseconds, and
    the bars filled logs and notebook outputs); a hub model keeps transformers' progress bars."""
    from transformers.utils import logging as hf_logging

    quiet = path.is_dir() and hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if quiet:
            hf_logging.enable_progress_bar()


class LMPolicy:
    """A causal LM as a :class:`rspo.core.policies.base.Policy`.

    Args:
        model: a transformers causal LM, or a peft ``PeftModel`` wrapping one (LoRA).
        tokenizer: its tokenizer; needs a chat template (else a plain ``User:/Assistant:`` format is used).
        action_mode: ``"score"`` or ``"generate"``.
        value_head: add ``Linear(hidden, 1)`` (zero-init, float32) on the last prompt token's hidden state.
        reference_model: the KL reference without LoRA, used as it is (eval mode, no grad) - default: a
            frozen deep copy of ``model``.
        max_prompt_tokens: longer rendered prompts are cut (see the module docstring).
        max_new_tokens: generate mode's reply budget.
        micro_batch: rows per forward pass (score mode: one row is a prompt with all its candidates).
        temperature: the temperature ``evaluate`` scores at by default.
    """

    def __init__(
        self,
        model,
        tokenizer,
        *,
        action_mode: str = "score",
        value_head: bool = False,
        reference_model=None,
        max_prompt_tokens: int = 1024,
        max_new_tokens: int = 48,
        micro_batch: int = 16,
        temperature: float = 1.0,
    ):
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        impl = getattr(model.config, "_attn_implementation", None) or "sdpa"
        if impl not in ("sdpa", "eager"):
            raise ValueError(
                f"LMPolicy needs attn_implementation 'sdpa' or 'eager' (4-D masks), got {impl!r}"
            )
        self.model, self.tokenizer, self.action_mode = model, tokenizer, action_mode
        self.max_prompt_tokens, self.max_new_tokens = max_prompt_tokens, max_new_tokens
        self.micro_batch, self.temperature = micro_batch, temperature
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.pad_id = tokenizer.pad_token_id
        self.is_peft = hasattr(model, "disable_adapter") and hasattr(model, "peft_config")
        self.reference_model = None
        if not self.is_peft:
            if reference_model is None:  # a frozen copy; a reference passed in is used as it is
                reference_model = copy.deepcopy(model).eval().requires_grad_(False)
            self.reference_model = reference_model
        self.value_head = None
        if value_head:
            hidden = model.config.get_text_config().hidden_size
            self.value_head = torch.nn.Linear(hidden, 1).to(device=self.device, dtype=torch.float32)
            torch.nn.init.zeros_(self.value_head.weight)
            torch.nn.init.zeros_(self.value_head.bias)
        self.adapter: str | None = None  # set on LoRA twins: the adapter this policy acts with
        self._init_template()
        self._completion_cache: dict[str, list[int]] = {}

    def twin(self, adapter: str = "explorer") -> LMPolicy:
        """A second, independently trainable policy that starts equal to this one (RSPO's explorer).

        LoRA: a second adapter ``adapter`` on the same base model, initialised from this policy's
        adapter (no second copy of the base; the KL reference stays the base with adapters off).
        Full weights: a deep copy of the model, sharing this policy's frozen reference. The value
        head, if any, is copied."""
        other = copy.copy(self)
        other.value_head = copy.deepcopy(self.value_head)
        if not self.is_peft:
            other.model = copy.deepcopy(self.model)
            return other
        mine = self.adapter or self.model.active_adapter
        if adapter == mine or adapter in self.model.peft_config:
            raise ValueError(f"adapter {adapter!r} already exists on this model")
        self.adapter = mine
        self.model.add_adapter(adapter, copy.deepcopy(self.model.peft_config[mine]))
        with torch.no_grad():
            params = dict(self.model.named_parameters())
            for name, p in params.items():
                if f".{mine}." in name:
                    params[name.replace(f".{mine}.", f".{adapter}.")].copy_(p)
        other.adapter = adapter
        self._activate()
        return other

    def _activate(self) -> None:
        """Make this policy's adapter the active one (LoRA twins share one model)."""
        if self.adapter is not None and self.model.active_adapter != self.adapter:
            self.model.set_adapter(self.adapter)

    # ----------------------------------------------------------------- text and tokens
    def _init_template(self) -> None:
        """Find the template text around a user message, and the assistant's end-of-turn text."""
        tok, eos = self.tokenizer, self.tokenizer.eos_token or ""
        self._prefix = self._suffix = None
        self.end_text = eos
        if not getattr(tok, "chat_template", None):
            return
        parts = self.render_prompt(_MARK).split(_MARK)
        if len(parts) == 2:
            self._prefix, self._suffix = parts
        messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": _MARK}]
        try:
            text = tok.apply_chat_template(messages, tokenize=False)
        except Exception:  # a template that refuses this conversation: end turns with eos
            return
        if text.count(_MARK) == 1:
            self.end_text = text.split(_MARK)[1].rstrip() or eos

    def render_prompt(self, prompt: str) -> str:
        """The chat-template text of one user message followed by the generation prompt."""
        if not getattr(self.tokenizer, "chat_template", None):
            return f"User: {prompt}\nAssistant: "
        messages = [{"role": "user", "content": prompt}]
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def completion_text(self, action: str) -> str:
        """The assistant reply an action is scored (and fine-tuned) as: ``action + end_text``."""
        return action + self.end_text

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def encode_prompt(self, prompt: str) -> list[int]:
        """Token ids of ``render_prompt(prompt)``, cut to ``max_prompt_tokens`` (module docstring)."""
        ids = self._encode(self.render_prompt(prompt))
        limit = self.max_prompt_tokens
        if len(ids) <= limit:
            return ids
        if self._prefix is not None:
            head, tail = self._encode(self._prefix), self._encode(self._suffix)
            keep = limit - len(head) - len(tail)
            if keep > 0:
                return head + self._encode(prompt)[-keep:] + tail
        return ids[-limit:]

    def encode_completion(self, action: str) -> list[int]:
        """Token ids of ``completion_text(action)`` (no special tokens inserted), cached."""
        ids = self._completion_cache.get(action)
        if ids is None:
            if len(self._completion_cache) > 100_000:
                self._completion_cache.clear()
            ids = self._completion_cache[action] = self._encode(self.completion_text(action))
        return ids

    @property
    def stop_ids(self) -> set[int]:
        """Tokens that end a reply: eos, the template's end-of-turn token, the generation config's eos."""
        ids = {self.tokenizer.eos_token_id}
        end = self._encode(self.end_text) if self.end_text else []
        if len(end) == 1:
            ids.add(end[0])
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
        return {i for i in ids if i is not None}

    # ----------------------------------------------------------------- modules
    @property
    def device(self) -> torch.device:
        return self.model.get_input_embeddings().weight.device

    def parameters(self) -> list[torch.nn.Parameter]:
        extra = list(self.value_head.parameters()) if self.value_head is not None else []
        return list(self.model.parameters()) + extra

    def named_trainable_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        """(name, parameter) of what an optimizer updates (checkpoints save exactly these)."""
        if self.adapter is not None:  # LoRA twins: this adapter's weights (set_adapter flips requires_grad)
            named = [(f"model.{n}", p) for n, p in self.model.named_parameters() if f".{self.adapter}." in n]
        else:
            named = [(f"model.{n}", p) for n, p in self.model.named_parameters() if p.requires_grad]
        if self.value_head is not None:
            named += [(f"value_head.{n}", p) for n, p in self.value_head.named_parameters()]
        return named

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """What an optimizer updates: LoRA adapters (or the whole model) and the value head."""
        return [p for _, p in self.named_trainable_parameters()]

    def train(self, mode: bool = True) -> LMPolicy:
        self.model.train(mode)
        if self.value_head is not None:
            self.value_head.train(mode)
        return self

    def eval(self) -> LMPolicy:
        return self.train(False)

    def to(self, device: str | torch.device) -> LMPolicy:
        """Move the model, the reference model and the value head."""
        for module in (self.model, self.reference_model, self.value_head):
            if module is not None:
                module.to(device)
        return self

    @contextmanager
    def _scorer(self, reference: bool):
        """The module to score with: the model, or the reference (LoRA: adapters off), without grad."""
        if not reference:
            yield self.model
        elif self.is_peft:
            with torch.no_grad(), self.model.disable_adapter():
                yield self.model
        else:
            with torch.no_grad():
                yield self.reference_model

    def values_of(self, hidden: torch.Tensor) -> torch.Tensor:  # (B, H) -> (B,)
        """The value head on final hidden states at the last prompt token."""
        return self.value_head(hidden.float()).squeeze(-1)

    # ----------------------------------------------------------------- score mode
    def _score(self, model, prompts, candidates, *, hidden: bool):
        """Summed candidate log-probs (T = 1) per prompt, identical (prompt, candidates) scored once.

        Returns a list of ``(K_i,)`` score tensors and a list of ``(H,)`` hidden states (or Nones)."""
        if any(len(c) == 0 for c in candidates):
            raise ValueError("score mode needs at least one candidate action per prompt")
        keys = [(p, tuple(c)) for p, c in zip(prompts, candidates, strict=True)]
        unique = list(dict.fromkeys(keys))
        where = {k: i for i, k in enumerate(unique)}
        rows = score_rows(
            model,
            [self.encode_prompt(p) for p, _ in unique],
            [[self.encode_completion(a) for a in c] for _, c in unique],
            pad_id=self.pad_id,
            micro_batch=self.micro_batch,
            hidden=hidden,
        )
        picked = [rows[where[k]] for k in keys]
        return [r.sums for r in picked], [r.hidden for r in picked]

    def _act_score(self, prompts, candidates, greedy, temperature, generator) -> list[ActionSample]:
        scores, hidden = self._score(self.model, prompts, candidates, hidden=self.value_head is not None)
        samples = []
        for cands, s, h in zip(candidates, scores, hidden, strict=True):
            logp = torch.log_softmax(s.float() / temperature, dim=-1)  # (K,)
            choice = int(sample_from(logp[None], greedy=greedy, generator=generator)[0])
            value = float(self.values_of(h[None])[0]) if h is not None else None
            samples.append(
                ActionSample(
                    action=cands[choice],
                    valid_format=True,
                    action_ids=list(self.encode_completion(cands[choice])),
                    token_logprobs=[float(logp[choice])],
                    choice=choice,
                    value=value,
                    text=cands[choice],
                )
            )
        return samples

    def candidate_logprobs(self, prompts, candidates, *, temperature: float | None = None, reference=False):
        """``log softmax(scores / T)`` over each prompt's candidates: ``(K_i,)`` tensors, no gradient."""
        t = self.temperature if temperature is None else temperature
        self._activate()
        with self._scorer(reference) as model, torch.no_grad():
            scores, _ = self._score(model, prompts, candidates, hidden=False)
        return [torch.log_softmax(s.float() / t, dim=-1) for s in scores]

    # ----------------------------------------------------------------- the Policy interface
    def act(
        self,
        prompts: list[str],
        candidates: list[list[str]],
        *,
        greedy: bool = False,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[ActionSample]:
        """One action per prompt (no gradient, eval mode; the previous mode is restored after)."""
        if not prompts:
            return []
        self._activate()
        was_training = self.model.training
        self.eval()
        try:
            with torch.no_grad():
                if self.action_mode == "score":
                    return self._act_score(prompts, candidates, greedy, temperature, generator)
                return act_generate(self, prompts, candidates, greedy, temperature, generator)
        finally:
            self.train(was_training)

    def logprobs(
        self,
        turns: list[TurnInput],
        *,
        reference: bool = False,
        values: bool = False,
        temperature: float | None = None,
    ) -> PolicyOutput:
        """Log-probs of the taken actions at ``temperature`` (default ``self.temperature``).

        Score mode: ``logp (N, 1)`` = log softmax(scores / T)[choice], entropy exact over candidates.
        Generate mode: teacher-forced per-token ``logp (N, L)`` of ``action_ids``, entropy = mean token
        entropy. ``values=True`` adds the value head's ``(N,)`` V(s) (None when ``reference``). Gradients
        flow unless ``reference``; the module's current train/eval mode is used.
        """
        t = self.temperature if temperature is None else temperature
        want_values = values and not reference
        if want_values and self.value_head is None:
            raise ValueError("values=True needs a policy built with value_head=True")
        self._activate()
        with self._scorer(reference) as model:
            if self.action_mode == "score":
                return self._evaluate_score(model, turns, t, want_values)
            return logprobs_generate(self, model, turns, t, want_values)

    def _evaluate_score(self, model, turns, t, want_values) -> PolicyOutput:
        if any(turn.choice is None or not turn.candidates for turn in turns):
            raise ValueError("score-mode evaluate needs candidates and a choice in every turn")
        scores, hidden = self._score(
            model, [x.prompt for x in turns], [list(x.candidates) for x in turns], hidden=want_values
        )
        logps, ents = [], []
        for turn, s in zip(turns, scores, strict=True):
            logp = torch.log_softmax(s.float() / t, dim=-1)  # (K,)
            logps.append(logp[turn.choice])
            ents.append(-(logp.exp() * logp).sum())
        logp = torch.stack(logps)[:, None]  # (N, 1)
        vals = self.values_of(torch.stack(hidden)) if want_values else None  # (N,)
        return PolicyOutput(logp, torch.ones_like(logp, dtype=torch.bool), torch.stack(ents), vals)

    # ----------------------------------------------------------------- saving and loading
    def settings(self) -> dict:
        return {
            "action_mode": self.action_mode,
            "value_head": self.value_head is not None,
            "max_prompt_tokens": self.max_prompt_tokens,
            "max_new_tokens": self.max_new_tokens,
            "micro_batch": self.micro_batch,
            "temperature": self.temperature,
        }

    def save_pretrained(self, directory: str | os.PathLike, *, save_base: bool | None = None) -> None:
        """Model (LoRA: the adapter), tokenizer, value head and settings into ``directory``.

        With LoRA the base model is saved too, under ``base/``, when ``save_base`` is True, or when it is
        None and the adapter's ``base_model_name_or_path`` names neither an existing folder nor a hub id.
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        if self.is_peft:
            self._save_peft(out, save_base)
        else:
            self.model.save_pretrained(out)
        self.tokenizer.save_pretrained(out)
        if self.value_head is not None:
            torch.save(self.value_head.state_dict(), out / VALUE_HEAD_FILE)
        (out / SETTINGS_FILE).write_text(json.dumps(self.settings(), indent=2) + "\n")

    def _save_peft(self, out: Path, save_base: bool | None) -> None:
        config = self.model.peft_config[self.model.active_adapter]
        name = config.base_model_name_or_path or ""
        if name and Path(name).is_dir():
            config.base_model_name_or_path = name = str(Path(name).resolve())
        hub_id = re.fullmatch(r"[\w.-]+/[\w.-]+", name) is not None and not name.startswith((".", "/"))
        if save_base or (save_base is None and not ((name and Path(name).is_dir()) or hub_id)):
            base = copy.deepcopy(self.model).unload()  # the base modules without LoRA layers
            base.save_pretrained(out / BASE_DIR)
        self.model.save_pretrained(out)

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | os.PathLike,
        *,
        action_mode: str | None = None,
        lora=False,
        value_head: bool | None = None,
        dtype=None,
        device=None,
        gguf_file: str | None = None,
        **kwargs,
    ) -> LMPolicy:
        """Load a policy saved by :meth:`save_pretrained`, or wrap any causal LM (local path or hub id).

        ``action_mode`` / ``value_head`` default to the saved settings (else "score" / False).
        ``lora``: False, True (:func:`default_lora_config`), a ``peft.LoraConfig`` or a dict of its
        arguments; ignored when the folder already holds an adapter (it is loaded, trainable).
        ``gguf_file`` is passed to transformers (dequantised on load). Remaining keyword arguments go to
        the constructor (max_prompt_tokens, max_new_tokens, micro_batch, temperature, reference_model) or
        else to ``AutoModelForCausalLM.from_pretrained`` (``attn_implementation`` defaults to "sdpa").
        """
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = Path(name_or_path)
        saved = json.loads((path / SETTINGS_FILE).read_text()) if (path / SETTINGS_FILE).is_file() else {}
        policy_kwargs = {k: kwargs.pop(k) for k in _POLICY_KEYS if k in kwargs}
        for k in ("max_prompt_tokens", "max_new_tokens", "micro_batch", "temperature"):
            if k in saved:
                policy_kwargs.setdefault(k, saved[k])
        kwargs.setdefault("attn_implementation", "sdpa")
        if dtype is not None:
            kwargs["dtype"] = dtype
        if gguf_file is not None:
            kwargs["gguf_file"] = gguf_file
        tok_kwargs = {"gguf_file": gguf_file} if gguf_file else {}
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), **tok_kwargs)
        adapter = (path / "adapter_config.json").is_file()
        with _quiet_local_load(path):
            if adapter:
                from peft import PeftConfig, PeftModel

                base_path = path / BASE_DIR if (path / BASE_DIR).is_dir() else None
                base_path = base_path or PeftConfig.from_pretrained(str(path)).base_model_name_or_path
                base = AutoModelForCausalLM.from_pretrained(str(base_path), **kwargs)
                model = PeftModel.from_pretrained(base, str(path), is_trainable=True)
            else:
                model = AutoModelForCausalLM.from_pretrained(str(name_or_path), **kwargs)
            if gguf_file is not None:
                model.hf_quantizer = None  # dequantised weights; lets save_pretrained work
        if device is not None:
            model.to(device)
        if lora is not False and lora is not None and not adapter:
            from peft import LoraConfig, get_peft_model

            config = lora if isinstance(lora, LoraConfig) else None
            if config is None:
                config = default_lora_config(model, **(lora if isinstance(lora, dict) else {}))
            model = get_peft_model(model, config)
        if value_head is None:
            value_head = bool(saved.get("value_head", False))
        policy = cls(
            model,
            tokenizer,
            action_mode=action_mode or saved.get("action_mode", "score"),
            value_head=value_head,
            **policy_kwargs,
        )
        if value_head and (path / VALUE_HEAD_FILE).is_file():
            state = torch.load(path / VALUE_HEAD_FILE, map_location=policy.device, weights_only=True)
            policy.value_head.load_state_dict(state)
        return policy
