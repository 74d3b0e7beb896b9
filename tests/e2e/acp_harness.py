"""What the ACP proxy's end-to-end tests share: the command lines of real processes
(`convlog acp` in front of tests/e2e/acp_agent.py), and an SDK client that keeps
every `session/update` it is sent."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import AllowedOutcome, Implementation, RequestPermissionResponse

HERE = Path(__file__).resolve().parent
AGENT = HERE / "acp_agent.py"


def proxy_command(db: str, agent: list[str], *options: str) -> list[str]:
    return [sys.executable, "-m", "convlog.cli.main", "acp", "--db", db, *options, "--", *agent]


def agent_command(mode: str, workdir: Path) -> list[str]:
    return [sys.executable, str(AGENT), "--mode", mode, "--trace", str(workdir / "trace.jsonl"),
            "--state", str(workdir / "state.json")]


def trace(workdir: Path) -> list[dict[str, Any]]:
    """Every prompt the test agents received, in order."""
    path = workdir / "trace.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@dataclass
class RecordingClient:
    """An ACP client (the SDK's `Client` protocol, duck-typed) that keeps what it gets."""

    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(by_alias=True, exclude_none=True)))

    asked: list[str] = field(default_factory=list)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any,
                                 **kwargs: Any) -> Any:
        self.asked.append(session_id)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=options[0].option_id))

    def texts(self, kind: str) -> list[str]:
        return [u["content"]["text"] for _, u in self.updates
                if u.get("sessionUpdate") == kind and "text" in u.get("content", {})]


CLIENT_INFO = Implementation(name="e2e-client", version="2.5")
