"""The export's tracking position: how far into the log each destination has been sent.

An eventsourcing `TrackingRecorder` in a small SQLite file beside the log (as the
DuckDB views keep theirs beside their rows): one row per destination, written in one
transaction after the receiver acknowledged the spans of the events up to it. It
passes the library's own `TrackingRecorderTestCase`.

What "exactly once" can mean over a network: the position moves only after the
receiver said it has the batch, so no event is skipped; a process killed after the
receiver's answer and before this write sends that one batch again, with the same
trace and span ids (convlog.otel.spans), which backends deduplicate on.
"""

from __future__ import annotations

import threading
from pathlib import Path

from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder

from convlog.services import sidecar


class TrackingFile(TrackingRecorder):
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._db = sidecar.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS convlog_tracking ("
                         " application_name TEXT PRIMARY KEY,"
                         " notification_id INTEGER NOT NULL)")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def insert_tracking(self, tracking: Tracking) -> None:
        """Move `tracking.application_name` to its notification id; IntegrityError
        if that is not after where it is (a position never goes back by itself)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                current = self._max(tracking.application_name)
                if current is not None and tracking.notification_id <= current:
                    raise IntegrityError(
                        f"{tracking.application_name}: position {tracking.notification_id} "
                        f"is not after the tracked position {current}")
                self._db.execute("INSERT OR REPLACE INTO convlog_tracking VALUES (?, ?)",
                                 (tracking.application_name, tracking.notification_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def max_tracking_id(self, application_name: str) -> int | None:
        with self._lock:
            return self._max(application_name)

    def reset(self, application_name: str, position: int) -> None:
        """Start `application_name` over from `position` (``--from``)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO convlog_tracking VALUES (?, ?)",
                             (application_name, position))

    def _max(self, application_name: str) -> int | None:
        row = self._db.execute("SELECT notification_id FROM convlog_tracking "
                               "WHERE application_name = ?", (application_name,)).fetchone()
        return None if row is None else int(row[0])
