"""The one conversation every writer writes, and the facts a reader gives back.

Three turns of a weather desk, each written by a new process of its writer where the
writer has processes (a restart between turns), so that an agent numbering its tool
calls per process reuses `call-1`:

1. (system prompt) a user's question with an image; the agent calls
   `fetch_weather(Oslo)` as `call-1`, gets "21C clear" and answers, with usage;
   the conversation is titled "Weather desk";
2. after a restart: "And tomorrow?"; `call-1` again (a reused id), "18C rain", an
   answer with usage;
3. after a restart: "And Sunday?"; a call whose result is lost (the process died).

A reader's output is reduced to `Fact`s in one vocabulary, so a cell compares like
with like: the dialogue facts in order, the others (usage, title, system prompt) as
a sorted list. What a reader may normalise, and what a writer or a reader cannot
carry, is in tests/fidelity/rules.py, and nowhere else.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

SYSTEM = "You are the weather desk. Answer in one line."
TITLE = "Weather desk"
ASK = ["What's the weather in Oslo? Here is my window:", "And tomorrow?", "And Sunday?"]
ARGS = [{"city": "Oslo"}, {"city": "Oslo", "day": "tomorrow"}, {"city": "Oslo", "day": "sunday"}]
RESULTS = ["21C clear", "18C rain"]
ANSWERS = ["It is 21C and clear in Oslo.", "Rain tomorrow, 18C."]
USAGE = [(120, 9), (200, 7)]
TOOL = "fetch_weather"
PNG = bytes(range(64))
"""The image's bytes (inline data on surfaces that send bytes)."""
PNG_B64 = base64.b64encode(PNG).decode()
PNG_URL = "https://example.com/window.png"
"""The image by URL (on surfaces that send a reference)."""
PNG_DATA_URL = f"data:image/png;base64,{PNG_B64}"
"""The image inline, as OpenAI's APIs take it."""

DIALOGUE = ("user", "image", "call", "result", "lost", "assistant")
META = ("usage", "title", "system")


@dataclass(frozen=True, order=True)
class Fact:
    """One thing a conversation holds, as any reader can say it: `kind` is one of
    DIALOGUE or META, `value` its text (a call: `name {args}` with the arguments as
    canonical JSON; a usage: `input/output`; an image: its URL, or `sha256:<hex>` of
    its bytes; a lost result: the tool's name)."""

    kind: str
    value: str


def args_text(arguments: Any) -> str:
    """Arguments as canonical JSON, whatever shape a reader gives them in."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return str(arguments)
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def call(name: str, arguments: Any) -> Fact:
    return Fact("call", f"{name} {args_text(arguments)}")


def lost(name: str) -> Fact:
    """A call whose result was lost, answered by the pairing rule's marked repair."""
    return Fact("lost", name)


def image_of_bytes(data: bytes | str) -> Fact:
    raw = base64.b64decode(data) if isinstance(data, str) else data
    return Fact("image", f"sha256:{hashlib.sha256(raw).hexdigest()}")


def image_of_url(url: str) -> Fact:
    """An image by URL; a ``data:`` URL is its bytes (`image-by-reference`)."""
    head, _, data = url.partition(",")
    if url.startswith("data:") and head.endswith(";base64"):
        return image_of_bytes(data)
    return Fact("image", url)


@dataclass
class Facts:
    """What a reader gave back: its dialogue in order, and its other facts."""

    dialogue: list[Fact] = field(default_factory=list)
    meta: list[Fact] = field(default_factory=list)

    def add(self, fact: Fact) -> None:
        if fact.kind == "result":
            from tests.fidelity.rules import result_value

            fact = Fact("result", result_value(fact.value))
        (self.dialogue if fact.kind in DIALOGUE else self.meta).append(fact)

    def text(self, role: str, text: str | None) -> None:
        if text and text.strip():
            self.add(Fact(role, text.strip()))

    def sorted(self) -> Facts:
        return Facts(list(self.dialogue), sorted(set(self.meta)))


def sent(image: Fact, *, system: bool = True, title: bool = True,
         usage: bool = True) -> Facts:
    """The conversation as a writer sent it (`image`: how its image is named)."""
    facts = Facts()
    for turn in range(3):
        facts.add(Fact("user", ASK[turn]))
        if turn == 0:
            facts.add(image)
        facts.add(call(TOOL, ARGS[turn]))
        if turn < 2:
            facts.add(Fact("result", RESULTS[turn]))
            facts.add(Fact("assistant", ANSWERS[turn]))
            if usage:
                facts.add(Fact("usage", f"{USAGE[turn][0]}/{USAGE[turn][1]}"))
        else:
            facts.add(lost(TOOL))
    if system:
        facts.add(Fact("system", SYSTEM))
    if title:
        facts.add(Fact("title", TITLE))
    return facts.sorted()
