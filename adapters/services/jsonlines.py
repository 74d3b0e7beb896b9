"""The JSON Lines input format of `convlog record`: how hosts in any language feed convlog.

WARNING: these line shapes are a PUBLIC CONTRACT, documented in docs/cli.md. Add
optional fields freely; never rename or remove one.

Each line is one object with a ``type``; lines are decoded with msgspec into the typed
Structs below (unknown fields are errors, so typos do not pass silently), then turned
into domain commands. Any error names the line and the field; a batch with one bad
line records nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from convlog.domain.content import (
    ROLES,
    AnyPart,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Clear,
    Command,
    Reactivate,
    RecordFact,
    StartConversation,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    HistoryInjected,
    ReasonClass,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    SummaryRecorded,
)
from convlog.domain.memory import InjectMemory
from convlog.domain.messages import Message
from convlog.domain.renamed import renamed
from convlog.services.jsonstrict import decode

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Line(msgspec.Struct, frozen=True, kw_only=True, tag_field="type",
           forbid_unknown_fields=True):
    pass


# ----------------------------------------------------------------- content parts


class TextIn(Line, tag="text", frozen=True):
    text: str


class ImageIn(Line, tag="image", frozen=True):
    ref: str
    media_type: str | None = None
    size: int | None = None


class ToolUseIn(Line, tag="tool_use", frozen=True):
    id: str
    name: str
    arguments: str | dict[str, Any] | None = None
    input: dict[str, Any] | None = None  # the Anthropic spelling of `arguments`


class ToolResultIn(Line, tag="tool_result", frozen=True):
    tool_use_id: str
    content: str
    is_error: bool = False


class ThinkingIn(Line, tag="thinking", frozen=True):
    text: str


PartIn = TextIn | ImageIn | ToolUseIn | ToolResultIn | ThinkingIn


class FunctionIn(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Either flat (`id`, `name`, `arguments`) or chat-completions style
    (`id`, `type: "function"`, `function: {name, arguments}`)."""

    id: str
    type: str = "function"
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    function: FunctionIn | None = None


class UsageIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


# ------------------------------------------------------------------------ lines


class ConversationStartedLine(Line, tag="session_started", frozen=True):
    user: str | None = None
    agent: str | None = None
    channel: str | None = None
    title: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] = {}


RoleIn = Annotated[str, msgspec.Meta(extra_json_schema={"enum": list(ROLES)})]
"""A message's role: an enum of the roles in the JSON Schema (so a generated client
refuses "usr"), any str when decoding, so that `Message` says why one is refused
(`system` gets its own error)."""


class MessageLine(Line, tag="message", frozen=True):
    role: RoleIn
    content: str | list[PartIn]
    id: str | None = None
    model: str | None = None
    agent: str | None = None
    usage: UsageIn | None = None
    cost_usd: Decimal | None = None
    tool_calls: list[ToolCallIn] = []
    tool_call_id: str | None = None
    tokens: int | None = None
    created_at: datetime | None = None
    response_id: str | None = None


class NativeSessionBoundLine(Line, tag="native_session_bound", frozen=True):
    native_session_id: str
    agent: str | None = None


class ResumeAttemptedLine(Line, tag="resume_attempted", frozen=True):
    strategy: str
    native_session_id: str | None = None


class ResumeSucceededLine(Line, tag="resume_succeeded", frozen=True):
    strategy: str
    native_session_id: str | None = None
    latency_ms: float | None = None
    fresh: bool | None = None


class ResumeFailedLine(Line, tag="resume_failed", frozen=True):
    strategy: str
    reason: ReasonClass = "error"
    error: str | None = None
    native_session_id: str | None = None
    latency_ms: float | None = None


class HistoryInjectedLine(Line, tag="history_injected", frozen=True):
    from_version: int
    to_version: int
    message_count: int
    tokens: int
    format: str
    text: str
    native_session_id: str | None = None


class SummaryRecordedLine(Line, tag="summary_recorded", frozen=True):
    from_version: int
    to_version: int
    message_count: int
    text: str
    tokens: int
    summarizer: str | None = None


