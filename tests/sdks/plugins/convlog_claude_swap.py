"""A pytest plugin for the Claude Agent SDK's OWN tests (from its sdist): every test
module's `InMemorySessionStore` becomes convlog's store on a fresh in-memory log.

Outside the `tests` package, like convlog_openai_swap (the SDK's tests are a package
named `tests` too)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from convlog.integrations.claude_agent_sdk import CHANNEL, ConvlogSessionStore


class ConvlogAsInMemoryStore(ConvlogSessionStore):
    """convlog's store, plus InMemorySessionStore's three test helpers, built on the
    store's own methods and the log's public API."""

    made = 0

    def __init__(self) -> None:
        super().__init__("memory://", agent="claude")
        ConvlogAsInMemoryStore.made += 1

    def get_entries(self, key: Any) -> list[Any]:
        return self._load(key) or []

    def _keys(self) -> list[str]:
        _, rows = self.log.sql("SELECT key FROM sessions WHERE channel = ? AND status = 'active'",
                               [CHANNEL])
        return [key for (key,) in rows]

    @property
    def size(self) -> int:  # main transcripts that hold entries
        return sum(1 for key in self._keys() if key.count("/") == 1
                   and self.log.live_messages(key, last=1))

    def clear(self) -> None:
        for key in self._keys():
            self.log.clear(key, reason="test helper clear")
            self.log.archive(key, reason="test helper clear")


SWAPPED: set[str] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "InMemorySessionStore"):
            module.InMemorySessionStore = ConvlogAsInMemoryStore
            SWAPPED.add(module.__name__)


def pytest_sessionfinish(session: pytest.Session) -> None:
    report = os.environ.get("CONVLOG_SWAP_REPORT")
    if report:
        with open(report, "w") as out:
            out.write(f"{len(SWAPPED)} {ConvlogAsInMemoryStore.made}\n")
