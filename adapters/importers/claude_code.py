"""Claude Code transcripts: ``~/.claude/projects/<project>/<session>.jsonl`` and the
subagent (sidechain) transcripts beside them.

Each line is a record. ``user`` and ``assistant`` records become messages, their
``uuid`` the message id (so a re-import, or a grown file, adds only new lines);
``summary`` records give the conversation its title; every other type is skipped and
counted. Claude Code writes ONE line per content block of an API response and
repeats the response's usage on each: the response id (``message.id``, else
``requestId``) goes on every message, so that usage is counted once. The session id
is the key (``claude-code:<sessionId>``), a sidechain's key adds its agent
(``claude-code:<sessionId>:agent-<agentId>``); ``cwd`` is the workspace; model, git
branch and Claude Code version are metadata. Images are kept as references
(``sha256:...``, media type, size), never as bytes.

A record that cannot be read fails its whole file (the conversations of a file are
only known once it is read), located at ``file:line``. Followed as it grows
(`follow`, for ``convlog watch``), a response's lines are handed over once it ended:
its line with a stop reason, the next user record, or a file gone quiet.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from convlog.domain.content import AnyPart, ToolResultPart, Usage
from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message
from convlog.importers.files import FileImporter
from convlog.importers.follow import follow_lines
from convlog.importers.lines import decode, located, read_lines
from convlog.services.anthropic_blocks import ApiUsage, Block, to_part
from convlog.services.importing import Followed, ImportedConversation, Position


class Body(msgspec.Struct):
    role: str = ""
    content: str | list[Block] = ""
    id: str | None = None
    model: str | None = None
    usage: ApiUsage | None = None
    stop_reason: str | None = None


class Record(msgspec.Struct):
    """The fields convlog reads; every other field of a record is ignored. `message`
    stays raw until the record's type says it is a message."""

    type: str = "(none)"
    uuid: str | None = None
    sessionId: str | None = None  # Claude Code's spelling
    isSidechain: bool | None = False
    agentId: str | None = None
    cwd: str | None = None
    gitBranch: str | None = None
    version: str | None = None
    timestamp: datetime | None = None
    requestId: str | None = None
    message: msgspec.Raw = msgspec.Raw()
    summary: str | None = None


class _Conversation:
    """A conversation being read: its messages so far, and what is known about it."""

    def __init__(self, key: str, source: str, session: str | None, sidechain: bool):
        self.key, self.source = key, source
        self.messages: list[Message] = []
        self.origins: list[str] = []
        self.ids: set[str] = set()
        self.metadata: dict[str, Any] = {"source": "claude-code"}
        if session:
            self.metadata["session_id"] = session
        if sidechain:
            self.metadata["sidechain"] = True
        self.workspace: str | None = None

    def note(self, record: Record) -> None:
        self.workspace = self.workspace or record.cwd
        for name, value in (("git_branch", record.gitBranch), ("version", record.version)):
            if value and name not in self.metadata:
                self.metadata[name] = value

    def done(self, title: str | None, summaries: list[str]) -> ImportedConversation:
        final_usage(self.messages)
        metadata = {**self.metadata, "summaries": summaries} if summaries else self.metadata
        return ImportedConversation(
            key=self.key, messages=self.messages, origins=self.origins, source=self.source,
            agent="claude-code", title=title, workspace=self.workspace, metadata=metadata)


