"""One prompt turn, assembled from the wire into the two messages convlog records.

A turn starts with the client's `session/prompt` (its content blocks become the user
message) and collects the agent's streamed `session/update` notifications until the
prompt is answered: text chunks, thought chunks and tool calls (with their updates)
become the parts of ONE assistant message, in the order they arrived; a
`usage_update` gives the turn's cost, the prompt response's `usage` its tokens.

`close()` hands the messages out exactly once, whatever ends the turn first (the
agent's answer, a crash, the proxy shutting down), so a turn is never recorded twice
and never as half a batch. A turn that did not end normally says so in a last text
part, ``[turn cancelled]`` or ``[turn cut off: ...]``: the record shows what the user
saw, and a model that is given this history later sees that the turn was cut.

Frames are read as plain dicts (the wire format of ACP's schema), defensively: an
update this module does not know, or one with unexpected types, is skipped for the
record and still forwarded by the proxy.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import convlog
from convlog.acp.native import KEY, Kept, prompt_updates
from convlog.domain.content import AnyPart, Content
from convlog.domain.events import PreambleSent
from convlog.services.images import inline_image, url_image

MAX_TOOL_TEXT = 20_000
"""Characters of a tool's output kept in the record (the agent's output can be huge)."""


def image_part(block: dict[str, Any]) -> convlog.ImagePart:
    """An image block by reference: its URI, else the SHA-256 and size of its inline
    data (as the Anthropic and ADK mappings make it; the block itself, bytes and all,
    is kept with the turn for `session/load`)."""
    uri = block.get("uri")
    mime = block.get("mimeType") if isinstance(block.get("mimeType"), str) else None
    if isinstance(uri, str) and uri:
        return url_image(uri, mime)
    data = block.get("data")
    found = inline_image(data, mime) if isinstance(data, str) else None
    return found or convlog.ImagePart(ref=f"inline:{mime or 'image'}", media_type=mime)


def block_parts(block: Any) -> list[AnyPart]:
    """The record of one ACP content block (text, image, audio, resource links)."""
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return [convlog.TextPart(text=block["text"])]
    if kind == "image":
        return [image_part(block)]
    if kind == "audio":
        return [convlog.TextPart(text="[audio]")]
    if kind == "resource_link":
        return [convlog.TextPart(text=f"[resource: {block.get('uri', '')}]")]
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        head = f"[resource: {resource.get('uri', '')}]"
        text = resource.get("text")
        return [convlog.TextPart(text=f"{head}\n{text}" if isinstance(text, str) else head)]
    return []


def tool_output_text(update: dict[str, Any]) -> str | None:
    """A tool call's output as text: its text content, else its raw output as JSON."""
    pieces: list[str] = []
    for item in update.get("content") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "content":
            pieces.extend(p.text for p in block_parts(item.get("content"))
                          if isinstance(p, convlog.TextPart))
        elif item.get("type") == "diff":
            pieces.append(f"[diff: {item.get('path', '')}]")
        elif item.get("type") == "terminal":
            pieces.append(f"[terminal: {item.get('terminalId', '')}]")
    if not pieces and update.get("rawOutput") is not None:
        pieces.append(json.dumps(update["rawOutput"], ensure_ascii=False, default=str))
    if not pieces:
        return None
    text = "\n".join(pieces)
    return text if len(text) <= MAX_TOOL_TEXT else text[:MAX_TOOL_TEXT] + " ... [truncated]"


class _Run:
    """Consecutive streamed chunks of one kind (text or thinking), kept as a list and
    joined once when the turn closes: joining on every chunk copied everything so far,
    so a long answer in small chunks cost quadratic time and memory."""

    def __init__(self, thinking: bool, text: str) -> None:
        self.thinking = thinking
        self.chunks = [text]

    def part(self) -> AnyPart:
        text = "".join(self.chunks)
        return convlog.ThinkingPart(text=text) if self.thinking else convlog.TextPart(text=text)


@dataclass
class _Tool:
    id: str
    name: str = "tool"
    arguments: str = "{}"
    status: str | None = None
    output: str | None = None

    def update(self, update: dict[str, Any]) -> None:
        title, kind = update.get("title"), update.get("kind")
        if isinstance(title, str) and title:
            self.name = title
        elif isinstance(kind, str) and self.name == "tool":
            self.name = kind
        if "rawInput" in update and update["rawInput"] is not None:
            self.arguments = json.dumps(update["rawInput"], ensure_ascii=False, default=str)
        if isinstance(update.get("status"), str):
            self.status = update["status"]
        output = tool_output_text(update)
        if output is not None:
            self.output = output

    def parts(self) -> list[AnyPart]:
        parts: list[AnyPart] = [convlog.ToolUsePart(id=self.id, name=self.name,
                                                    arguments=self.arguments)]
        if self.output is not None or self.status in ("completed", "failed"):
            parts.append(convlog.ToolResultPart(
                tool_use_id=self.id, content=self.output or self.status or "",
                is_error=self.status == "failed"))
        return parts


