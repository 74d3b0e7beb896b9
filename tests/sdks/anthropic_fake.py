"""An offline Anthropic Messages API for the Claude Agent SDK's bundled Claude Code: a
real HTTP server on 127.0.0.1 (`ANTHROPIC_BASE_URL` points the CLI at it) that
answers `POST /v1/messages`, streamed or not, as the API does, so the CLI runs whole
turns (tool calls included) with no network and no key.

Its answers are scripted by the last user message: a prompt containing ``use
<Tool> <json>`` makes the model call that tool once with that input; after the tool's
result it answers with text saying what it got; any other prompt gets a short text
answer. Every request body is kept (`requests`), so a test can see what the model
was sent."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5"
USAGE = {"input_tokens": 40, "output_tokens": 9, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0}


def _text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text", ""))
    return ""


def _last_user(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(the last user message's text, its tool_result blocks)."""
    for message in reversed(body.get("messages") or ()):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content, []
        blocks = [b for b in content or () if isinstance(b, dict)]
        return ("\n".join(_text(b) for b in blocks),
                [b for b in blocks if b.get("type") == "tool_result"])
    return "", []


_USE = re.compile(r"use (\w+) (\{.*\})")


@dataclass
class FakeAnthropic:
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the model's reply to `body`."""
        text, results = _last_user(body)
        if results:
            got = results[-1].get("content")
            shown = got if isinstance(got, str) else " ".join(_text(b) for b in got or ())
            return [{"type": "text", "text": f"The tool said: {shown[:200]}"}]
        found = _USE.search(text)
        if found and body.get("tools"):
            self.calls += 1
            return [{"type": "tool_use", "id": f"toolu_fake{self.calls:04d}",
                     "name": found.group(1), "input": json.loads(found.group(2))}]
        return [{"type": "text", "text": f"ok: {text[-60:]}"}]


def _events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of a streamed `message`, as the API sends them."""
    head = {**message, "content": [], "stop_reason": None,
            "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": head}
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta",
                                                    "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "input_json_delta",
                                                    "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"],
                                      "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


@contextmanager
def serving() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                       "message": self.path}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.split("?")[0].endswith("/v1/messages"):
                if self.path.split("?")[0].endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                    return
                self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                           "message": self.path}})
                return
            fake.requests.append(body)
            content = fake.answer(body)
            message = {"id": f"msg_fake{len(fake.requests):04d}", "type": "message",
                       "role": "assistant", "model": body.get("model") or MODEL,
                       "content": content, "stop_sequence": None, "usage": dict(USAGE),
                       "stop_reason": "tool_use" if content[-1]["type"] == "tool_use"
                       else "end_turn"}
            if not body.get("stream"):
                self._json(200, message)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            for name, data in _events(message):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
