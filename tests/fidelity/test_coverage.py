"""No surface without its row: a new importer, SDK store or room of adapters/ fails
here until the matrix (tests/fidelity/writers.py, readers.py) has its row, or this file
says why it is no surface. And the rules name only writers and readers that exist."""

from __future__ import annotations

import pkgutil

import convlog
import convlog.integrations
from convlog.services.importing import available_formats
from tests.fidelity.readers import READERS
from tests.fidelity.rules import RULES
from tests.fidelity.writers import WRITERS

STORES = {  # module of convlog.integrations -> its writer
    "openai_agents": "openai-agents",
    "claude_agent_sdk": "claude-agent-sdk",
    "google_adk": "google-adk",
}
STORE_HELPERS = {  # modules of convlog.integrations that are no store, and why
    "adk_events": "ADK events <-> messages, for google_adk",
    "adk_pairs": "get_session's pairing, for google_adk",
    "claude_entries": "entries read back, for claude_agent_sdk",
    "claude_messages": "an entry -> its message, for claude_agent_sdk",
    "openai_items": "items <-> messages, for openai_agents",
    "openai_nearest": "another host's message as items, for openai_agents",
    "extras": "the missing-extra error",
    "settled": "writes a cancelled caller waits for",
}
ROOMS = {  # room of adapters/ -> the writers and readers that are its surface, or why none
    "services": ["library", "context-xml", "context-markdown", "context-messages",
                 "transcript", "view-user", "view-agent"],
    "http": ["http"],
    "acp": ["acp"],
    "importers": [f"import-{name}" for name in available_formats()],
    "integrations": list(STORES.values()),
    "watch": ["watch"],
    "otel": ["otel"],
    "html": ["html"],
    "cli": "the command runs the surfaces above (import, serve, acp, watch, export, "
           "html, context, show): each row drives them through it or its module",
    "storage": "where the log is kept: every row writes and reads through it",
    "views": "DuckDB read models of counts, costs and telemetry (no conversation content)",
    "accounting": "token counts and prices (no conversation content)",
    "crypto": "encryption at rest: the same rows, sealed (tests/crypto)",
}


def test_every_importer_has_its_row() -> None:
    missing = [f for f in available_formats() if f"import-{f}" not in WRITERS]
    assert not missing, f"importers without a row in the fidelity matrix: {missing}"


def test_every_sdk_store_has_its_row() -> None:
    modules = {m.name for m in pkgutil.iter_modules(convlog.integrations.__path__)}
    unknown = modules - set(STORES) - set(STORE_HELPERS)
    assert not unknown, (f"convlog.integrations.{sorted(unknown)}: a store needs its writer "
                         "in the fidelity matrix (STORES), a helper its reason (STORE_HELPERS)")
    assert set(STORES.values()) <= set(WRITERS)


def test_every_room_of_adapters_is_a_row_or_says_why_not() -> None:
    rooms = {m.name for m in pkgutil.iter_modules(convlog.__path__) if m.ispkg}
    assert rooms == set(ROOMS), f"rooms without a row or a reason: {rooms - set(ROOMS)}"
    for room, surface in ROOMS.items():
        if isinstance(surface, list):
            assert surface, room
            for name in surface:
                assert name in WRITERS or name in READERS, (room, name)


def test_every_writer_and_reader_has_a_room() -> None:
    named = {n for s in ROOMS.values() if isinstance(s, list) for n in s}
    assert set(WRITERS) - named == set(), set(WRITERS) - named
    assert set(READERS) - named == {"native"}  # every writer's own read


def test_the_rules_name_only_writers_and_readers_that_exist() -> None:
    for rule in RULES:
        assert rule.writers is None or rule.writers <= set(WRITERS), rule.name
        assert rule.readers is None or rule.readers <= set(READERS), rule.name
        assert rule.why and rule.kinds, rule.name
    names = [r.name for r in RULES]
    assert len(names) == len(set(names)), "two rules of one name"


def test_the_guarantees_list_every_row_and_rule() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "guarantees.md").read_text()
    node = "tests/fidelity/test_matrix.py::test_what_a_writer_sent_a_reader_gives_back"
    missing = [w for w in WRITERS if f"{node}[{w}-native]" not in text]
    assert not missing, f"docs/guarantees.md states no round-trip rule for: {missing}"
    unnamed = [r.name for r in RULES if f"`{r.name}`" not in text]
    assert not unnamed, f"docs/guarantees.md does not name the rules: {unnamed}"
