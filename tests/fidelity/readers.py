"""The readers of the matrix: each reads a written conversation its own way and says
what it got as `Facts` (tests/fidelity/conversation.py).

The readers on the log are the same for every writer (the context in its three
formats, the transcript, the user's and the agent's replay views, the OTel export,
the HTML page); `native` is the writer's own surface read back its own way (ACP
`session/load`, `get_items`, `load`, `get_session`; the library's `messages()`),
given by the writer (tests/fidelity/writers.py). Each reader only translates its
output into facts: what it may normalise is said in tests/fidelity/rules.py.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import convlog
from convlog.domain.content import ImagePart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from tests.fidelity.conversation import Fact, Facts, call, image_of_bytes, lost

# the markers every rendered reader uses (convlog.projections.transcript and formats)
MARKS = re.compile(
    r"\[tool result: \[convlog: the result of tool (?P<lost>[\w.-]+) was lost[^\]]*\]\]"
    r"|\[(?:called tool|tool call) (?P<call>[\w.-]+)\((?P<args>.*?)\)\]"
    r"|\[tool result: (?P<result>.*?)\](?=\n|$)"
    r"|\[image: (?P<image>[^\]]*)\]"
    r"|\[thinking: [^\]]*\]", re.S)


def rendered(facts: Facts, role: str, text: str) -> None:
    """A message as the text readers render it: markers for calls, results, images
    and repairs, the rest its role's text. A tool message's text is its result."""
    at = 0
    for m in MARKS.finditer(text):
        _plain(facts, role, text[at:m.start()])
        if m["lost"]:
            facts.add(lost(m["lost"]))
        elif m["call"]:
            facts.add(call(m["call"], m["args"]))
        elif m["result"] is not None:
            facts.add(Fact("result", m["result"].strip()))
        elif m["image"] is not None:
            facts.add(Fact("image", m["image"].strip()))
        at = m.end()
    _plain(facts, role, text[at:])


def _plain(facts: Facts, role: str, text: str) -> None:
    text = text.strip()
    if not text:
        return
    facts.text("result" if role == "tool" else role, text)


# ------------------------------------------------------------------- the log


def messages(log: convlog.ConversationLog, key: str) -> Facts:
    """`log.messages()`: the readable messages, with the conversation's title."""
    facts = Facts()
    for m in log.messages(key):
        message_facts(facts, m)
    if log.info(key).title:
        facts.add(Fact("title", str(log.info(key).title)))
    return facts


def message_facts(facts: Facts, m: Any) -> None:
    """A stored message (`MessageAppended` or an HTTP client's message)."""
    role = m.role
    parts = [TextPart(text=m.content)] if isinstance(m.content, str) else list(m.content)
    for part in parts:
        if isinstance(part, TextPart):
            facts.text("result" if role == "tool" else role, part.text)
        elif isinstance(part, ImagePart):
            facts.add(Fact("image", part.ref))
        elif isinstance(part, ToolUsePart):
            facts.add(call(part.name, part.arguments))
        elif isinstance(part, ToolResultPart):
            facts.text("result", part.content)
        elif isinstance(part, ThinkingPart):
            pass
    for c in m.tool_calls:
        facts.add(call(c.name, c.arguments))
    if m.usage is not None and (m.usage.input_tokens or m.usage.output_tokens):
        facts.add(Fact("usage", f"{m.usage.input_tokens}/{m.usage.output_tokens}"))


def context(fmt: str) -> Callable[[convlog.ConversationLog, str], Facts]:
    def read(log: convlog.ConversationLog, key: str) -> Facts:
        found = log.context(key, format=fmt)
        facts = Facts()
        if fmt == "messages":
            for m in found.messages or ():
                rendered(facts, m["role"], m["content"])
        elif fmt == "xml":
            for role, text in re.findall(r'<message role="(\w+)"[^>]*>(.*?)</message>',
                                         found.text, re.S):
                rendered(facts, role, html.unescape(text))
        else:
            blocks = re.split(r"^\*\*(\w+)\*\* \([^)]*\):\n", found.text, flags=re.M)[1:]
            for role, body in zip(blocks[::2], blocks[1::2], strict=True):
                rendered(facts, role, "\n".join(line.removeprefix("> ").removeprefix(">")
                                                for line in body.strip().splitlines()))
        return facts
    read.__name__ = f"context_{fmt}"
    return read


def transcript(log: convlog.ConversationLog, key: str) -> Facts:
    facts = Facts()
    for line in log.transcript(key):
        if line.role != "marker":
            rendered(facts, line.role, line.text)
    return facts


def view(which: str) -> Callable[[convlog.ConversationLog, str], Facts]:
    def read(log: convlog.ConversationLog, key: str) -> Facts:
        facts = Facts()
        for entry in log.view(key, which).entries:
            if entry.kind == "message":
                rendered(facts, entry.role or "assistant", entry.text)
            elif entry.kind == "repair":
                rendered(facts, "tool", f"[tool result: {entry.text}]")
            elif entry.kind == "preamble":
                facts.add(Fact("system", entry.text.strip()))
        return facts
    read.__name__ = f"view_{which}"
    return read


