"""The host's system prompt in a prompt: the preamble.

Desktop hosts (an Electron app driving an agent over ACP) send, in the FIRST prompt
of every agent session they open (`session/new`, and again after `session/load` or
`session/resume`, e.g. after a restart), their system prompt as a leading text
block, then the user's text: ``[system prompt, user text]``. Later prompts carry only
the user's text. A system prompt is not dialogue: the host rebuilds it and it
changes, so convlog never stores it as a message and never injects it as history.
It is recorded as what it is, the preamble (`preamble_sent`): the agent's view shows
it, the user's view and the injected history do not, and nothing a host sends is
dropped from the log (issue 41).

Which blocks are the preamble, in this order:

1. Marked blocks, in any prompt: a content block whose annotations say it is for the
   model only (``"annotations": {"audience": ["assistant"]}``), or that carries
   ``"_meta": {"convlog/preamble": true}``. A host that marks its system prompt is
   never guessed at.
2. Without a marker, ``--preamble first-blocks`` (the default) guesses, in the first
   prompt after the client opened or reopened a session only, and takes at most ONE
   block: the first, when it is text and another text block follows it. A first
   prompt of a single text block has no preamble. A host whose first prompt holds
   two blocks of the user's own loses nothing either: the first is recorded, as the
   preamble; such a host marks its blocks, or runs with ``--preamble none``.
3. ``--preamble none``: no guess. Every block the host did not mark is the user's
   message, recorded as the user's words, a system prompt sent unmarked included
   (for hosts that send none, or mark theirs).

The proxy forwards the prompt as the host sent it, the injected history (when there
is one) put before the first block that is the user's: system -> history ->
question, the history exactly once.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, NamedTuple

from convlog.domain.events import PreambleHow, PreambleSent

MODES = ("first-blocks", "none")
DEFAULT_MODE = "first-blocks"
MARK = "convlog/preamble"
"""The `_meta` key that marks a content block as the host's preamble."""


def is_marked(block: Any) -> bool:
    """Whether the host marked `block` as meant for the model and not the user."""
    if not isinstance(block, dict):
        return False
    meta = block.get("_meta")
    if isinstance(meta, dict) and meta.get(MARK) is True:
        return True
    annotations = block.get("annotations")
    audience = annotations.get("audience") if isinstance(annotations, dict) else None
    return isinstance(audience, list) and "assistant" in audience and "user" not in audience


class Split(NamedTuple):
    preamble: list[Any]
    user: list[Any]
    how: PreambleHow | None
    """``marked`` or ``guessed`` (None: no preamble)."""
    first_user: int
    """Where the user's blocks start in the prompt: injected history goes there."""


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text"


def split(prompt: list[Any], mode: str, opened: bool = True) -> Split:
    """The preamble and the user's blocks of `prompt` under `mode`; `opened`: the
    client opened or reopened the session and has not prompted it since."""
    marked = [is_marked(b) for b in prompt]
    if any(marked):
        first = next((i for i, m in enumerate(marked) if not m), len(prompt))
        return Split([b for b, m in zip(prompt, marked, strict=True) if m],
                     [b for b, m in zip(prompt, marked, strict=True) if not m], "marked",
                     first)
    if mode == "first-blocks" and opened and prompt and _is_text(prompt[0]) \
            and any(_is_text(b) for b in prompt[1:]):
        return Split([prompt[0]], list(prompt[1:]), "guessed", 1)
    return Split([], list(prompt), None, 0)


def forwarded(prompt: list[Any], cut: Split, history: str | None,
              last: list[Any] | None) -> tuple[list[Any], list[Any], PreambleHow | None]:
    """(the prompt to forward, the preamble the agent gets with it, how it was found).
    `history`: text to inject (once); `last`: the session's last preamble, sent again
    in front of the history when the host sent none (a new agent process took over,
    which the host does not know of)."""
    if history is None:
        return prompt, cut.preamble, cut.how
    block = {"type": "text", "text": history}
    if cut.preamble:
        at = cut.first_user
        return [*prompt[:at], block, *prompt[at:]], cut.preamble, cut.how
    if last:
        return [*last, block, *prompt], last, "resent"
    return [block, *prompt], [], None


def sent(blocks: list[Any], how: PreambleHow | None,
         native_session_id: str | None) -> PreambleSent | None:
    """The record of a preamble the agent received (None: there was none)."""
    if not blocks or how is None:
        return None
    return PreambleSent(at=datetime.now(UTC), text=preamble_text(blocks), how=how,
                        blocks=[b for b in blocks if isinstance(b, dict)],
                        native_session_id=native_session_id)


def preamble_text(blocks: list[Any]) -> str:
    """The readable text of preamble blocks (their text blocks, one per paragraph)."""
    return "\n\n".join(b["text"] for b in blocks
                       if _is_text(b) and isinstance(b.get("text"), str))


def fingerprint(preamble: list[Any]) -> dict[str, Any]:
    """What the proxy's log lines say of a preamble: its length and a hash (to see that
    the host's system prompt changed, never what it said, on stderr)."""
    text = preamble_text(preamble)
    return {"blocks": len(preamble), "chars": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}
