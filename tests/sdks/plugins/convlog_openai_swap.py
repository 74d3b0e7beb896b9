"""A pytest plugin for the OpenAI Agents SDK's OWN session tests (from its sdist): every
test module's `SQLiteSession` becomes convlog's session, built from the same arguments.

It lives outside the `tests` package because the SDK's tests are a package named
`tests` too; tests/sdks/test_openai_sdk_suite.py puts this folder on the path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from convlog.integrations.openai_agents import ConvlogSession


class ConvlogAsSQLiteSession(ConvlogSession):
    """`SQLiteSession(session_id, db_path=":memory:", ..., session_settings=None)`:
    a file path becomes a convlog SQLite log in that file, ":memory:" a memory:// log."""

    def __init__(self, session_id: str, db_path: str | Path = ":memory:",
                 sessions_table: str = "agent_sessions", messages_table: str = "agent_messages",
                 session_settings: Any = None) -> None:
        url = "memory://" if str(db_path) == ":memory:" else f"sqlite:///{db_path}"
        super().__init__(session_id, url, session_settings=session_settings)
        ConvlogAsSQLiteSession.made += 1

    made = 0


SWAPPED: set[str] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "SQLiteSession"):
            module.SQLiteSession = ConvlogAsSQLiteSession
            SWAPPED.add(module.__name__)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Say what was swapped, so the caller can tell the suite really ran on convlog."""
    report = os.environ.get("CONVLOG_SWAP_REPORT")
    if report:
        with open(report, "w") as out:
            out.write(f"{len(SWAPPED)} {ConvlogAsSQLiteSession.made}\n")
