"""ACP's session methods beyond new/load/prompt: close, delete, fork, and the facts an
agent reports about a session (its title, how full its context window is).

Served by the proxy for agents that lack them, recorded for every agent:

- `session/close`: recorded (`agent_session_closed`); forwarded when the agent
  advertises `sessionCapabilities.close`, else answered by the proxy. The
  conversation stays; a later `session/load` opens a new agent session for it.
- `session/delete`: recorded (`conversation_deleted`), not erased: the events stay,
  `replay` and `show` still show them, `session/list` leaves the session out (erasure
  is `convlog forget`). Forwarded when the agent advertises `.delete`.
- `session/fork`: a fork of the parent's conversation at its newest message
  (`conv.fork`, issue 47: the parent's history by reference, lineage in the catalog);
  its first event's metadata also names the parent (`forked_from`) and the parent's
  version at the fork (`forked_at_version`). A parent with no message yet gives a new
  conversation with that metadata. Forwarded when the agent advertises `.fork` and
  the parent is attached; else the fork is a new agent session given the parent's
  budgeted history in its first prompt.
- `session_info_update` with a title: `title_changed`, so the catalog, `sessions` and
  `session/list` show the agent's title.
- `usage_update`'s `used`/`size`: one `context_window_reported` per turn (the last
  one the agent sent during the turn), naming the turn's assistant message; one sent
  outside a turn is recorded when it comes.
- Either, sent outside a prompt turn, keeps the agent's payload (`update`) for
  `session/load` to replay as it came.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from convlog.acp.catalog import current_model
from convlog.acp.checks import check
from convlog.acp.sessions import Session, key_of
from convlog.acp.turns import window_of
from convlog.domain.conversation import RecordFact
from convlog.domain.events import (
    AgentSessionClosed,
    ContextWindowReported,
    ConversationDeleted,
    TitleChanged,
)

Fact = AgentSessionClosed | ConversationDeleted | TitleChanged | ContextWindowReported

if TYPE_CHECKING:
    from convlog.acp.proxy import Proxy


def _not_found(session_id: str) -> Exception:
    from acp import RequestError

    return RequestError(-32002, "Resource not found",
                        {"sessionId": session_id, "details": "no such session"})


async def record(proxy: Proxy, key: str, event: Fact) -> None:
    """One fact about a session, through the log's own command (never lost silently:
    a failed write is reported like a failed turn)."""
    await proxy.recorder.fact(key, asyncio.to_thread(proxy.app.execute, key,
                                                     [RecordFact(event=event)]))


async def close_session(proxy: Proxy, params: Any) -> Any:
    check("CloseSessionRequest", params)
    session_id = params["sessionId"]
    session = proxy.sessions.by_id.get(session_id)
    if session is None and not await proxy.log.exists(key_of(session_id)):
        raise _not_found(session_id)
    native = session.native_id if session is not None else None
    await record(proxy, key_of(session_id), AgentSessionClosed(
        at=datetime.now(UTC), native_session_id=native))
    if session is None:
        return {}
    attached = proxy.sessions.attached(session)
    proxy.sessions.forget(session)
    if attached and proxy.agent.capability("sessionCapabilities", "close"):
        return await proxy._ask("session/close", {**params, "sessionId": native})
    return {}


async def delete_session(proxy: Proxy, params: Any) -> Any:
    check("DeleteSessionRequest", params)
    session_id = params["sessionId"]
    key = key_of(session_id)
    if not await proxy.log.exists(key):
        raise _not_found(session_id)
    await record(proxy, key, ConversationDeleted(at=datetime.now(UTC),
                                                 reason="session/delete by the client"))
    session = proxy.sessions.by_id.get(session_id)
    native = (await proxy.log.state(key)).native_session_id
    if session is not None:
        proxy.sessions.forget(session)
    if native and proxy.agent.capability("sessionCapabilities", "delete"):
        from acp import RequestError

        try:  # the agent's own copy, if it keeps one; ours is recorded as deleted
            await proxy._ask("session/delete", {**params, "sessionId": native})
        except RequestError as exc:
            if exc.code != -32002:
                raise
    return {}


async def fork_session(proxy: Proxy, params: Any) -> Any:
    check("ForkSessionRequest", params)
    parent_id = params["sessionId"]
    parent_key = key_of(parent_id)
    if not await proxy.log.exists(parent_key):
        raise _not_found(parent_id)
    await proxy.recorder.drain()  # the parent's last turn recorded: the fork starts after it
    at_version = (await proxy.log.state(parent_key)).version
    newest = await proxy.log.messages(parent_key, last=1)
    parent = proxy.sessions.by_id.get(parent_id)
    where = {k: v for k, v in params.items() if k != "sessionId"}
    injection = None
    if (parent is not None and proxy.sessions.attached(parent)
            and proxy.agent.capability("sessionCapabilities", "fork")):
        result = await proxy._ask("session/fork", {**params, "sessionId": parent.native_id})
    else:  # a new agent session, given the parent's history up to now
        result = await proxy._ask("session/new", {"mcpServers": [], **where})
        context = await proxy.log.context(parent_key, budget=proxy.sessions.budget)
        injection = context.text if context.message_count or context.summarized else None
    native = result.get("sessionId") if isinstance(result, dict) else None
    if not isinstance(native, str) or not native:
        return result
    session = Session(id=uuid.uuid4().hex, cwd=params["cwd"], where=where,
                      cost_base=Decimal(0), injection=injection)
    session.model = current_model(result) or (parent.model if parent else None)
    session.preamble = parent.preamble if parent is not None else None
    metadata = proxy._metadata({"forked_from": parent_key, "forked_at_version": at_version})
    if newest:
        await proxy.recorder.fork(session.key, parent=parent_key, at=newest[-1].message_id,
                                  agent=proxy.agent_name, metadata=metadata, native=native)
    else:
        await proxy.recorder.start(session.key, agent=proxy.agent_name, cwd=session.cwd,
                                   metadata=metadata, native=native)
    proxy.sessions.bind(session, native)
    return {**result, "sessionId": session.id}


def session_facts(proxy: Proxy, session: Session, update: Any) -> None:
    """What an agent's `session/update` says about the session itself: its title, and
    outside a prompt turn its usage. One that came outside a turn is kept as the agent
    sent it (`update`), for `session/load` to replay (inside a turn, the turn's
    message keeps it). Written without holding the update back from the host."""
    if not isinstance(update, dict):
        return
    kind, at = update.get("sessionUpdate"), datetime.now(UTC)
    native = update if session.turn is None else None
    event: Fact | None = None
    if kind == "session_info_update":
        title = update.get("title")
        if isinstance(title, str) and title.strip():
            event = TitleChanged(at=at, title=title, update=native)
    elif kind == "usage_update" and native is not None:
        window = window_of(update)
        if window is not None:
            event = ContextWindowReported(at=at, used=window[0], size=window[1],
                                          update=native, native_session_id=session.native_id)
    if event is not None:
        proxy.recorder.fact_soon(session.key, asyncio.to_thread(
            proxy.app.execute, session.key, [RecordFact(event=event)]))


def window_of_turn(session: Session, window: tuple[int, int] | None,
                   message_id: str | None) -> list[ContextWindowReported]:
    """The context window the agent reported during a turn, once per turn: recorded
    in the turn's own write (one transaction, no extra round trip to the database)."""
    if window is None:
        return []
    used, size = window
    return [ContextWindowReported(at=datetime.now(UTC), used=used, size=size,
                                  message_id=message_id, native_session_id=session.native_id)]
