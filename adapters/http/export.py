"""GET /v1/conversations/{key}/export: a conversation in a format its importer reads
back (`convlog export --format`); `convlog-jsonl` so far: `convlog record` lines, as
`POST .../events` takes them back (docs/importers.md#export)."""

from __future__ import annotations

import msgspec

import convlog
from convlog.http.endpoint import Call, Endpoint, Param
from convlog.services.export_jsonl import FORMATS, conversation_lines

KEY = "/v1/conversations/{key}"


class ExportOut(msgspec.Struct, frozen=True, kw_only=True):
    """The conversation in `format`: for `convlog-jsonl`, `data` is its record lines
    (one JSON document a line), which `convlog record` reads back."""

    key: str
    format: str
    data: str


def _export(log: convlog.ConversationLog, key: str, fmt: str) -> ExportOut:
    return ExportOut(key=key, format=fmt,
                     data=conversation_lines(log.events(key)).decode())


async def export(call: Call) -> ExportOut:
    key = await call.readable()
    fmt = call.q_str("format", FORMATS[0], FORMATS) or FORMATS[0]
    await call.run(call.log.get, key)  # an unknown conversation: 404
    return await call.run(_export, call.log, key, fmt)


ENDPOINTS = [
    Endpoint("GET", KEY + "/export", export,
             "The conversation in a format its importer reads back (convlog-jsonl: "
             "convlog record lines)",
             operation_id="exportConversation", answer=ExportOut,
             query=(Param("format", {"type": "string", "enum": list(FORMATS),
                                     "default": FORMATS[0]}, "the format"),)),
]