class _Reader:
    """One file being read, line by line (`convlog.importers.follow.LineReader`)."""

    def __init__(self, path: Path):
        self.path = path
        self.convs: dict[str, _Conversation] = {}
        self.main: _Conversation | None = None
        self.summaries: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.responding = False  # the last record was an assistant's, and may get more

    def line(self, number: int, raw: bytes, where: str) -> None:
        record = _record(raw, where)
        if record.type == "summary" and record.summary:
            self.summaries.append(record.summary)
            return
        if record.type not in ("user", "assistant"):
            self.skipped[record.type] += 1
            return
        conv = self._conversation(record)
        if not conv.metadata.get("sidechain"):
            self.main = self.main or conv
        conv.note(record)
        message_id = record.uuid or f"line-{number}"
        if message_id in conv.ids:
            self.skipped["duplicate record"] += 1
            return
        try:
            body = decode(record.message, Body, where)
            message = _message(record, message_id, body, self.skipped)
        except InvalidInput as exc:
            raise located(exc, where) from None
        # A response is written a line per content block, its usage growing; the line
        # with a stop reason is its last (older versions leave it empty: then the next
        # user record, or a quiet file, ends it).
        self.responding = record.type == "assistant" and body.stop_reason is None
        if message is None:
            return
        if "model" not in conv.metadata and message.model:
            conv.metadata["model"] = message.model
        conv.ids.add(message_id)
        conv.messages.append(message)
        conv.origins.append(where)

    def _conversation(self, record: Record) -> _Conversation:
        session = record.sessionId or self.path.stem
        key = f"claude-code:{session}"
        sidechain = bool(record.isSidechain)
        if sidechain:
            agent = f"agent-{record.agentId}" if record.agentId else (
                self.path.stem if self.path.stem.startswith("agent-") else "sidechain")
            key = f"{key}:{agent}"
        conv = self.convs.get(key)
        if conv is None:
            conv = self.convs[key] = _Conversation(key, str(self.path), record.sessionId,
                                                   sidechain)
        return conv

    def safe(self) -> bool:
        return not self.responding

    def checkpoint(self) -> bytes:
        return b""  # every record names its session: nothing to carry over

    def mark(self) -> dict[str, int]:
        return {key: len(conv.messages) for key, conv in self.convs.items()}

    def done(self, mark: object | None = None) -> list[ImportedConversation]:
        if isinstance(mark, dict):
            for key in [k for k in self.convs if k not in mark]:
                del self.convs[key]
            for key, conv in self.convs.items():
                del conv.messages[mark[key]:], conv.origins[mark[key]:]
        main, summaries = self.main, self.summaries
        out = [c.done(summaries[-1] if c is main and summaries else None,
                      summaries if c is main else []) for c in self.convs.values()]
        if out:
            out[0].skipped.update(self.skipped)
        elif self.skipped or summaries:  # lines of only non-message records
            out.append(ImportedConversation(
                key=f"claude-code:{self.path.stem}", messages=[], origins=[],
                source=str(self.path), skipped=self.skipped))
        return out


class ClaudeCodeImporter(FileImporter):
    name = "claude-code"
    pattern = "*.jsonl"

    def home(self) -> Path:
        """``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``."""
        root = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
        return Path(root).expanduser() / "projects"

    def read(self, path: Path) -> list[ImportedConversation]:
        reader = _Reader(path)
        for number, raw in read_lines(path, self.max_line_bytes):
            reader.line(number, raw, f"{path}:{number}")
        return reader.done()

    def follow(self, path: Path, start: Position, *, final: bool = False,
               max_bytes: int = 8 * 2**20) -> Followed:
        return follow_lines(path, start, _Reader(path), max_line_bytes=self.max_line_bytes,
                            max_bytes=max_bytes, final=final)


class _Type(msgspec.Struct):
    type: str = "(none)"


_READ = ("user", "assistant", "summary")


def _record(raw: bytes, where: str) -> Record:
    """The record on a line. A record of a type convlog does not read is skipped even
    when its other fields have shapes convlog does not expect (a future version's)."""
    try:
        return decode(raw, Record, where)
    except InvalidInput as exc:
        if exc.field is None:  # not JSON at all: an error whatever the type
            raise
        kind = decode(raw, _Type, where).type
        if kind in _READ:
            raise
        return Record(type=kind)


def final_usage(messages: list[Message]) -> None:
    """Give every record of one response the response's final usage. Claude Code
    writes a line per content block while it streams, and an early line can carry the
    usage as it stood then (fewer output tokens); the largest count of each kind is
    the response's. The views then count it once, on the first record. (A response
    cut by the end of a file that is still being written keeps the usage it had
    then: its later lines, imported when the file grew, are not counted again.)"""
    best: dict[str, Usage] = {}
    for m in messages:
        if m.response_id and m.usage is not None:
            old = best.get(m.response_id)
            best[m.response_id] = m.usage if old is None else Usage(**{
                name: max(getattr(old, name), getattr(m.usage, name))
                for name in Usage.__struct_fields__})
    for i, m in enumerate(messages):
        if m.response_id in best and m.usage != best[m.response_id]:
            messages[i] = msgspec.structs.replace(m, usage=best[m.response_id])


def _message(record: Record, message_id: str, body: Body, skipped: Counter[str]
             ) -> Message | None:
    content: str | list[AnyPart]
    if isinstance(body.content, str):
        content = body.content
    else:
        content = [part for block in body.content
                   if (part := to_part(block, skipped)) is not None]
    if not content:
        skipped[f"empty {record.type}"] += 1
        return None
    results = [p for p in content if isinstance(p, ToolResultPart)] if isinstance(
        content, list) else []
    role = "tool" if results else record.type
    usage = body.usage
    return Message(
        id=message_id, role=role, content=content, model=body.model,
        tool_call_id=results[0].tool_use_id if len(results) == 1 else None,
        usage=Usage(input_tokens=usage.input_tokens or 0,
                    output_tokens=usage.output_tokens or 0,
                    cache_read_tokens=usage.cache_read_input_tokens or 0,
                    cache_write_tokens=usage.cache_creation_input_tokens or 0)
        if usage is not None and record.type == "assistant" else None,
        response_id=(body.id or record.requestId) if record.type == "assistant" else None,
        created_at=record.timestamp)
