"""`convlog export --otel`: the log, event by event, as spans to an OTLP receiver.

A batch is read from the tracking position (convlog.services.feed, whole
transactions), turned into spans (turns: convlog.otel.turns and .invocation; resume
outcomes: convlog.otel.resumes), sent, and only once the receiver acknowledged it is
the position moved past it (convlog.otel.tracking). A batch the receiver refused is
sent again by the next attempt; nothing is marked sent before it was. A turn still
going on (a resume's outcome whose injection may follow) holds the export there
until it is over, or `grace` seconds have passed.

Content goes out only with `with_content`, and never for a conversation whose user
was forgotten (its content reads back as placeholders; it is left out entirely).
An encrypted store is opened with its key or not at all, as everywhere in convlog.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

import msgspec
from eventsourcing.persistence import Tracking

import convlog
from convlog.domain.errors import ConvlogError
from convlog.domain.events import (
    MessageAppended,
    PreambleSent,
    ResumeFailed,
    ResumeSucceeded,
)
from convlog.otel.invocation import turn_spans
from convlog.otel.resumes import resume_span
from convlog.otel.spans import SpanSpec
from convlog.otel.turns import Near, segments
from convlog.services.feed import EventFeed, FeedEvent
from convlog.services.log import application

logger = logging.getLogger("convlog.otel")
PAGE = 500
MAX_BATCH_BYTES = 2 * 2**20
"""Content can be large: a batch stops growing past this much attribute text."""


class TrackingStore(Protocol):
    """What the export needs of its tracking (convlog.otel.tracking.TrackingFile)."""

    def max_tracking_id(self, application_name: str) -> int | None: ...

    def insert_tracking(self, tracking: Tracking) -> None: ...

    def reset(self, application_name: str, position: int) -> None: ...


class ExportFailed(ConvlogError):
    """The receiver did not acknowledge a batch: the position did not move."""


class Report(msgspec.Struct, kw_only=True):
    destination: str
    events: int = 0
    spans: int = 0
    position: int = 0
    held: bool = False
    """A turn still going on, or a resume outcome that waits for the injection that
    may follow it, holds the export (see turns, resumes)."""


class Exporter:
    def __init__(self, log: convlog.ConversationLog, tracking: TrackingStore,
                 send: Callable[[Sequence[SpanSpec]], bool], destination: str, *,
                 with_content: bool = False, grace: float = 60.0, page: int = PAGE):
        self.log, self.tracking, self.send = log, tracking, send
        self.name = f"otel {destination}"
        self.report = Report(destination=destination)
        self.with_content, self.grace, self.page = with_content, grace, page
        self.app = application(log)
        self.feed = EventFeed(self.app)

    @property
    def position(self) -> int:
        return self.tracking.max_tracking_id(self.name) or 0

    def start_from(self, position: int) -> None:
        """Send the events after `position` next (whatever was sent before)."""
        self.tracking.reset(self.name, position)

    def run(self) -> Report:
        """Send everything not sent yet; stops at the end of the log (or at a held
        resume outcome, sent by a later run)."""
        self.report = Report(destination=self.report.destination, position=self.position)
        while self.batch():
            pass
        return self.report

    def follow(self, stop: threading.Event, *, interval: float = 1.0) -> Report:
        """Send as the log grows, until `stop` is set. A refused batch is tried again
        after a pause (growing to a minute); the position never moves past it."""
        self.report = Report(destination=self.report.destination, position=self.position)
        pause = interval
        while not stop.is_set():
            try:
                sent = self.batch()
                pause = interval
            except ExportFailed as exc:
                logger.warning("%s; trying again in %.0fs", exc, pause)
                stop.wait(pause)
                pause = min(pause * 2, 60.0)
                continue
            if not sent and not stop.is_set():
                self.feed.wait(interval)
        return self.report

    def batch(self) -> bool:
        """Send the next batch; False when there was nothing (more) to send."""
        after = self.position
        events = self.feed.read(after, self.page)
        specs: list[SpanSpec] = []
        last, size = after, 0
        allowed: dict[str, bool] = {}
        now = self.app.clock.now()  # a turn's grace is on the clock that stamped it
        self.report.held = False
        read: dict[UUID, dict[int, object]] = {}  # the batch's events, for the turns
        for e in events:
            read.setdefault(e.stream, {})[e.version] = e.event
        for group in _transactions(events):
            out = self._spans(group, allowed, now, read)
            if out is None:
                self.report.held = True
                break
            specs += out
            last = group[-1].position
            size += sum(len(v) for s in out for v in s.attributes.values()
                        if isinstance(v, str))
            if size > MAX_BATCH_BYTES:
                break
        if last == after:
            return False
        if specs and not self.send(specs):
            raise ExportFailed(f"the receiver at {self.report.destination} did not take "
                               f"{len(specs)} span(s) for events {after + 1}..{last}: "
                               "nothing was marked sent")
        self.tracking.insert_tracking(Tracking(self.name, last))
        self.report.events += sum(1 for e in events if after < e.position <= last)
        self.report.spans += len(specs)
        self.report.position = last
        logger.debug("sent %d span(s) for events %d..%d", len(specs), after + 1, last)
        return True

    def _spans(self, group: list[FeedEvent], allowed: dict[str, bool], now: datetime,
               read: dict[UUID, dict[int, object]]) -> list[SpanSpec] | None:
        key = group[0].key
        if key not in allowed:  # content: asked for, and the user not forgotten
            allowed[key] = self.with_content and not self.log.state(key).forgotten
        start = self.feed.start(group[0].stream)
        out: list[SpanSpec] = []
        if any(isinstance(e.event, MessageAppended) for e in group):
            near = Near(self.log, key, read.get(group[0].stream))
            cut = segments(near, group, now, self.grace)
            if cut is None:  # a turn still going on: its span waits for its end
                return None
            positions = {e.version: e.position for e in group}
            preambles = sorted((e.version, e.event.text) for e in group
                               if isinstance(e.event, PreambleSent))
            for segment in cut:  # each cut at a message of this group
                system = None  # the preamble recorded just before the segment's messages
                while preambles and preambles[0][0] < segment.messages[0].version:
                    system = preambles.pop(0)[1]
                out += turn_spans(segment, group[0].stream, key,
                                  positions[segment.messages[-1].version], start,
                                  content=allowed[key], system=system)
        for item in group:
            if isinstance(item.event, ResumeSucceeded | ResumeFailed):
                span = resume_span(self.log, item, start, content=allowed[key], now=now,
                                   grace=self.grace)
                if span is None:
                    return None
                out.append(span)
        return out


def _transactions(events: list[FeedEvent]) -> list[list[FeedEvent]]:
    """Consecutive events of one conversation recorded at one time: a transaction."""
    out: list[list[FeedEvent]] = []
    for item in events:
        head = out[-1][-1] if out else None
        if (head is not None and head.stream == item.stream
                and head.version + 1 == item.version and head.event.at == item.event.at):
            out[-1].append(item)
        else:
            out.append([item])
    return out
