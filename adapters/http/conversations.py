"""Endpoints of one conversation: start, read, append, and its state changes.

Each is a thin call into `ConversationLog`: the body is decoded into the Structs of
`convlog record` (`convlog.services.jsonlines`), turned into the same domain commands,
and executed as ONE transaction, so HTTP writes obey exactly the rules of the library.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec

import convlog
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Clear,
    Command,
    Reactivate,
    RequireUser,
    StartConversation,
    check_key,
)
from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.events import MessageAppended
from convlog.http import idempotency
from convlog.http.auth import Principal
from convlog.http.endpoint import Call, Endpoint, Param
from convlog.http.problems import ProblemError
from convlog.http.schema import (
    Body,
    EventsIn,
    NativeSessionIn,
    ReasonIn,
    StartIn,
    StateChange,
    TimelineOut,
    TurnIn,
)
from convlog.projections.context import Budget
from convlog.projections.formats import FORMATS
from convlog.projections.moment import parse_moment
from convlog.projections.replay_views import VIEWS
from convlog.projections.transcript import TranscriptLine
from convlog.services.jsonlines import (
    ConversationStartedLine,
    MessageLine,
    decode_line,
    decode_message,
    to_command,
    to_message,
)
from convlog.services.summary import MAX_PAUSED_AFTER, PAUSED_AFTER, ConversationSummary

T = TypeVar("T")


async def start(call: Call) -> convlog.ConversationInfo:
    body = await call.body(StartIn)
    key = check_key(body.key)
    user = body.user
    if not call.principal.admin:
        if user is not None and user != call.principal.user:
            raise ProblemError(403, "forbidden", "a user token starts conversations of its "
                               "own user only", field="user")
        user = call.principal.user
        if await call.run(call.log.exists, key):
            state = await call.run(call.log.state, key)
            if state.user != user:
                raise UnknownConversation(key)
    command = StartConversation(user=user, agent=body.agent, channel=body.channel, title=body.title,
                           workspace=body.workspace, metadata=dict(body.metadata))
    guard: list[Command] = [] if user is None or call.principal.admin else [
        RequireUser(user=user)]
    await call.write(key, [command, *guard])
    return await call.run(call.log.info, key)


async def info(call: Call) -> convlog.ConversationInfo:
    return await call.run(call.log.info, await call.readable())


async def summary(call: Call) -> ConversationSummary:
    key = await call.readable()
    value = call.q_str("paused_after")
    try:
        paused_after = float(value) if value is not None else PAUSED_AFTER
    except ValueError:
        raise InvalidInput(f"expected a number of seconds, got {value!r}",
                           field="paused_after") from None
    return await call.run(call.log.summary, key, paused_after=paused_after)


def _message(line: MessageLine, index: int, idem: str | None) -> convlog.Message:
    if line.id is None and idem is not None:
        line = msgspec.structs.replace(line, id=idempotency.message_id(idem, index))
    try:
        return to_message(line)
    except InvalidInput as exc:
        raise exc.nested(f"messages[{index}]") from None


class _TurnWire(Body, frozen=True):
    """`TurnIn` as it is read: each message decoded by `convlog record`'s decoder."""

    messages: list[msgspec.Raw]


class _EventsWire(Body, frozen=True):
    """`EventsIn` as it is read: each line decoded by `convlog record`'s decoder."""

    events: list[msgspec.Raw]


def _item(decode: Callable[..., T], raw: msgspec.Raw, where: str) -> T:
    """One item of a body, by the line decoder (the body was checked for keys given
    twice already); its errors located under `where` (``messages[2].role``)."""
    try:
        return decode(bytes(raw), checked=True)
    except InvalidInput as exc:
        raise exc.nested(where) from None


def _messages(raws: list[msgspec.Raw], idem: str | None) -> list[convlog.Message]:
    lines = [_item(decode_message, raw, f"messages[{i}]") for i, raw in enumerate(raws)]
    return [_message(m, i, idem) for i, m in enumerate(lines)]


async def append_turn(call: Call) -> convlog.AppendResult:
    body = await call.body(_TurnWire)
    if not body.messages:
        raise InvalidInput("a turn needs at least one message", field="messages")
    call.check_batch(len(body.messages), "messages")
    idem = idempotency.check_key(call.request.headers.get(idempotency.HEADER))
    messages = await call.compute(_messages, body.messages, idem)
    key, first = await call.writable()
    return await call.write(key, [*first, AppendMessages(messages=messages)])


