"""What the proxy says about itself and its sessions: the capabilities it adds to the
agent's `initialize` answer, the agent's name, and `session/list` from the catalog.

`session/list` lists this agent's conversations recorded by the proxy (keys
``acp:<id>``) except those deleted (`session/delete`), newest first, optionally only
those of one `cwd`, 50 per page; the cursor is the offset of the next page.
"""

from __future__ import annotations

import os
from typing import Any

import convlog
from convlog.acp.sessions import KEY_PREFIX

LIST_PAGE = 50


async def list_page(log: convlog.AsyncConversationLog, agent: str | None,
                    params: dict[str, Any]) -> dict[str, Any]:
    from acp import RequestError

    cwd, cursor = params.get("cwd"), params.get("cursor")
    if cursor is not None and not (isinstance(cursor, str) and cursor.isdigit()):
        raise RequestError.invalid_params({"field": "cursor", "error": "unknown cursor"})
    rows = [r for r in await log.sessions(agent=agent)
            if r.key.startswith(KEY_PREFIX) and r.status != "deleted"
            and (cwd is None or r.workspace == cwd)]
    start = int(cursor or 0)
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
