"""A clock the test moves (convlog.domain.clock.Clock), handed to a log through
`convlog.LogOptions(clock=...)`: time passes when the test says, never by sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class ManualClock:
    """Starts at `start` (wall) and 1,000 s (monotonic); only `advance` moves it."""

    def __init__(self, start: datetime = datetime(2026, 3, 1, 12, tzinfo=UTC)) -> None:
        self.wall = start
        self.seconds = 1_000.0

    def now(self) -> datetime:
        return self.wall

    def elapsed(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.seconds += seconds
