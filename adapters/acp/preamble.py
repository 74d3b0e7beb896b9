"""The host's system prompt in a session's first prompt: the preamble.

Desktop hosts (an Electron app driving an agent over ACP) send, in the FIRST prompt
of every agent session they open (`session/new`, and again after `session/load` or
`session/resume`, e.g. after a restart), their system prompt as leading text blocks,
then the user's text: ``[system prompt, user text]``. Later prompts carry only the
user's text. A system prompt is not dialogue: the host rebuilds it and it changes,
so convlog never stores it as a message (`Message` refuses the role "system" for the
same reason) and never injects it as history.

The rule (``--preamble first-blocks``, the default): in the first prompt after the
client opened or reopened a session, the leading text blocks BEFORE the last text
block are the preamble; the rest (the last text block and anything after it, or any
non-text block that breaks the leading run) is the user's message. A first prompt of
a single text block has no preamble. ``--preamble none`` treats every block as the
user's (for clients that send no system prompt but several text blocks).

The proxy forwards ``[preamble..., injected history, user blocks...]``: the order
system -> history -> question, the history exactly once.
"""

from __future__ import annotations

import hashlib
from typing import Any

MODES = ("first-blocks", "none")
DEFAULT_MODE = "first-blocks"


def split(prompt: list[Any], mode: str) -> tuple[list[Any], list[Any]]:
    """(preamble blocks, user blocks) of a session's first prompt under `mode`."""
    if mode != "first-blocks":
        return [], list(prompt)
    texts = [i for i, b in enumerate(prompt) if isinstance(b, dict) and b.get("type") == "text"]
    if len(texts) < 2:
        return [], list(prompt)
    last = texts[-1]
    end = 0
    while end < last and isinstance(prompt[end], dict) and prompt[end].get("type") == "text":
        end += 1
    return list(prompt[:end]), list(prompt[end:])


def fingerprint(preamble: list[Any]) -> dict[str, Any]:
    """What may be said about a preamble without keeping it: its length and a hash
    (to see that the host's system prompt changed, never what it said)."""
    text = "\n".join(b.get("text", "") for b in preamble if isinstance(b, dict))
    return {"blocks": len(preamble), "chars": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}
