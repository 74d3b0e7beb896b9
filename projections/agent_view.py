"""The agent's view: what the agent received, in order, and what is still in its context.

The transcript is what the user saw; the agent's context differs after a restart
that started an empty agent session, history injected in its place (cut to a
budget), a summary that replaced older messages, a clear. The agent view is a walk
over the log that keeps, for every entry, the agent session it entered (a
*segment*: one native session's context) and why it left the agent's context, if it
did. Rules, from the events' own meaning:

- a message enters the current agent session;
- ``resume_succeeded`` of a fresh tier (``fresh``, or a strategy named like
  ``session/new``) starts an EMPTY session: what came before is gone from context;
  a native tier brings back the session it names, with what that session received;
- ``native_session_bound`` names the current session when it had no name yet,
  returns to a session seen before, or (a new id, outside a resume) starts an empty one;
- ``history_injected`` enters where it was recorded, into a fresh session (one that
  already received messages is left for a new, unnamed one). A summary recorded just
  before it with the same start is part of its text, so it is not shown twice.
  Messages after its range, left out as "the message being sent now", are delivered
  right after it;
- ``summary_recorded`` otherwise is a compaction: it enters, and the messages (and
  injections) of the current session that it covers leave the context;
- ``preamble_sent``: what the host sent for the model only (its system prompt)
  enters where it was recorded, before the message it came with;
- ``memory_injected``: the block enters where it was recorded; whether it is still
  live is the memory projection's answer (convlog.projections.memory: at most
  `memory_cap` blocks, 0 = a block lives for its own turn);
- ``message_retracted`` (an SDK's ``pop_item``): the message leaves the context,
  its entry stays, marked, and a marker shows where;
- ``conversation_cleared``: nothing from before it is shown; context starts empty.

What the agent holds (its live messages) is what convlog hands its model, so the
tool-pairing repairs convlog makes to it are marked (convlog.projections.repair_marks):
a synthesized lost result, a result without its call left out.

A fresh session that starts empty while earlier messages exist, and gets nothing
injected before its first message, is flagged (`alert`): "why did the agent forget".

Injected blocks (history, summaries, memory) enter through `AgentWalk.enter_block`,
the one place a new kind of injected text plugs in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from convlog.domain.events import (
    ConversationCleared,
    ConversationStarted,
    HistoryCompacted,
    HistoryInjected,
    HistoryRewound,
    MemoryInjected,
    MessageAppended,
    MessageRetracted,
    NativeSessionBound,
    PreambleSent,
    Recorded,
    ResumeFailed,
    ResumeSucceeded,
    SummaryRecorded,
    UserForgotten,
    is_fresh_strategy,
)
from convlog.domain.records import is_record
from convlog.projections.memory import DEFAULT_CAP, lifetimes, policy_cap
from convlog.projections.moment import Moment, cut
from convlog.projections.repair_marks import mark_repairs
from convlog.projections.transcript import render_content, shorten
from convlog.projections.view_model import ConversationView, EntryKind, ViewEntry


@dataclass
class _Slot:
    """A mutable entry while walking; frozen into a ViewEntry at the end."""

    version: int
    at: datetime
    kind: EntryKind
    text: str
    segment: int
    role: str | None = None
    message_id: str | None = None
    covers: tuple[int, int] | None = None
    note: str | None = None
    gone: str | None = None
    alert: bool = False
    message: MessageAppended | None = None
    """A message's event: pairing reads its tool calls and results."""


