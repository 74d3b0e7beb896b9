"""THE clock: what stamps events, what decides that something expired, and what times
a resume's tiers. One object, handed to the store when a log opens
(`convlog.LogOptions.clock`), so a test or a replay moves time instead of sleeping.

Two readings, because they answer two questions: `now` is the wall time (UTC, aware)
that stamps events and ages conversations and kept answers; `elapsed` is a monotonic
count of seconds, for latencies only (its differences count, never its value).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """What convlog reads the time from."""

    def now(self) -> datetime:
        """The wall time, timezone-aware (UTC)."""
        ...

    def elapsed(self) -> float:
        """Monotonic seconds: for durations only."""
        ...


class SystemClock:
    """The machine's clocks: `datetime.now(UTC)` and `time.perf_counter`."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def elapsed(self) -> float:
        return time.perf_counter()


SYSTEM_CLOCK: Clock = SystemClock()
