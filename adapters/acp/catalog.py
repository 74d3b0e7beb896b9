"""What the proxy says about itself and its sessions: the protocol version it speaks
(1: a client asking for a newer one is answered 1), the capabilities it adds to the
agent's `initialize` answer, the agent's name, and `session/list` from the catalog.

`session/list` lists this agent's conversations recorded by the proxy (keys
``acp:<id>``) except those deleted (`session/delete`), newest first, optionally only
those of one `cwd`, 50 per page; the cursor is the offset of the next page.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import convlog
from convlog.acp.sessions import KEY_PREFIX
from convlog.domain.numbers import whole_number

LIST_PAGE = 50
log = logging.getLogger("convlog.acp")


async def list_page(log: convlog.AsyncConversationLog, agent: str | None,
                    params: dict[str, Any]) -> dict[str, Any]:
    from acp import RequestError

    cwd, cursor = params.get("cwd"), params.get("cursor")
    start = 0 if cursor is None else whole_number(cursor) if isinstance(cursor, str) else None
    if start is None:
        raise RequestError.invalid_params({"field": "cursor", "error": "unknown cursor"})
    rows = [r for r in await log.conversations(agent=agent)
            if r.key.startswith(KEY_PREFIX) and r.status != "deleted"
            and (cwd is None or r.workspace == cwd)]
    answer: dict[str, Any] = {"sessions": [{
        "sessionId": r.key.removeprefix(KEY_PREFIX), "cwd": r.workspace or "/",
        **({"title": r.title} if r.title else {}),
        **({"updatedAt": r.last_active_at.isoformat()} if r.last_active_at else {}),
    } for r in rows[start:start + LIST_PAGE]]}
    if start + LIST_PAGE < len(rows):
        answer["nextCursor"] = str(start + LIST_PAGE)
    return answer


INTERPRETERS = ("python", "node", "bun", "deno", "npx", "uvx", "uv", "pipx", "bunx", "ruby")


def command_name(command: list[str]) -> str:
    """A name for an agent that does not say its own: the program, or the script or
    package an interpreter runs (`python agent.py` -> agent.py, `npx @x/y` -> y)."""
    name = os.path.basename(command[0])
    if name.startswith(INTERPRETERS):
        for arg in command[1:]:
            if not arg.startswith("-") and arg not in ("run", "exec", "x"):
                return os.path.basename(arg.rstrip("/")) or name
    return name


def current_model(result: Any) -> str | None:
    models = result.get("models") if isinstance(result, dict) else None
    model = models.get("currentModelId") if isinstance(models, dict) else None
    return model if isinstance(model, str) and model else None


def negotiated(params: dict[str, Any]) -> dict[str, Any]:
    """The client's `initialize` as the agent gets it: protocol version 1, the one the
    proxy records. A client asking for a newer version (the v2 draft, whose turns go
    on after the prompt's answer) has the agent asked for 1, its own fields carried
    over where v1 has them (`clientInfo` from v2's `info`), and is answered 1; ACP
    says a client that cannot speak the answered version closes the connection, and
    the SDK's v2 client does (issue 41). Said on stderr."""
    from acp import PROTOCOL_VERSION

    requested = params.get("protocolVersion")
    if not isinstance(requested, int) or isinstance(requested, bool) \
            or requested <= PROTOCOL_VERSION:
        return params
    log.warning("the client asked for ACP protocol version %d; convlog acp records "
                "version %d only, so it asks the agent for %d and answers %d (a client "
                "that cannot speak %d closes the connection)", requested,
                *[PROTOCOL_VERSION] * 4)
    caps = params.get("clientCapabilities")
    info = params.get("clientInfo", params.get("info"))
    v1: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION,
                          "clientCapabilities": caps if isinstance(caps, dict) else {}}
    if isinstance(info, dict):
        v1["clientInfo"] = info
    if isinstance(params.get("_meta"), dict):
        v1["_meta"] = params["_meta"]
    return v1


def advertise(result: Any) -> Any:
    """The agent's initialize answer, plus what the proxy itself serves for any agent."""
    if not isinstance(result, dict):
        return result
    caps = dict(result.get("agentCapabilities") or {})
    caps["loadSession"] = True
    sessions = dict(caps.get("sessionCapabilities") or {})
    sessions.setdefault("list", {})
    for served in ("resume", "close", "delete", "fork"):
        sessions.setdefault(served, {})
    caps["sessionCapabilities"] = sessions
    return {**result, "agentCapabilities": caps}
