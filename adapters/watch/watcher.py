"""`convlog watch`: follow a tool's transcript folder and record new lines as they come.

Filesystem events come from watchdog (inotify on Linux, FSEvents on macOS): no
polling loop, and an idle watcher waits on a queue without a timeout. Start-up reads
every file once (new files from the start, known ones from their saved position),
with the observer already running, so nothing written meanwhile is missed.

Timing, per file: a changed file is read once it has been quiet for `settle` seconds
(or after `max_wait` if it never is), so a burst of lines is read once. Lines of a
response that may not be finished (see convlog.importers.follow) are read once the
file has been quiet for `hold` seconds: usage repeated on a response's lines is then
read from its last line. A failed write (the log is locked, the disk is full) is
tried again after `retry` seconds; the position only moves after a write.

Bounds: no file is kept open between reads, positions live in SQLite (one row per
file), and the pending work is a few paths: a folder of thousands of files costs
their rows on disk, not memory or descriptors.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import convlog
from convlog.domain.errors import ConvlogError, InvalidInput, MissingExtra
from convlog.services.importing import Follower
from convlog.watch.positions import Positions
from convlog.watch.status import Stats, now
from convlog.watch.tail import Captured, Tail

logger = logging.getLogger("convlog.watch")


class _Change(NamedTuple):
    kind: str  # created | modified | closed | deleted | moved
    path: str
    dest: str | None
    directory: bool


class Watcher:
    def __init__(self, log: convlog.ConversationLog, follower: Follower, root: Path,
                 positions: Positions, *, settle: float = 1.0, hold: float = 30.0,
                 max_wait: float = 10.0, retry: float = 5.0, max_bytes: int = 8 * 2**20,
                 on_update: Callable[[Stats], None] | None = None):
        if not root.is_dir():
            raise InvalidInput("no such directory (the tool has written nothing yet?)",
                               where=str(root))
        self.root = os.path.abspath(root)
        self.follower, self.positions = follower, positions
        self.tail = Tail(log, follower, positions, max_bytes=max_bytes)
        self.settle, self.hold, self.max_wait, self.retry = settle, hold, max_wait, retry
        self.stats = Stats(format=follower.name, root=self.root)
        self.on_update = on_update
        self._queue: queue.SimpleQueue[_Change | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._keys: set[str] = set()  # conversations captured (for the status line)
        self._dirty: dict[str, tuple[float, float]] = {}  # path -> (first, last change)
        self._later: dict[str, tuple[float, bool]] = {}  # path -> (when, final)

    # ---------------------------------------------------------------- running

    def stop(self) -> None:
        """End `run` (safe from a signal handler or another thread)."""
        self._stopping.set()
        self._queue.put(None)

    def run(self) -> Stats:
        """Catch up, then follow until `stop`; returns what was done."""
        try:
            from watchdog.observers import Observer
        except ImportError as exc:
            raise MissingExtra("convlog watch needs the 'watch' extra: pip install "
                               f"'convlog[watch]' (cannot import watchdog: {exc})") from None
        observer: Any = Observer()
        try:
            observer.schedule(_Handler(self._queue), self.root, recursive=True,
                              event_filter=_event_types())
            observer.start()
        except OSError as exc:  # e.g. the inotify watch limit
            raise ConvlogError(f"cannot watch {self.root}: {exc} (on Linux, raise "
                               "fs.inotify.max_user_watches)") from None
        logger.info("following %s (%s) into %s; positions in %s", self.root,
                    self.follower.name, self.tail.app.config.display, self.positions.path)
        try:
            self._catch_up()
            self._follow()
        finally:
            observer.stop()
            observer.join()
        return self.stats

    def _catch_up(self) -> None:
        fmt = self.follower.name
        for name in _take(self.positions.paths(fmt), self._stopping):
            if not os.path.exists(name):  # deleted while nobody watched
                self.positions.drop(fmt, name)
        for name in _walk(self.root, self.follower):
            if self._stopping.is_set():
                return
            try:
                quiet = time.time() - os.stat(name).st_mtime >= self.hold
            except OSError:
                continue
            self._visit(name, final=quiet)
        self.stats.caught_up = True
        self._update()

    def _follow(self) -> None:
        while not self._stopping.is_set():
            changes = self._wait()
            for change in changes:
                self._note(change)
            moment = time.monotonic()
            for name, (first, last) in list(self._dirty.items()):
                if moment - last >= self.settle or moment - first >= self.max_wait:
                    del self._dirty[name]
                    self._visit(name, final=False)
            for name, (when, final) in list(self._later.items()):
                if when <= moment and name not in self._dirty:
                    del self._later[name]
                    self._visit(name, final=final)
            self._update()

    def _wait(self) -> list[_Change]:
        """The next changes: block until one comes, or until pending work is due."""
        deadlines = [min(last + self.settle, first + self.max_wait)
                     for first, last in self._dirty.values()]
        deadlines += [when for when, _ in self._later.values()]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        changes: list[_Change] = []
        try:
            first = self._queue.get(timeout=timeout)  # None: no timeout, idle costs nothing
            if first is not None:
                changes.append(first)
            while True:
                more = self._queue.get_nowait()
                if more is not None:
                    changes.append(more)
        except queue.Empty:
            pass
        return changes

    # ---------------------------------------------------------------- changes

    def _note(self, change: _Change) -> None:
        fmt, moment = self.follower.name, time.monotonic()
        if change.directory:  # a folder made or moved in: its files are new
            folder = change.dest if change.kind == "moved" else change.path
            if change.kind in ("created", "moved") and folder:
                for name in _walk(folder, self.follower):
                    self._touch(name, moment)
            return
        if change.kind == "deleted":
            self._forget(change.path)
            return
        if change.kind == "moved" and change.dest is not None:
            if self.positions.move(fmt, change.path, change.dest):
                self._dirty.pop(change.path, None)
                self._later.pop(change.path, None)
                if not self._matches(change.dest):  # rotated out: read to its end
                    self._visit(change.dest, final=True)
                    self._forget(change.dest)
                    return
            if self._matches(change.dest):
                self._touch(change.dest, moment)
            return
        if self._matches(change.path):
            self._touch(change.path, moment)

    def _touch(self, name: str, moment: float) -> None:
        first, _ = self._dirty.get(name, (moment, moment))
        self._dirty[name] = (first, moment)

    def _forget(self, name: str) -> None:
        self._dirty.pop(name, None)
        self._later.pop(name, None)
        if self.positions.drop(self.follower.name, name):
            logger.debug("%s is gone; what was read from it stays in the log", name)

    def _matches(self, name: str) -> bool:
        return self.follower.matches(Path(name))

    # ---------------------------------------------------------------- reading

    def _visit(self, name: str, *, final: bool) -> None:
        try:
            done = self.tail.read(Path(name), final=final)
        except InvalidInput as exc:  # the file itself cannot be read: say so, go on
            self._failed(str(exc))
            return
        except ConvlogError as exc:  # the log could not record: the position stayed
            self._failed(f"{name}: {exc} (trying again in {self.retry:g}s)")
            self._later[name] = (time.monotonic() + self.retry, final)
            return
        except OSError as exc:
            self._failed(f"{name}: {exc.strerror or exc}")
            return
        self._done(done)
        if done.held:
            self._later[name] = (time.monotonic() + self.hold, True)
        else:
            self._later.pop(name, None)

    def _done(self, done: Captured) -> None:
        for error in done.failures:
            self._failed(error)
        if done.messages:
            self.stats.messages += done.messages
            self.stats.last_capture = now()
            logger.debug("%s: %d new message(s)", done.path, done.messages)
        if done.keys:
            self._keys.update(done.keys)
            self.stats.conversations = len(self._keys)

    def _failed(self, error: str) -> None:
        self.stats.failures += 1
        self.stats.last_error = error
        logger.warning("%s", error)

    def _update(self) -> None:
        self.stats.files = self.positions.count(self.follower.name)
        if self.on_update is not None:
            self.on_update(self.stats)


class _Handler:
    """watchdog's callback (on its thread): every change goes on the queue."""

    def __init__(self, changes: queue.SimpleQueue[_Change | None]):
        self.changes = changes

    def dispatch(self, event: Any) -> None:
        kind = "modified" if event.event_type == "closed" else event.event_type
        dest = os.fsdecode(event.dest_path) if getattr(event, "dest_path", "") else None
        self.changes.put(_Change(kind, os.fsdecode(event.src_path), dest,
                                 bool(event.is_directory)))


def _event_types() -> list[Any]:
    """Writes, closes after writing, creation, moves and deletion; never the opens and
    reads of the watcher's own reading (which would wake it for nothing)."""
    from watchdog import events as e

    return [e.FileCreatedEvent, e.FileModifiedEvent, e.FileClosedEvent, e.FileMovedEvent,
            e.FileDeletedEvent, e.DirCreatedEvent, e.DirMovedEvent]


def _walk(root: str, follower: Follower) -> Iterator[str]:
    """The format's files under `root`, a folder at a time, in a stable order."""
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda entry: entry.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(entry.path)
                elif entry.is_file() and follower.matches(Path(entry.path)):
                    yield entry.path
            except OSError:
                continue
        folders.extend(reversed(subfolders))


def _take(items: Iterator[str], stop: threading.Event) -> Iterator[str]:
    for item in items:
        if stop.is_set():
            return
        yield item