@dataclass
class Turn:
    """A prompt in flight on one session, and what the agent has streamed for it."""

    prompt: list[Any]
    agent: str | None = None
    model: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    _pieces: list[AnyPart | _Tool | _Run] = field(default_factory=list)
    _tools: dict[str, _Tool] = field(default_factory=dict)
    cost_usd: Decimal | None = None
    window: tuple[int, int] | None = None
    """The last context window (`used`, `size` tokens) a `usage_update` reported."""
    closed: bool = False
    kept: Kept = field(default_factory=Kept)
    """Every update of the turn as the agent sent it (convlog.acp.native)."""
    preamble: PreambleSent | None = None
    """What the agent got for the model only with the prompt (recorded before it)."""

    def add(self, update: Any, cost_base: Decimal | None) -> Decimal | None:
        """Take one `session/update` payload; returns the session's cumulative USD cost
        when it was a `usage_update` with one (the proxy keeps it per session)."""
        if not isinstance(update, dict) or self.closed:
            return None
        self.kept.add(update)
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            for part in block_parts(update.get("content")):
                self._append(part)
        elif kind == "agent_thought_chunk":
            for part in block_parts(update.get("content")):
                if isinstance(part, convlog.TextPart):
                    self._append(convlog.ThinkingPart(text=part.text))
        elif kind in ("tool_call", "tool_call_update"):
            tool_id = update.get("toolCallId")
            if isinstance(tool_id, str) and tool_id:
                tool = self._tools.get(tool_id)
                if tool is None:
                    tool = self._tools[tool_id] = _Tool(tool_id)
                    self._pieces.append(tool)
                tool.update(update)
        elif kind == "usage_update":
            self.window = window_of(update) or self.window
            return self._usage(update.get("cost"), cost_base)
        return None

    def _usage(self, cost: Any, base: Decimal | None) -> Decimal | None:
        if not isinstance(cost, dict) or cost.get("currency") != "USD":
            return None
        try:
            total = Decimal(str(cost.get("amount")))
        except (InvalidOperation, ValueError):
            return None
        if not total.is_finite() or total < 0:
            return None
        if base is not None and total >= base:
            self.cost_usd = (self.cost_usd or Decimal(0)) + (total - base)
        return total

    def _append(self, part: AnyPart) -> None:
        last = self._pieces[-1] if self._pieces else None
        if isinstance(part, (convlog.TextPart, convlog.ThinkingPart)):
            thinking = isinstance(part, convlog.ThinkingPart)
            if isinstance(last, _Run) and last.thinking == thinking:
                last.chunks.append(part.text)
            else:
                self._pieces.append(_Run(thinking, part.text))
        else:
            self._pieces.append(part)

    def close(self, stop: str, usage: Any = None) -> list[convlog.Message] | None:
        """The turn's messages, the first time only (None afterwards). `stop`: the
        prompt's stopReason, or why it ended without one ("cut off: ...")."""
        if self.closed:
            return None
        self.closed = True
        parts: list[AnyPart] = []
        for piece in self._pieces:
            if isinstance(piece, _Tool):
                parts.extend(piece.parts())
            elif isinstance(piece, _Run):
                parts.append(piece.part())
            else:
                parts.append(piece)
        if stop != "end_turn":
            parts.append(convlog.TextPart(text=f"[turn {stop}]"))
        user_parts = [p for block in self.prompt for p in block_parts(block)]
        user_content: Content = (
            user_parts[0].text if len(user_parts) == 1
            and isinstance(user_parts[0], convlog.TextPart) else user_parts)
        said = prompt_updates(self.prompt)
        if not parts:  # no assistant message: the user's keeps what the agent sent
            said.extend(self.kept.raw()[KEY])
        messages = [convlog.user(user_content or "", id=f"{self.id}:user", raw={KEY: said})]
        if parts:
            content: Content = (
                parts[0].text if len(parts) == 1 and isinstance(parts[0], convlog.TextPart)
                else parts)
            messages.append(convlog.assistant(
                content, id=f"{self.id}:agent", agent=self.agent, model=self.model,
                usage=prompt_usage(usage), cost_usd=self.cost_usd, raw=self.kept.raw()))
        return messages


def window_of(update: dict[str, Any]) -> tuple[int, int] | None:
    """A `usage_update`'s context window (`used`, `size` tokens), when well formed."""
    used, size = update.get("used"), update.get("size")
    if isinstance(used, int) and isinstance(size, int) and not isinstance(used, bool) \
            and not isinstance(size, bool) and used >= 0 and size >= 0:
        return used, size
    return None


def prompt_usage(usage: Any) -> convlog.Usage | None:
    """The `usage` of a prompt response (ACP's, unstable) as convlog's, taken as reported."""
    if not isinstance(usage, dict):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0 else 0

    return convlog.Usage(input_tokens=count("inputTokens"),
                         output_tokens=count("outputTokens") + count("thoughtTokens"),
                         cache_read_tokens=count("cachedReadTokens"),
                         cache_write_tokens=count("cachedWriteTokens"))
