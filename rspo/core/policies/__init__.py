"""Policies: the interface (:mod:`.base`), the LM policy in score / generate mode (:mod:`.lm`) and the
pure action parser (:mod:`.parser`).

``import rspo.core.policies`` stays cheap: transformers and peft are imported where they are used.
"""

from rspo.core.policies.base import ACTION_MODES, ActionSample, Policy, PolicyOutput, TurnInput
from rspo.core.policies.lm import LMPolicy, default_lora_config
from rspo.core.policies.parser import normalize_action, parse_action

__all__ = [
    "ACTION_MODES",
    "ActionSample",
    "LMPolicy",
    "Policy",
    "PolicyOutput",
    "TurnInput",
    "default_lora_config",
    "normalize_action",
    "parse_action",
]