def _commands(raws: list[msgspec.Raw], principal: Principal) -> list[Command]:
    commands: list[Command] = []
    for i, raw in enumerate(raws):
        line = _item(decode_line, raw, f"events[{i}]")
        if isinstance(line, ConversationStartedLine) and not principal.admin:
            if line.user not in (None, principal.user):
                raise ProblemError(403, "forbidden", "a user token records conversations of "
                                   "its own user only", field=f"events[{i}].user")
            line = msgspec.structs.replace(line, user=principal.user)
        try:
            commands.append(to_command(line))
        except InvalidInput as exc:
            raise exc.nested(f"events[{i}]") from None
    return commands


async def record(call: Call) -> convlog.AppendResult:
    body = await call.body(_EventsWire)
    if not body.events:
        raise InvalidInput("give at least one event", field="events")
    call.check_batch(len(body.events), "events")
    commands = await call.compute(_commands, body.events, call.principal)
    key, first = await call.writable()
    origins = [f"events[{i}]" for i in range(len(first) + len(commands))]
    return await call.write(key, [*first, *commands], origins)


async def messages(call: Call) -> list[MessageAppended]:
    key = await call.readable()
    return await call.run(call.log.messages, key, last=call.q_int("last"))


async def transcript(call: Call) -> list[TranscriptLine]:
    return await call.run(call.log.transcript, await call.readable())


async def timeline(call: Call) -> list[TimelineOut]:
    key = await call.readable()
    until = parse_moment(call.q_str("until"), "until")
    rows = await call.run(call.log.timeline, key, until=until)
    return [TimelineOut(version=r.version, at=r.at, type=r.type, details=r.details,
                        event=r.event) for r in rows]  # type: ignore[arg-type]


def _at(call: Call) -> int | datetime | None:
    return parse_moment(call.q_str("at"))


async def replay(call: Call) -> convlog.ConversationView:
    key = await call.readable()
    name = call.q_str("view", None, VIEWS)
    if name is None:
        raise InvalidInput("give view=user (what the user saw) or view=agent (what the "
                           "agent received)", field="view")
    return await call.run(call.log.view, key, name, at=_at(call))


async def diff(call: Call) -> convlog.ViewDiff:
    key = await call.readable()
    return await call.run(call.log.diff, key, at=_at(call))


def budget_of(call: Call) -> Budget:
    return Budget(tokens=call.q_int("tokens", 10_000) or 10_000,
                  messages=call.q_int("messages", 30) or 30,
                  chars=call.q_int("chars", 2_000) or 2_000)


async def context(call: Call) -> convlog.Context:
    key = await call.readable()
    try:
        budget = budget_of(call)
    except InvalidInput as exc:
        raise InvalidInput(exc.reason, field=(exc.field or "").removeprefix("budget.")
                           ) from None
    return await call.run(call.log.context, key, budget=budget,
                          format=call.q_str("format", "xml", FORMATS) or "xml",
                          exclude=call.request.query_params.getlist("exclude"),
                          model=call.q_str("model"))


async def bind(call: Call) -> convlog.AppendResult:
    body = await call.body(NativeSessionIn)
    key, first = await call.writable()
    command = BindNativeSession(native_session_id=body.native_session_id, agent=body.agent)
    return await call.write(key, [*first, command])


def _state_change(make: Any, with_reason: bool) -> Any:
    async def change(call: Call) -> StateChange:
        reason = (await call.body(ReasonIn)).reason if with_reason and await _has_body(
            call) else None
        key = await call.readable()
        command = make(reason) if with_reason else make()
        result = await call.write(key, [command])
        status = (await call.run(call.log.info, key)).status
        return StateChange(key=key, changed=result.events > 0, version=result.version,
                           status=status)
    return change


async def _has_body(call: Call) -> bool:
    return bool((await call.request.body()).strip())


KEY = "/v1/conversations/{key}"
LAST = Param("last", {"type": "integer", "minimum": 1},
             "only the newest N messages (one indexed read, never a replay)")
