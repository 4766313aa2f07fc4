"""The one normalisation of action text, shared by the household and shop environments.

An action is compared with the environment's commands as :func:`normalize_action` returns it:

- **ASCII only.** Every admissible action is printable ASCII, so an action holding any other
  character is invalid - it is never matched to a valid one. This rules out look-alikes and
  separators that Unicode-aware case folding or splitting would turn into a command: the Kelvin sign
  ``\\u212a`` (lowercases to ``k``), the dotless ``\\u0131`` and dotted ``\\u0130`` i, NBSP, the
  spaces ``\\u2000``-``\\u200a``, ``\\u2028``, ``\\u3000``, full-width letters, superscripts (``²``).
- **No control characters** but tab, newline and carriage return: ``\\x00``-``\\x08``, ``\\x0b``,
  ``\\x0c``, ``\\x0e``-``\\x1f`` (the ASCII separators ``\\x1c``-``\\x1f``, which Python's
  ``str.split`` takes for whitespace) and ``\\x7f`` make the action invalid.
- Then **case and whitespace are ignored**: ASCII letters are lowercased, runs of spaces, tabs,
  newlines and carriage returns become one space, and the ends are stripped.

``"  Go to\\tCabinet 1 "`` -> ``"go to cabinet 1"``; ``"loo\\u212a"``, ``"go\\x1cto cabinet 1"`` -> None.

Admissible actions are already in this form, so the normalisation changes no valid action's text and
no observation (and so no warm start's key). ``detour`` applies it too, and the generate-mode parser
(:mod:`rspo.core.policies.parser`) lowercases only ASCII letters and splits only on ASCII whitespace, so
that no look-alike folds into an admissible action there either.
"""

from __future__ import annotations

import re

#: characters an action may hold: printable ASCII, tab, newline, carriage return
_ALLOWED = re.compile(r"[\x20-\x7e\t\n\r]*")


def normalize_action(action: str) -> str | None:
    """``action`` lowercased, whitespace runs collapsed to one space and stripped; None when it holds a
    character outside printable ASCII (besides tab, newline, carriage return): such an action is invalid."""
    if not isinstance(action, str) or not _ALLOWED.fullmatch(action):
        return None
    return " ".join(action.lower().split())