class MemoryInjectedLine(Line, tag="memory_injected", frozen=True):
    """A memory block placed before a turn; refused (the whole batch) when one of its
    memory ids is cooling down."""

    text: str
    memory_ids: list[str] = []
    block_id: str | None = None
    native_session_id: str | None = None


class ConversationArchivedLine(Line, tag="session_archived", frozen=True):
    reason: str | None = None


class ConversationReactivatedLine(Line, tag="session_reactivated", frozen=True):
    pass


class ConversationClearedLine(Line, tag="conversation_cleared", frozen=True):
    reason: str | None = None


AnyLine = (
    ConversationStartedLine | MessageLine | NativeSessionBoundLine | ResumeAttemptedLine
    | ResumeSucceededLine | ResumeFailedLine | HistoryInjectedLine | SummaryRecordedLine
    | MemoryInjectedLine | ConversationArchivedLine
    | ConversationReactivatedLine | ConversationClearedLine
)
LINE_TYPES: tuple[str, ...] = tuple(
    str(t.__struct_config__.tag) for t in AnyLine.__args__
)
_decoder: msgspec.json.Decoder[AnyLine] = msgspec.json.Decoder(AnyLine)

RENAMED = {"SessionStartedLine": "ConversationStartedLine",
           "SessionArchivedLine": "ConversationArchivedLine",
           "SessionReactivatedLine": "ConversationReactivatedLine"}
"""Old names of the input structs (their lines' ``type`` tags never changed)."""
__getattr__ = renamed(__name__, RENAMED, globals())
if TYPE_CHECKING:
    SessionStartedLine = ConversationStartedLine
    SessionArchivedLine = ConversationArchivedLine
    SessionReactivatedLine = ConversationReactivatedLine


# ---------------------------------------------------------------------- parsing


def parse_lines(data: bytes, source: str = "stdin") -> tuple[list[Command], list[str]]:
    """Decode JSON Lines into commands, with the origin (``source:line``) of each.
    Blank lines are skipped. The first bad line raises InvalidInput naming it."""
    commands: list[Command] = []
    origins: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{source}:{number}"
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"invalid UTF-8 at byte {exc.start + 1} of the line",
                               where=where) from None
        try:
            commands.append(to_command(decode_line(raw)))
        except InvalidInput as exc:
            raise exc.located(where) from None
        except RecursionError:
            raise InvalidInput("JSON nested too deeply", where=where) from None
        origins.append(where)
    return commands, origins


def decode_line(raw: bytes, *, checked: bool = False) -> AnyLine:
    """One line, as every surface decodes it (`convlog record`'s lines, each item of
    HTTP `/events` and `/turns`): a `type` is required, unknown fields and a key given
    twice are refused, each error naming its field. `checked`: the enclosing document
    was checked for duplicate keys already."""
    return decode(raw, AnyLine, checked=checked, decoder=_decoder, types=LINE_TYPES)


def decode_message(raw: bytes, *, checked: bool = False) -> MessageLine:
    """A line that must be a message (an item of HTTP `/turns`): `decode_line`, then
    its `type` must be ``message``."""
    line = decode_line(raw, checked=checked)
    if not isinstance(line, MessageLine):
        raise InvalidInput(f"expected a message line, got type "
                           f"{line.__struct_config__.tag!r}", field="type")
    return line