def otel(log: convlog.ConversationLog, key: str, workdir: Path) -> Facts:
    """`convlog export --otel` through the OpenTelemetry SDK (an in-memory exporter
    in place of the OTLP one), with content; each turn's `invoke_agent` span."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from convlog.otel.exporter import Exporter
    from convlog.otel.sdk import Sender
    from convlog.otel.tracking import TrackingFile

    memory = InMemorySpanExporter()
    Exporter(log, TrackingFile(workdir / f"otel-{abs(hash(key))}.sqlite"),
             Sender(memory).send, "memory", with_content=True, grace=0).run()
    spans = [s for s in memory.get_finished_spans()
             if (s.attributes or {}).get("gen_ai.conversation.id") == key]
    tools = {str(a["gen_ai.tool.call.id"]): s for s in spans
             if (a := s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"}
    facts = Facts()
    roots = sorted((s for s in spans if (s.attributes or {}).get("gen_ai.operation.name")
                    == "invoke_agent"), key=lambda s: int(str((s.attributes or {})[
                        "convlog.version.first"])))
    for root in roots:
        a = dict(root.attributes or {})
        system = a.get("gen_ai.system_instructions")
        if system:
            for part in json.loads(str(system)):
                facts.text("system", part.get("content"))
        inputs = json.loads(str(a.get("gen_ai.input.messages", "[]")))
        outputs = json.loads(str(a.get("gen_ai.output.messages", "[]")))
        results = {p["id"]: p for m in inputs for p in m["parts"]
                   if p["type"] == "tool_call_response"}
        for m in inputs:
            if m["role"] == "user":
                otel_parts(facts, "user", m["parts"])
        for m in outputs:
            for p in m["parts"]:
                if p["type"] == "tool_call":
                    facts.add(call(p["name"], p.get("arguments") or {}))
                    if p["id"] in results:
                        facts.text("result", str(results[p["id"]]["response"]))
                    elif p["id"] in tools and tools[p["id"]].status.status_code.name == "ERROR":
                        facts.add(lost(p["name"]))
                else:
                    otel_parts(facts, "assistant", [p])
        if a.get("gen_ai.usage.input_tokens") or a.get("gen_ai.usage.output_tokens"):
            facts.add(Fact("usage", f"{a['gen_ai.usage.input_tokens']}/"
                                    f"{a['gen_ai.usage.output_tokens']}"))
    return facts


def otel_parts(facts: Facts, role: str, parts: list[dict[str, Any]]) -> None:
    for p in parts:
        if p["type"] == "text":
            facts.text(role, p["content"])
        elif p["type"] == "uri":
            facts.add(Fact("image", p["uri"]))
        elif p["type"] == "blob":
            facts.add(image_of_bytes(p["content"]))


def page(log: convlog.ConversationLog, key: str) -> Facts:
    """`convlog html`'s page: the data it embeds (what its script shows), read back
    out of the written HTML; the agent's view for the repairs and the preamble."""
    from convlog.html.publish import conversation_html

    text = conversation_html(log, key)
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert found, "the page embeds no data"
    data = json.loads(found.group(1))
    by_version: dict[int, list[dict[str, Any]]] = {}
    for entry in data["agent_view"]:
        if entry["kind"] != "message":
            by_version.setdefault(entry["v"], []).append(entry)
    facts = Facts()
    for entry in data["agent_view"]:
        if entry["kind"] == "preamble":
            facts.add(Fact("system", entry["text"].strip()))
    for m in data["messages"]:
        role = m["role"]
        for p in m["parts"]:
            if p["k"] == "text":
                facts.text("result" if role == "tool" else role, p["text"])
            elif p["k"] == "image":
                facts.add(Fact("image", p["ref"]))
            elif p["k"] == "tool_use":
                facts.add(call(p["name"], p["args"]))
            elif p["k"] == "tool_result":
                facts.text("result", p.get("text") or p.get("content"))
        for extra in by_version.get(m["v"], ()):
            if extra["kind"] == "repair":
                rendered(facts, "tool", f"[tool result: {extra['text']}]")
        if m["input"] or m["output"]:
            facts.add(Fact("usage", f"{m['input'] or 0}/{m['output'] or 0}"))
    if data["title"]:
        facts.add(Fact("title", data["title"]))
    return facts


LOG_READERS: dict[str, Callable[..., Facts]] = {
    "context-xml": context("xml"),
    "context-markdown": context("markdown"),
    "context-messages": context("messages"),
    "transcript": transcript,
    "view-user": view("user"),
    "view-agent": view("agent"),
    "otel": otel,
    "html": page,
}
"""Every reader of the log, by the name the matrix and the rules use."""
READERS = ["native", *LOG_READERS]
