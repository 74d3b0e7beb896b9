"""Shared fixtures. Tests use real storage: in-memory POPO and SQLite files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import convlog


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'convlog.db'}"


@pytest.fixture(params=["memory", "sqlite"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[convlog.ConversationLog]:
    """A fresh log on each backend that ships today."""
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(url) as opened:
        yield opened
