"""Issue 28: Anthropic content blocks have ONE mapping to convlog parts, whether a
Claude Code transcript is imported or the Claude Agent SDK's store records an entry
(pairing needs one view of tool blocks, and images one reference)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from typing import Any

import msgspec

from convlog.domain.content import ImagePart, ToolResultPart, ToolUsePart
from convlog.integrations.claude_entries import to_message
from convlog.services.anthropic_blocks import Block, to_part

PNG = b"\x89PNG fake bytes"
BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "look"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                 "data": base64.b64encode(PNG).decode()}},
    {"type": "tool_use", "id": "tu_1", "name": "Read", "input": {"path": "a.md"}},
    {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}},
    {"type": "tool_result", "tool_use_id": "tu_0", "content": [{"type": "text", "text": "ok"}]},
]


def test_the_store_maps_blocks_as_the_importer_does() -> None:
    skipped: Counter[str] = Counter()
    texts = [json.dumps(b, separators=(",", ":")) for b in BLOCKS]  # as a file holds them
    imported = [p for p in (to_part(msgspec.json.decode(t, type=Block), skipped)
                            for t in texts) if p is not None]
    entry = {"type": "assistant", "uuid": "u1", "message": {"role": "assistant",
                                                            "content": BLOCKS}}
    stored = to_message(entry, "u1").content
    assert stored == imported
    image = next(p for p in stored if isinstance(p, ImagePart))
    assert image.ref == f"sha256:{hashlib.sha256(PNG).hexdigest()}" and image.size == len(PNG)
    # a server tool's call is answered by its own result block, never by a tool_result:
    # as a tool call it would look unanswered to pairing
    assert [p.id for p in stored if isinstance(p, ToolUsePart)] == ["tu_1"]
    assert [p.tool_use_id for p in stored if isinstance(p, ToolResultPart)] == ["tu_0"]


def test_the_store_never_refuses_an_entry_for_a_bad_block() -> None:
    entry = {"type": "user", "message": {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "data": "%%% not base64"}},
        {"type": "text", "text": 5},
        {"type": "text", "text": "still here"}]}}
    content = to_message(entry, "u2").content
    assert isinstance(content, list)
    assert [getattr(p, "text", None) for p in content][-1] == "still here"


def test_a_file_image_is_referenced_by_its_file_id() -> None:
    entry = {"type": "user", "message": {"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "file_011"}}]}}
    assert to_message(entry, "u3").content == [ImagePart(ref="file_011")]
