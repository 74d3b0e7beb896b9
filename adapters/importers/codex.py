"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Each line is ``{timestamp, type, payload}``: ``session_meta`` (id, cwd, CLI version,
git) starts the conversation ``codex:<id>``; ``response_item`` payloads are Responses
API items (messages, function calls and outputs, reasoning summaries), mapped as the
`openai` importer maps them; ``turn_context`` says which model answers next;
``event_msg`` ``token_count`` events carry the usage of the last model response, put
on the last assistant message before them (rollouts that give only the running total
are counted by its difference from the previous one; a repeated count adds nothing).
The other event messages repeat what the items already say and are skipped and
counted. Rollout items have no ids, so a
message's id is its line (``line-12``): rollouts are append-only, so a grown file
adds only its new lines. Older rollouts (items without the envelope, a first line
with the session id) are read too. Followed as it grows (`follow`, for ``convlog
watch``), an assistant message is handed over with the ``token_count`` that follows
it (or once the file is quiet), and the session id, model and running total are
carried from one read to the next.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from convlog.domain.content import Usage
from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message
from convlog.importers.files import FileImporter
from convlog.importers.follow import follow_lines
from convlog.importers.lines import decode, located, read_lines
from convlog.importers.responses import ApiUsage, Item, to_message, usage
from convlog.services.importing import Followed, ImportedConversation, Position


class Line(msgspec.Struct):
    type: str | None = None
    timestamp: datetime | None = None
    payload: msgspec.Raw = msgspec.Raw()
    id: str | None = None  # the first line of an old rollout: the session id
    record_type: str | None = None


class Git(msgspec.Struct):
    branch: str | None = None
    commit_hash: str | None = None
    repository_url: str | None = None


class Meta(msgspec.Struct):
    id: str | None = None
    cwd: str | None = None
    cli_version: str | None = None
    originator: str | None = None
    model_provider: str | None = None
    git: Git | None = None


class TurnContext(msgspec.Struct):
    model: str | None = None
    cwd: str | None = None


class TokenInfo(msgspec.Struct):
    last_token_usage: ApiUsage | None = None
    total_token_usage: ApiUsage | None = None


class EventMsg(msgspec.Struct):
    type: str = ""
    info: TokenInfo | None = None


class _Kind(msgspec.Struct):
    type: str | None = None


_READ = ("session_meta", "turn_context", "response_item", "event_msg")


