"""What a watcher has done so far, and how it is shown: one status line on a
terminal (rich, loaded only there), quiet log lines otherwise."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import msgspec

logger = logging.getLogger("convlog.watch")


class Stats(msgspec.Struct, kw_only=True):
    format: str
    root: str
    files: int = 0
    """Files followed (those with a saved position)."""
    conversations: int = 0
    """Conversations that got new messages since the watcher started."""
    messages: int = 0
    """Messages recorded since the watcher started."""
    failures: int = 0
    """Lines or conversations that could not be read, and failed writes."""
    last_error: str | None = None
    last_capture: datetime | None = None
    caught_up: bool = False
    """The files found at start were all read once."""

    def line(self) -> str:
        when = self.last_capture.astimezone().strftime("%H:%M:%S") if self.last_capture else "-"
        text = (f"convlog watch {self.format} {self.root}: {self.files:,} files followed, "
                f"{self.conversations:,} conversations and {self.messages:,} messages "
                f"captured (last {when})")
        if not self.caught_up:
            text += ", catching up"
        if self.last_error:
            text += f"; {self.failures:,} failure(s), last: {self.last_error}"
        return text


class StatusLine:
    """A live line on a terminal; nothing when stderr is not one (the log says the
    rest). A context manager: the line stays on screen when it ends."""

    def __init__(self, *, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._live: Any = None

    def __enter__(self) -> Callable[[Stats], None]:
        if self.enabled:
            from rich.console import Console  # rich loads only for a terminal
            from rich.live import Live

            self._live = Live("", console=Console(stderr=True), auto_refresh=False,
                              transient=False)
            self._live.__enter__()
        return self.show

    def show(self, stats: Stats) -> None:
        if self._live is not None:
            from rich.text import Text

            self._live.update(Text(stats.line(), overflow="ellipsis", no_wrap=True),
                              refresh=True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(kind, exc, tb)
            self._live = None


def now() -> datetime:
    return datetime.now(UTC)