class AgentWalk:
    """The agent's view, built one recorded event at a time (see the module doc)."""

    def __init__(self) -> None:
        self.slots: list[_Slot] = []
        self.segment = 0
        self.names: dict[int, str | None] = {0: None}
        self.starts: dict[int, int] = {0: 0}
        self.by_name: dict[str, int] = {}
        self.left: dict[int, str] = {}
        """Why each segment other than the current one left the agent's context."""
        self.pending_fresh: tuple[_Slot, int] | None = None
        """A fresh session's marker, and how many earlier messages it lost, until
        an injection (or its first message) says whether it got any history."""
        self.failures: list[str] = []
        self.epoch_messages = 0
        self.received: dict[int, int] = {}
        """Messages each segment received (so the walk stays linear)."""
        self.retracted: list[MessageAppended] = []
        self.imported = False
        """The conversation came from an importer (its start names a ``source``)."""

    # ----------------------------------------------------------------- segments

    def _new_segment(self, name: str | None, version: int, why: str) -> None:
        self.left[self.segment] = why
        self.segment = len(self.names)
        self.names[self.segment] = name
        self.starts[self.segment] = version
        if name is not None:
            self.by_name[name] = self.segment

    def _return_to(self, segment: int, why: str) -> None:
        if segment != self.segment:
            self.left[self.segment] = why
            self.left.pop(segment, None)
            self.segment = segment

    def _name_current(self, name: str) -> None:
        self.names[self.segment] = name
        self.by_name[name] = self.segment

    def _has_messages(self) -> bool:
        return self.received.get(self.segment, 0) > 0

    def _marker(self, r: Recorded, text: str, note: str | None = None) -> _Slot:
        slot = _Slot(version=r.version, at=r.event.at, kind="marker", text=text,
                     segment=self.segment, note=note)
        self.slots.append(slot)
        return slot

    def _settle_fresh(self, injected: bool) -> None:
        if self.pending_fresh is None:
            return
        slot, lost = self.pending_fresh
        self.pending_fresh = None
        if not injected and lost:
            slot.alert = True
            slot.text += (f"; nothing was injected: the agent lost {lost} earlier "
                          f"message{'s' if lost != 1 else ''}")

    def _fresh(self, r: Recorded, name: str | None, how: str) -> None:
        self._settle_fresh(False)
        after = f" after {', '.join(self.failures)}" if self.failures else ""
        self.failures = []
        self._new_segment(name, r.version, f"the agent moved to a new, empty session at "
                                           f"#{r.version}")
        label = f"new agent session {name}" if name else "new agent session"
        marker = self._marker(r, f"{label} ({how}{after}): its context starts empty")
        self.pending_fresh = (marker, self.epoch_messages)

    # ------------------------------------------------------------------- events

    def feed(self, r: Recorded) -> None:
        e = r.event
        if isinstance(e, MessageAppended):
            if not is_record(e):  # a record its SDK store keeps is no message
                self._message(r, e)
        elif isinstance(e, ResumeSucceeded):
            self._resumed(r, e)
        elif isinstance(e, ResumeFailed):
            self.failures.append(f"{e.strategy} failed ({e.reason})")
        elif isinstance(e, NativeSessionBound):
            self._bound(r, e)
        elif isinstance(e, HistoryInjected):
            self._injected(r, e)
        elif isinstance(e, SummaryRecorded):
            self._summary(r, e)
        elif isinstance(e, HistoryCompacted):
            self._compacted(r, e)
        elif isinstance(e, HistoryRewound):
            self._rewound(r, e)
        elif isinstance(e, MemoryInjected):
            self.enter_block(r, "memory", e.text, None,
                             f"memories {', '.join(e.memory_ids) or '-'}")
        elif isinstance(e, MessageRetracted):
            self._retracted(r, e)
        elif isinstance(e, PreambleSent):
            self.enter_block(r, "preamble", e.text, None, f"the host's preamble ({e.how}): "
                             "for the model, not the user")
        elif isinstance(e, ConversationCleared):
            self._cleared(r, e)
        elif isinstance(e, ConversationStarted):
            self.imported = bool(e.metadata.get("source"))
        elif isinstance(e, UserForgotten):
            self._marker(r, f"user {e.user} was forgotten: what the agent received above "
                            "is erased ([forgotten])")

    def _append_message(self, slot: _Slot) -> None:
        self.slots.append(slot)
        self.received[slot.segment] = self.received.get(slot.segment, 0) + 1

    def _message(self, r: Recorded, e: MessageAppended) -> None:
        self._settle_fresh(False)
        if self.failures:
            self._marker(r, f"resume failed ({', '.join(self.failures)}) and no agent "
                            "session was recorded: later messages went to an unknown "
                            "session").alert = True
            self.failures = []
        self.epoch_messages += 1
        self._append_message(_message_slot(r, e, self.segment))

    def _resumed(self, r: Recorded, e: ResumeSucceeded) -> None:
        fresh = e.fresh if e.fresh is not None else is_fresh_strategy(e.strategy)
        if fresh:
            self._fresh(r, e.native_session_id, e.strategy)
            return
        self._settle_fresh(False)
        after = f" after {', '.join(self.failures)}" if self.failures else ""
        self.failures = []
        name = e.native_session_id
        if name is not None and name in self.by_name:
            self._return_to(self.by_name[name],
                            f"the agent went back to session {name} at #{r.version}")
        elif name is not None:
            self._name_current(name)
        label = f"agent session {name}" if name else "agent session"
        self._marker(r, f"{label} resumed natively ({e.strategy}{after}): it keeps "
                        "what it received before")

    def _bound(self, r: Recorded, e: NativeSessionBound) -> None:
        name = e.native_session_id
        if name == self.names[self.segment]:
            return
        if name in self.by_name:
            self._return_to(self.by_name[name],
                            f"the agent went back to session {name} at #{r.version}")
            self._marker(r, f"agent session {name} bound again: it keeps what it "
                            "received before")
        elif self.names[self.segment] is None:
            self._name_current(name)
        else:
            self._fresh(r, name, "bound without a resume")

    def _injected(self, r: Recorded, e: HistoryInjected) -> None:
        native = e.native_session_id
        current = self.names[self.segment]
        if (native is not None and current not in (None, native)) or self._has_messages():
            self._fresh(r, native, "not recorded; it got history injected")
        elif native is not None and current is None:
            self._name_current(native)
        note = (f"{e.message_count} message{'s' if e.message_count != 1 else ''}, "
                f"{e.tokens} tokens, {e.format}, log #{e.from_version}..#{e.to_version}")
        last = self.slots[-1] if self.slots else None
        if (last is not None and last.kind == "summary" and last.segment == self.segment
                and last.covers is not None and last.covers[0] == e.from_version):
            self.slots.pop()  # the summary is part of this text
            note += f"; includes the summary recorded at #{last.version}"
        self.enter_block(r, "injection", e.text, (e.from_version, e.to_version), note)
        self._settle_fresh(True)
        if e.message_count:
            self._deliver_held(r, e.to_version)

    def _deliver_held(self, r: Recorded, after: int) -> None:
        """Messages newer than the injection's range were left out of it as the
        message being sent now: the agent receives them right after it."""
        held = []
        for s in reversed(self.slots):  # newest first: stop at the injection's range
            if s.version <= after:
                break
            if s.kind == "message" and s.version < r.version and s.segment != self.segment:
                held.append(s)
        for s in reversed(held):
            self._append_message(_Slot(
                version=s.version, at=s.at, kind="message", text=s.text, segment=self.segment,
                role=s.role, message_id=s.message_id, message=s.message,
                note=f"sent after the injection at #{r.version}"))

    def _summary(self, r: Recorded, e: SummaryRecorded) -> None:
        note = (f"{e.message_count} messages summarized, {e.tokens} tokens, "
                f"log #{e.from_version}..#{e.to_version}"
                + (f", by {e.summarizer}" if e.summarizer else ""))
        self._replaced(r, e.from_version, e.to_version, e.text, note,
                       f"replaced by the summary at #{r.version}")

    def _compacted(self, r: Recorded, e: HistoryCompacted) -> None:
        """A compaction: for the model, the range is the summary from here on."""
        plural = "s" if e.message_count != 1 else ""
        note = (f"compacted here: {e.message_count} message{plural} -> summary "
                f"({e.tokens_before} -> {e.tokens_after} tokens), "
                f"log #{e.from_version}..#{e.to_version}"
                + (f", by {e.summarizer}" if e.summarizer else "")
                + (f" ({e.reason})" if e.reason else ""))
        self._replaced(r, e.from_version, e.to_version, e.text, note,
                       f"compacted into the summary at #{r.version}")

    def _rewound(self, r: Recorded, e: HistoryRewound) -> None:
        """A rewind: what came after its message is no longer the agent's (omitted
        here; the user's view shows it struck)."""
        kept = [s for s in self.slots if s.version <= e.to_version]
        for s in self.slots[len(kept):]:
            if s.kind == "message" and s.segment in self.received:
                self.received[s.segment] -= 1
        self.slots = kept
        reason = f" ({e.reason})" if e.reason else ""
        self._marker(r, f"rewound to message {e.to_message_id}{reason}: the {e.abandoned} "
                        "later messages are abandoned; the agent continues from it")

    def _replaced(self, r: Recorded, low: int, high: int, text: str, note: str,
                  why: str) -> None:
        for s in reversed(self.slots):  # newest first: nothing older than `low` is inside
            if s.version < low:
                break
            if s.segment != self.segment or s.gone is not None:
                continue
            inside = (s.kind == "message" and s.version <= high) or (
                s.covers is not None and low <= s.covers[0] and s.covers[1] <= high)
            if inside:
                s.gone = why
        self.enter_block(r, "summary", text, (low, high), note)

    def _retracted(self, r: Recorded, e: MessageRetracted) -> None:
        """An SDK's pop: the message leaves the live history (contexts skip it from
        here on); the entry stays, marked, and a marker says where it happened."""
        reason = f" ({e.reason})" if e.reason else ""
        for s in reversed(self.slots):  # a pop takes the newest: found at once
            if s.kind == "message" and s.message_id == e.message_id and s.gone is None:
                s.gone = f"withdrawn at #{r.version}{reason}"
                if s.message is not None:
                    self.retracted.append(s.message)
                break
        self._marker(r, f"message {e.message_id} withdrawn{reason}")

    def _cleared(self, r: Recorded, e: ConversationCleared) -> None:
        self.slots = []
        self.received = {}
        self.pending_fresh = None
        self.failures = []
        self.epoch_messages = 0
        name = self.names[self.segment]
        self.left.clear()
        self.segment = len(self.names)
        self.names[self.segment] = name
        self.starts[self.segment] = r.version
        if name is not None:
            self.by_name[name] = self.segment
        reason = f" ({e.reason})" if e.reason else ""
        self._marker(r, f"conversation cleared{reason}: the agent's context starts empty")

    def enter_block(self, r: Recorded, kind: EntryKind, text: str,
                    covers: tuple[int, int] | None, note: str | None) -> None:
        """An injected block (history, summary, ...) enters the current session here."""
        self.slots.append(_Slot(version=r.version, at=r.event.at, kind=kind, text=text,
                                segment=self.segment, covers=covers, note=note))

    # ------------------------------------------------------------------ result

    def finish(self, key: str, version: int, evicted: dict[int, int | None] | None = None,
               memory_cap: int = DEFAULT_CAP) -> ConversationView:
        """The view; `evicted` is the memory projection's answer for each block
        (its version: the version that evicted it, None while live). The pairing
        repairs of what is live are marked (convlog.projections.repair_marks)."""
        self._settle_fresh(False)
        entries = []
        for s in self.slots:
            gone = s.gone if s.segment == self.segment else (
                s.gone or self.left.get(s.segment, "in an earlier agent session"))
            end = (evicted or {}).get(s.version) if s.kind == "memory" else None
            if gone is None and end is not None:
                gone = (f"evicted at #{end} (a block lives for its own turn)" if memory_cap == 0
                        else f"evicted at #{end} (at most {memory_cap} blocks stay live)")
            entries.append(ViewEntry(
                version=s.version, at=s.at, kind=s.kind, text=s.text, role=s.role,
                message_id=s.message_id, session=self.names[s.segment],
                live=gone is None and s.kind != "marker", gone=gone, covers=s.covers,
                note=s.note, alert=s.alert))
        entries = mark_repairs(entries, [s.message for s in self.slots], self.retracted,
                               imported=self.imported)
        return ConversationView(key=key, view="agent", version=version, entries=entries,
                                session=self.names[self.segment],
                                since=self.starts[self.segment])


def _message_slot(r: Recorded, e: MessageAppended, segment: int) -> _Slot:
    text = render_content(e.content)
    calls = [f"[tool call {c.name}({shorten(c.arguments, 60)})]" for c in e.tool_calls]
    if calls:
        text = "\n".join(filter(None, [text, *calls]))
    return _Slot(version=r.version, at=e.created_at or e.at, kind="message", text=text,
                 segment=segment, role=e.role, message_id=e.message_id,
                 message=e)


def agent_view(key: str, recorded: Iterable[Recorded], at: Moment | None = None, *,
               memory_cap: int = DEFAULT_CAP) -> ConversationView:
    """What the agent received, in order, since the latest clear (see the module doc).
    `memory_cap`: the `max_injected_blocks_in_history` at the start; the policies the
    log recorded (MemoryPolicySet) apply from their position on."""
    events = cut(recorded, at)
    walk = AgentWalk()
    for r in events:
        walk.feed(r)
    return walk.finish(key, events[-1].version if events else 0,
                       lifetimes(events, memory_cap), policy_cap(events, memory_cap))