class _Rollout:
    """One rollout being read."""

    def __init__(self, path: Path):
        self.path = path
        self.conv = ImportedConversation(key=f"codex:{path.stem}", messages=[], origins=[],
                                         source=str(path), agent="codex",
                                         metadata={"source": "codex"})
        self.model: str | None = None
        self.unpriced_from = 0  # messages before this index already had their usage
        self.total = Usage()  # the running total of the rollout's last token count
        self.ids: set[str] = set()
        self.pending = False  # an assistant message waits for its token count

    def meta(self, meta: Meta) -> None:
        if meta.id:
            self.conv.key = f"codex:{meta.id}"
            self.conv.metadata["session_id"] = meta.id
        self.conv.workspace = self.conv.workspace or meta.cwd
        for name in ("cli_version", "originator", "model_provider"):
            if getattr(meta, name):
                self.conv.metadata[name] = getattr(meta, name)
        if meta.git and meta.git.branch:
            self.conv.metadata["git_branch"] = meta.git.branch

    def turn(self, context: TurnContext) -> None:
        self.model = context.model or self.model
        if context.model and "model" not in self.conv.metadata:
            self.conv.metadata["model"] = context.model
        self.conv.workspace = self.conv.workspace or context.cwd

    def tokens(self, event: EventMsg) -> None:
        """The usage of the last model response goes on the last assistant message
        since the previous count. Rollouts that give only the running total are
        counted by its difference from the previous total."""
        if event.info is None:
            return
        total = usage(event.info.total_token_usage) if event.info.total_token_usage else None
        last = usage(event.info.last_token_usage) if event.info.last_token_usage else None
        if (last is None or last == Usage()) and total is not None:
            last = Usage(**{name: max(getattr(total, name) - getattr(self.total, name), 0)
                            for name in Usage.__struct_fields__})
        self.total = total or self.total
        if last is None or last == Usage():
            return
        messages = self.conv.messages
        for i in range(len(messages) - 1, self.unpriced_from - 1, -1):
            if messages[i].role == "assistant":
                messages[i] = msgspec.structs.replace(messages[i], usage=last)
                self.unpriced_from = len(messages)  # a repeated count finds nothing new
                self.pending = False
                return

    def item(self, item: Item, number: int, at: datetime | None, where: str) -> None:
        message = to_message(item, f"line-{number}", self.conv.skipped, model=self.model,
                             created_at=at)
        if message is not None:
            self._add(message, where)

    def _add(self, message: Message, where: str) -> None:
        if message.id in self.ids:
            self.conv.skipped["duplicate record"] += 1
            return
        self.ids.add(message.id)
        self.conv.messages.append(message)
        self.conv.origins.append(where)
        if message.role == "assistant":
            self.pending = True

    # ------------------------------------------ a line (convlog.importers.follow)

    def line(self, number: int, raw: bytes, where: str) -> None:
        try:
            line = decode(raw, Line, where)
        except InvalidInput as exc:
            # A line of a type convlog does not read is skipped, whatever its
            # other fields look like (a newer Codex's); one it reads is an error.
            kind = decode(raw, _Kind, where).type if exc.field else None
            if kind is None or kind in _READ:
                raise
            self.conv.skipped[kind] += 1
            return
        try:
            self._line(line, raw, number, where)
        except InvalidInput as exc:
            raise located(exc, where) from None

    def _line(self, line: Line, raw: bytes, number: int, where: str) -> None:
        kind = line.type
        if not line.payload:  # an old rollout: bare items, a first line with the id
            if line.record_type or kind is None:
                if number == 1 and line.id:
                    self.meta(Meta(id=line.id))
                else:
                    self.conv.skipped[line.record_type or "(none)"] += 1
                return
            self.item(decode(raw, Item, where), number, line.timestamp, where)
            return
        payload: Any = bytes(line.payload)
        if kind == "session_meta":
            self.meta(decode(payload, Meta, where))
        elif kind == "turn_context":
            self.turn(decode(payload, TurnContext, where))
        elif kind == "response_item":
            self.item(decode(payload, Item, where), number, line.timestamp, where)
        elif kind == "event_msg":
            event = decode(payload, EventMsg, where)
            if event.type == "token_count":
                self.tokens(event)
            else:
                self.conv.skipped[f"event_msg:{event.type}"] += 1
        else:
            self.conv.skipped[kind or "(none)"] += 1

    def safe(self) -> bool:
        """Every assistant message got its usage (the `token_count` after it)."""
        return not self.pending

    def checkpoint(self) -> bytes:
        conv = self.conv
        return _CARRY.encode(_Carry(key=conv.key, metadata=conv.metadata,
                                    workspace=conv.workspace, model=self.model,
                                    total=self.total))

    def resume(self, state: bytes, where: str) -> None:
        """Continue after the lines a checkpoint covered."""
        try:
            carry = msgspec.json.decode(state, type=_Carry)
        except msgspec.DecodeError:
            raise InvalidInput("the saved reading position is unreadable", where=where
                               ) from None
        self.conv.key, self.conv.metadata = carry.key, dict(carry.metadata)
        self.conv.workspace, self.model, self.total = carry.workspace, carry.model, carry.total

    def mark(self) -> int:
        return len(self.conv.messages)

    def done(self, mark: object | None = None) -> list[ImportedConversation]:
        if isinstance(mark, int):
            del self.conv.messages[mark:], self.conv.origins[mark:]
        return [self.conv]


class _Carry(msgspec.Struct, kw_only=True):
    """What a rollout's later lines need from its earlier ones."""

    key: str
    metadata: dict[str, Any] = {}
    workspace: str | None = None
    model: str | None = None
    total: Usage = Usage()


_CARRY = msgspec.json.Encoder()


class CodexImporter(FileImporter):
    name = "codex"
    pattern = "rollout-*.jsonl"

    def home(self) -> Path:
        """``$CODEX_HOME/sessions``, else ``~/.codex/sessions``."""
        root = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        return Path(root).expanduser() / "sessions"

    def read(self, path: Path) -> list[ImportedConversation]:
        rollout = _Rollout(path)
        for number, raw in read_lines(path, self.max_line_bytes):
            rollout.line(number, raw, f"{path}:{number}")
        return rollout.done()

    def follow(self, path: Path, start: Position, *, final: bool = False,
               max_bytes: int = 8 * 2**20) -> Followed:
        rollout = _Rollout(path)
        if start.state:
            rollout.resume(start.state, f"{path}:{start.line}")
        return follow_lines(path, start, rollout, max_line_bytes=self.max_line_bytes,
                            max_bytes=max_bytes, final=final)