CONTEXT_QUERY = (
    Param("tokens", {"type": "integer", "minimum": 1, "default": 10_000},
          "token budget of the whole formatted text"),
    Param("messages", {"type": "integer", "minimum": 1, "default": 30}, "at most N messages"),
    Param("chars", {"type": "integer", "minimum": 16, "default": 2_000},
          "cut each message at N characters"),
    Param("format", {"type": "string", "enum": list(FORMATS), "default": "xml"},
          "xml, markdown, or messages (chat-completions JSON)"),
    Param("exclude", {"type": "string"}, "leave this message id out; repeatable", many=True),
    Param("model", {"type": "string"}, "count tokens with this model's tokenizer"),
)

AT = Param("at", {"type": "string"},
           "as of this version, or this ISO time (UTC unless it has an offset)")

ENDPOINTS = [
    Endpoint("POST", "/v1/conversations", start, "Start a conversation (or get it)",
             operation_id="startConversation",
             body=StartIn, answer=convlog.ConversationInfo),
    Endpoint("POST", KEY + "/turns", append_turn,
             "Append one turn's messages atomically (idempotent by message id)",
             operation_id="appendTurn",
             body=TurnIn, answer=convlog.AppendResult),
    Endpoint("POST", KEY + "/events", record,
             "Record lines of `convlog record` as one atomic batch",
             operation_id="recordEvents",
             body=EventsIn, answer=convlog.AppendResult),
    Endpoint("GET", KEY + "/messages", messages, "Messages, oldest first",
             operation_id="listMessages",
             answer=list[MessageAppended], query=(LAST,)),
    Endpoint("GET", KEY + "/transcript", transcript, "What the user saw",
             operation_id="getTranscript",
             answer=list[TranscriptLine]),
    Endpoint("GET", KEY + "/timeline", timeline, "Every event: the debugging view",
             operation_id="getTimeline",
             answer=list[TimelineOut],
             query=(Param("until", {"type": "string"}, "a version number or an ISO time"),)),
    Endpoint("GET", KEY + "/replay", replay,
             "What the user saw (view=user) or what the agent received (view=agent)",
             operation_id="replayView",
             answer=convlog.ConversationView,
             query=(Param("view", {"type": "string", "enum": list(VIEWS)},
                          "user or agent", required=True), AT)),
    Endpoint("GET", KEY + "/diff", diff,
             "Where the two views part: messages missing from the agent's context, "
             "injected text, resumes that injected nothing",
             operation_id="diffViews",
             answer=convlog.ViewDiff, query=(AT,)),
    Endpoint("GET", KEY + "/context", context,
             "The history to inject into a fresh agent session, cut to a budget",
             operation_id="getContext",
             answer=convlog.Context, query=CONTEXT_QUERY),
    Endpoint("POST", KEY + "/native-session", bind,
             "Bind the agent's own session id to this conversation",
             operation_id="bindNativeSession",
             body=NativeSessionIn, answer=convlog.AppendResult),
    Endpoint("POST", KEY + "/archive", _state_change(lambda r: Archive(reason=r), True),
             "Archive (nothing is deleted)",
             operation_id="archiveConversation", body=ReasonIn, answer=StateChange),
    Endpoint("POST", KEY + "/reactivate", _state_change(Reactivate, False),
             "Make an archived conversation resumable again",
             operation_id="reactivateConversation", answer=StateChange),
    Endpoint("POST", KEY + "/clear", _state_change(lambda r: Clear(reason=r), True),
             "Start a new epoch: later context starts empty",
             operation_id="clearConversation", body=ReasonIn,
             answer=StateChange),
    Endpoint("GET", KEY + "/summary", summary,
             "The conversation at a glance, without building a context: status (active, "
             "paused, archived), dates, message count, tokens, cost, agents, latest summary",
             operation_id="getConversationSummary", answer=ConversationSummary,
             query=(Param("paused_after", {"type": "number", "exclusiveMinimum": 0,
                                           "maximum": MAX_PAUSED_AFTER,
                                           "default": PAUSED_AFTER},
                          "seconds without activity after which it is paused"),)),
    Endpoint("GET", KEY, info, "The conversation's state",
             operation_id="getConversation", answer=convlog.ConversationInfo),
]