def to_command(line: AnyLine) -> Command:
    if isinstance(line, ConversationStartedLine):
        return StartConversation(user=line.user, agent=line.agent, channel=line.channel,
                            title=line.title, workspace=line.workspace,
                            metadata=dict(line.metadata))
    if isinstance(line, MessageLine):
        return AppendMessages(messages=[to_message(line)])
    if isinstance(line, NativeSessionBoundLine):
        return BindNativeSession(native_session_id=line.native_session_id, agent=line.agent)
    if isinstance(line, ResumeAttemptedLine):
        return RecordFact(event=ResumeAttempted(
            at=_EPOCH, strategy=line.strategy, native_session_id=line.native_session_id))
    if isinstance(line, ResumeSucceededLine):
        return RecordFact(event=ResumeSucceeded(
            at=_EPOCH, strategy=line.strategy, native_session_id=line.native_session_id,
            latency_ms=line.latency_ms, fresh=line.fresh))
    if isinstance(line, ResumeFailedLine):
        return RecordFact(event=ResumeFailed(
            at=_EPOCH, strategy=line.strategy, reason=line.reason, error=line.error,
            native_session_id=line.native_session_id, latency_ms=line.latency_ms))
    if isinstance(line, HistoryInjectedLine):
        return RecordFact(event=HistoryInjected(
            at=_EPOCH, from_version=line.from_version, to_version=line.to_version,
            message_count=line.message_count, tokens=line.tokens, format=line.format,
            text=line.text, native_session_id=line.native_session_id))
    if isinstance(line, SummaryRecordedLine):
        return RecordFact(event=SummaryRecorded(
            at=_EPOCH, from_version=line.from_version, to_version=line.to_version,
            message_count=line.message_count, text=line.text, tokens=line.tokens,
            summarizer=line.summarizer))
    if isinstance(line, MemoryInjectedLine):
        command = InjectMemory(text=line.text, memory_ids=list(line.memory_ids),
                               native_session_id=line.native_session_id)
        # The cooldown depth is the log's setting: its writer sets it (Writer.prepare).
        return command if line.block_id is None else msgspec.structs.replace(
            command, block_id=line.block_id)
    if isinstance(line, ConversationArchivedLine):
        return Archive(reason=line.reason)
    if isinstance(line, ConversationReactivatedLine):
        return Reactivate()
    assert isinstance(line, ConversationClearedLine)
    return Clear(reason=line.reason)


def to_message(line: MessageLine) -> Message:
    content: str | list[AnyPart]
    if isinstance(line.content, str):
        content = line.content
    else:
        content = [_part(p, f"content[{i}]") for i, p in enumerate(line.content)]
    calls = [_tool_call(c, f"tool_calls[{i}]") for i, c in enumerate(line.tool_calls)]
    fields: dict[str, Any] = {}
    if line.id is not None:
        fields["id"] = line.id
    usage = msgspec.structs.asdict(line.usage) if line.usage else None
    return Message(
        role=line.role, content=content, tool_calls=calls, tool_call_id=line.tool_call_id,
        model=line.model, agent=line.agent, usage=Usage(**usage) if usage else None,
        cost_usd=line.cost_usd, tokens=line.tokens,
        token_counter="host" if line.tokens is not None else None,
        created_at=line.created_at, response_id=line.response_id, **fields)


def _json_text(value: str | dict[str, Any] | None) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def _part(p: PartIn, field: str) -> AnyPart:
    if isinstance(p, TextIn):
        return TextPart(text=p.text)
    if isinstance(p, ImageIn):
        if p.size is not None and p.size < 0:
            raise InvalidInput("an image's size cannot be negative", field=f"{field}.size")
        return ImagePart(ref=p.ref, media_type=p.media_type, size=p.size)
    if isinstance(p, ToolUseIn):
        if p.arguments is not None and p.input is not None:
            raise InvalidInput("give either arguments or input, not both", field=field)
        return ToolUsePart(id=p.id, name=p.name, arguments=_json_text(
            p.arguments if p.arguments is not None else p.input))
    if isinstance(p, ToolResultIn):
        return ToolResultPart(tool_use_id=p.tool_use_id, content=p.content,
                              is_error=p.is_error)
    return ThinkingPart(text=p.text)


def _tool_call(c: ToolCallIn, field: str) -> ToolCall:
    if c.function is not None:
        if c.name is not None or c.arguments is not None:
            raise InvalidInput("give name/arguments either flat or inside function",
                               field=field)
        return ToolCall(id=c.id, name=c.function.name, arguments=_json_text(
            c.function.arguments))
    if c.name is None:
        raise InvalidInput("a tool call needs a name (or a function object)", field=field)
    return ToolCall(id=c.id, name=c.name, arguments=_json_text(c.arguments))

