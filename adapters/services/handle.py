"""A conversation of a log, addressed by its key: the handle hosts keep around.

Every method delegates to the `ConversationLog` with this handle's key, so a host can
pass one object around instead of a log and a key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from convlog.domain.conversation import Conversation, check_key
from convlog.domain.events import MessageAppended, Recorded
from convlog.domain.messages import Message
from convlog.domain.retention import RetentionPolicy
from convlog.projections.context import Budget
from convlog.projections.replay_views import ConversationView
from convlog.projections.timeline import TimelineRow
from convlog.projections.transcript import TranscriptLine
from convlog.projections.view_diff import ViewDiff
from convlog.services.compaction import Compaction, CompactionPlan
from convlog.services.context import Context, Summarizer
from convlog.services.fork import Forked
from convlog.services.memory import MemoryBlock
from convlog.services.resume.run import ResumeOutcome, Tier
from convlog.services.retention import RetentionInForce
from convlog.services.rewind import Rewound
from convlog.services.summary import PAUSED_AFTER, ConversationSummary

if TYPE_CHECKING:
    from convlog.services.log import ConversationLog
    from convlog.services.results import AppendResult, ConversationInfo


class ConversationHandle:
    """One conversation of a log, addressed by its key."""

    def __init__(self, log: ConversationLog, key: str):
        self.log = log
        self.key = check_key(key)

    def __repr__(self) -> str:
        return f"<Conversation {self.key!r}>"

    def append_turn(self, messages: Iterable[Message]) -> AppendResult:
        return self.log.append_turn(self.key, list(messages))

    def append(self, message: Message) -> AppendResult:
        return self.log.append(self.key, message)

    def bind_native_session(self, native_session_id: str, agent: str | None = None
                            ) -> AppendResult:
        return self.log.bind_native_session(self.key, native_session_id, agent)

    def archive(self, reason: str | None = None) -> AppendResult:
        return self.log.archive(self.key, reason)

    def reactivate(self) -> AppendResult:
        return self.log.reactivate(self.key)

    def clear(self, reason: str | None = None) -> AppendResult:
        return self.log.clear(self.key, reason)

    def retract_last(self, reason: str | None = None) -> MessageAppended | None:
        return self.log.retract_last(self.key, reason)

    def compact(self, summarizer: Summarizer | str, *, keep_last: int = 10,
                reason: str | None = None, summarizer_name: str | None = None,
                model: str | None = None, through: str | None = None
                ) -> Compaction | None:
        """The history before the newest `keep_last` messages, replaced by a summary
        for the model (see `ConversationLog.compact`)."""
        return self.log.compact(self.key, summarizer, keep_last=keep_last, reason=reason,
                                summarizer_name=summarizer_name, model=model, through=through)

    def rewind(self, to: str, *, reason: str | None = None) -> Rewound | None:
        """Back to message `to`, for the model (see `ConversationLog.rewind`)."""
        return self.log.rewind(self.key, to, reason=reason)

    def fork(self, *, at: str, key: str, user: str | None = None, agent: str | None = None,
             channel: str | None = None, title: str | None = None,
             metadata: dict[str, Any] | None = None) -> Forked:
        """Record a new conversation `key` continuing this one's history after message
        `at`, by reference (see `ConversationLog.fork`); this one is unaffected."""
        return self.log.fork(self.key, at=at, new_key=key, user=user, agent=agent,
                             channel=channel, title=title, metadata=metadata)

    def compaction_plan(self, *, keep_last: int = 10) -> CompactionPlan:
        return self.log.compaction_plan(self.key, keep_last=keep_last)

    @property
    def state(self) -> Conversation:
        return self.log.state(self.key)

    def info(self) -> ConversationInfo:
        return self.log.info(self.key)

    def summary(self, *, paused_after: float = PAUSED_AFTER) -> ConversationSummary:
        return self.log.summary(self.key, paused_after=paused_after)

    def events(self, *, after: int = 0, upto: int | None = None, desc: bool = False,
               limit: int | None = None) -> list[Recorded]:
        return self.log.events(self.key, after=after, upto=upto, desc=desc, limit=limit)

    def messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return self.log.messages(self.key, last=last)

    def live_messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return self.log.live_messages(self.key, last=last)

    def transcript(self) -> list[TranscriptLine]:
        return self.log.transcript(self.key)

    def timeline(self, *, until: int | datetime | str | None = None) -> list[TimelineRow]:
        return self.log.timeline(self.key, until=until)

    def view(self, view: str = "user", *, at: int | datetime | str | None = None
             ) -> ConversationView:
        """``"user"``: what the user saw; ``"agent"``: what the agent received."""
        return self.log.view(self.key, view, at=at)

    def diff(self, *, at: int | datetime | str | None = None) -> ViewDiff:
        return self.log.diff(self.key, at=at)

    def inject_memory(self, text: str, memory_ids: Sequence[str] = (), *,
                      block_id: str | None = None, native_session_id: str | None = None
                      ) -> MemoryBlock:
        return self.log.inject_memory(self.key, text, memory_ids, block_id=block_id,
                                      native_session_id=native_session_id)

    def memory_cooldown(self) -> dict[str, int]:
        return self.log.memory_cooldown(self.key)

    def set_memory_policy(self, *, max_injected_blocks_in_history: int,
                          context_window_depth: int) -> tuple[int, int]:
        """This conversation's own memory policy from here on (see the log's)."""
        return self.log.set_memory_policy(
            self.key, max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth)

    def live_memory(self, *, at: int | None = None) -> list[MemoryBlock]:
        return self.log.live_memory(self.key, at=at)

    def set_retention_policy(self, policy: RetentionPolicy) -> bool:
        """This conversation's own retention policy from here on (see the log's)."""
        return self.log.set_retention_policy(self.key, policy)

    def retention_policy(self) -> RetentionInForce:
        """The retention policy in force for this conversation, and whose it is."""
        return self.log.retention_policy(self.key)

    def context(self, *, budget: Budget | None = None, format: str = "xml",
                exclude: Iterable[str] = (), summarizer: Summarizer | None = None,
                summarizer_name: str | None = None, model: str | None = None) -> Context:
        return self.log.context(self.key, budget=budget, format=format, exclude=exclude,
                                summarizer=summarizer, summarizer_name=summarizer_name,
                                model=model)

    def resume(self, tiers: Sequence[Tier], *, budget: Budget | None = None,
               format: str = "xml", exclude: Iterable[str] = (),
               summarizer: Summarizer | None = None, summarizer_name: str | None = None,
               model: str | None = None) -> ResumeOutcome:
        return self.log.resume(self.key, tiers, budget=budget, format=format,
                               exclude=exclude, summarizer=summarizer,
                               summarizer_name=summarizer_name, model=model)
