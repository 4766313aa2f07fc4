"""The pure text -> action parser of generate mode (docs/design.md §5; STYLE: parsers are pure functions).

A model asked to answer ``<action>...</action>`` writes all kinds of things: reasoning before the tag, two
tags, an unclosed tag, quotes, a trailing period, "Action:" prefixes, odd capitalisation. The parser turns
any string into ``(action, valid)`` and never raises:

1. extract: the content of the last non-empty ``<action>...</action>`` (a missing closing tag is
   tolerated: the content then runs to the end of the line); with a closing tag but no opening tag, the
   last line before the first closing tag; with no tags at all, the first non-empty line;
2. clean: drop leftover tags, an ``Action:`` prefix, surrounding quotes or backticks and trailing
   periods; collapse whitespace;
3. decide: with candidates, the action is the candidate equal to it case-insensitively (after the same
   cleaning) and ``valid=True``; no match gives ``(text, False)`` - the environment then answers
   "Nothing happens." and the step counts. Without candidates, ``valid`` means a non-empty action of at
   most ``MAX_ACTION_CHARS`` characters; the environment decides the rest.

Text with no letter or digit is garbage: ``("", False)``. Returned actions are at most
``MAX_ACTION_CHARS`` characters long (longer text is cut and invalid).
"""

from __future__ import annotations

import re

MAX_ACTION_CHARS = 200
_OPEN = re.compile(r"<\s*action\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*action\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<\s*/?\s*action\s*/?\s*>", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:next\s+)?action\s*[:=]\s*", re.IGNORECASE)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019*"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def _extract(text: str) -> str:
    """The raw action text before cleaning (step 1)."""
    opens = list(_OPEN.finditer(text))
    if opens:
        # Contents of every opening tag, up to the next tag of either kind; the last non-empty one wins.
        for m in reversed(opens):
            rest = text[m.end() :]
            nxt = _ANY_TAG.search(rest)
            content = rest[: nxt.start()] if nxt else rest
            if nxt is None or not _CLOSE.match(rest, nxt.start()):
                content = _first_line(content)  # unclosed: up to the end of the line
            if _clean(content):
                return content
        return ""
    close = _CLOSE.search(text)
    if close:  # "go to fridge 1</action>": the last line before the closing tag
        lines = [ln for ln in text[: close.start()].splitlines() if ln.strip()]
        return lines[-1] if lines else ""
    return _first_line(text)


_WS = " \t\n\r\f\v"  # ASCII whitespace: a Unicode space is part of the action (and makes it invalid)
_ASCII_WORDS = re.compile(f"[^{_WS}]+")


def _clean(text: str) -> str:
    """Step 2: tags, prefix, quotes and trailing periods removed, whitespace collapsed."""
    text = " ".join(_ASCII_WORDS.findall(_ANY_TAG.sub(" ", text)))  # ASCII whitespace only: not NBSP, \x1c
    previous = None
    while text != previous:
        previous = text
        text = _PREFIX.sub("", text)
        text = text.strip(_WS).strip(_QUOTES).strip(_WS)
        text = text.rstrip(".").strip(_WS)
    return text


def normalize_action(text: str) -> str:
    """The form actions are compared in: cleaned, ASCII letters lowercased. Other characters are kept
    as they are, so a look-alike (the Kelvin sign, a dotless i) never folds into an admissible action,
    as in the environments (:mod:`rspo.core.envs.text`)."""
    return "".join(ch.lower() if ch.isascii() else ch for ch in _clean(text))


def parse_action(text: str, candidates: list[str] | None = None) -> tuple[str, bool]:
    """Parse a model's raw output into ``(action, valid)``; never raises.

    Args:
        text: the generated text (anything; non-strings give ``("", False)``).
        candidates: the admissible actions, or None to let the environment judge validity.

    Returns:
        ``(candidate, True)`` on a case-insensitive match; otherwise the cleaned text (at most
        ``MAX_ACTION_CHARS`` characters) and whether it is a plausible action (only without candidates).
    """
    if not isinstance(text, str):
        return "", False
    try:
        action = _clean(_extract(text))
    except Exception:  # pragma: no cover - regexes on str do not raise; the contract is "never raises"
        return "", False
    if not any(ch.isalnum() for ch in action):
        return "", False
    if candidates:
        key = normalize_action(action)
        for cand in candidates:
            if isinstance(cand, str) and normalize_action(cand) == key:
                return cand, True
        return action[:MAX_ACTION_CHARS], False
    if len(action) > MAX_ACTION_CHARS:
        return action[:MAX_ACTION_CHARS], False
    return action, True
