"""Tiered resume: try the agent's own resume first, inject history only if it failed.

The host passes its tiers in order, e.g. native resume -> load -> new session. For
each tier convlog records ResumeAttempted, calls it (with a timeout), records
ResumeSucceeded or ResumeFailed (reason class, error, latency), and stops at the
first success. Only a *fresh* tier (a new, empty agent session) gets history: convlog
builds the context, records HistoryInjected with the exact text, and returns it; at
most once per native session, and never after a native tier worked.

Routing: a native tier is given the native session id bound to THIS conversation
(never "some session of the same agent"); with none bound it is not called, and the
attempt is recorded as failed with reason ``not_found``.

A tier is a callable taking a `TierCall` and returning: a string (the native session
id it resumed or created), None/True (success), or False (failure); or raising:
`TierFailed(reason, message)` for a classified failure, anything else is classified
from the exception (TimeoutError -> timeout, NotImplementedError -> unsupported,
LookupError/FileNotFoundError -> not_found, ConnectionError -> transient; JSON-RPC
codes -32601 -> unsupported, -32002 -> not_found), and otherwise ``error``. A tier
never crashes the host: every failure becomes a recorded outcome.

This module holds the tiers' types and the bookkeeping of one resume (`ResumeRun`);
convlog.services.resume.tiers runs them, blocking or as coroutines, with one plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from convlog.domain.conversation import (
    BindNativeSession,
    Command,
    Conversation,
    RecordFact,
    check_resumable,
    conversation_id,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    REASON_CLASSES,
    HistoryInjected,
    ReasonClass,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    is_fresh_strategy,
)
from convlog.projections.context import Budget
from convlog.projections.formats import check_format
from convlog.services.context import Context, ContextBuilder, is_async_callable
from convlog.services.writer import Writer

MAX_ERROR_CHARS = 500

_NOW = datetime(1970, 1, 1, tzinfo=UTC)  # facts are stamped when recorded


def record_injection(writer: Writer, key: str, context: Context,
                     native: str | None) -> bool:
    """Record HistoryInjected for `native` unless that native session already got one.

    The check runs inside the write: the store re-decides on the state it re-reads
    after a version conflict, so of two processes injecting into the same native
    session at the same instant (two HTTP servers, two hosts on one PostgreSQL) only
    one records, and the other learns it got nothing (False). With no native session
    id there is nothing to deduplicate on: the injection is always recorded. An
    unknown or archived conversation gets nothing, whether or not the native session
    already had it (`check_resumable`, decided inside the write too).
    """
    event = HistoryInjected(
        at=_NOW, from_version=context.from_version, to_version=context.to_version,
        message_count=context.message_count, tokens=context.tokens, format=context.format,
        text=context.text, native_session_id=native)

    def once(state: Conversation, _fresh: bool) -> list[Command]:
        check_resumable(state)
        if native is not None and native in state.injected_native_session_ids:
            return []
        return [RecordFact(event=event)]

    _state, saved = writer.decide(key, once)
    return bool(saved)


class TierFailed(Exception):
    """Raise from a tier to say why it failed, in one of the reason classes."""

    def __init__(self, reason: ReasonClass, message: str = ""):
        if reason not in REASON_CLASSES:
            raise InvalidInput(f"unknown reason {reason!r}; expected one of "
                               f"{', '.join(REASON_CLASSES)}", field="reason")
        self.reason: ReasonClass = reason
        super().__init__(message or reason)


@dataclass(frozen=True)
class TierCall:
    """What a tier is told: the conversation and the native session bound to it."""

    key: str
    strategy: str
    native_session_id: str | None


@dataclass(frozen=True)
class Tier:
    strategy: str
    run: Callable[[TierCall], Any]
    fresh: bool | None = None
    """True for a tier that starts an EMPTY agent session (it gets the history).
    None: inferred from the strategy name (one ending in "new" is fresh)."""
    timeout: float | None = 30.0

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, str) or not self.strategy.strip():
            raise InvalidInput("must be a non-empty string", field="tier.strategy")
        if not callable(self.run):
            raise InvalidInput("must be callable", field=f"tier {self.strategy!r}.run")
        if self.timeout is not None and self.timeout <= 0:
            raise InvalidInput("must be positive (or None)", field="tier.timeout")

    @property
    def is_fresh(self) -> bool:
        if self.fresh is not None:
            return self.fresh
        return is_fresh_strategy(self.strategy)

    @property
    def is_async(self) -> bool:
        return is_async_callable(self.run)


@dataclass(frozen=True)
class Attempt:
    strategy: str
    ok: bool
    native_session_id: str | None
    latency_ms: float | None
    reason: ReasonClass | None = None
    error: str | None = None


@dataclass(frozen=True)
class ResumeOutcome:
    """What happened. `injection` is the history to place after the system prompt
    and before the user's message; None when a native tier worked (or the history
    was already injected into this native session, see `already_injected`)."""

    ok: bool
    strategy: str | None
    native_session_id: str | None
    fresh: bool
    attempts: list[Attempt] = field(default_factory=list)
    injection: Context | None = None
    already_injected: bool = False


def classify(exc: BaseException) -> ReasonClass:
    if isinstance(exc, TierFailed):
        return exc.reason
    if isinstance(exc, TimeoutError):  # asyncio's and concurrent.futures' too (3.11+)
        return "timeout"
    code = getattr(exc, "code", None)
    if isinstance(exc, NotImplementedError) or code == -32601:
        return "unsupported"
    if isinstance(exc, LookupError | FileNotFoundError) or code == -32002:
        return "not_found"
    if isinstance(exc, ConnectionError):
        return "transient"
    return "error"


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:MAX_ERROR_CHARS]


class ResumeRun:
    """The bookkeeping of one resume; the sync and async drivers share it."""

    def __init__(self, builder: ContextBuilder, key: str, budget: Budget, fmt: str,
                 exclude: frozenset[str]):
        self.builder = builder
        self.writer = builder.writer
        self.clock = builder.writer.store.clock
        """Times each tier (`elapsed`): the store's clock (convlog.domain.clock)."""
        self.key = key
        self.budget = budget
        self.format = fmt
        self.exclude = exclude
        check_format(fmt)  # before any tier runs: a bad format must not waste a session
        self.attempts: list[Attempt] = []
        self.bound: str | None = None

    def begin(self) -> None:
        """Before any tier runs (no agent session is wasted on it): the conversation
        must exist and not be archived (`check_resumable`); learn its native session."""
        state = self.writer.store.load(conversation_id(self.key), self.key)
        check_resumable(state)
        self.bound = state.native_session_id

    def _record(self, *commands: Command) -> None:
        self.writer.execute(self.key, commands)

    def start(self, tier: Tier) -> TierCall | None:
        """Record the attempt; None when the tier must not be called."""
        native = None if tier.is_fresh else self.bound
        self._record(RecordFact(event=ResumeAttempted(at=_NOW, strategy=tier.strategy,
                                                      native_session_id=native)))
        if not tier.is_fresh and native is None:
            self.failed(tier, TierFailed("not_found", "no native session is bound to this "
                                         "conversation"), None)
            return None
        return TierCall(key=self.key, strategy=tier.strategy, native_session_id=native)

    def succeeded(self, tier: Tier, result: Any, latency_ms: float) -> str | None:
        native = result if isinstance(result, str) and result else (
            None if tier.is_fresh else self.bound)
        commands: list[Command] = [RecordFact(event=ResumeSucceeded(
            at=_NOW, strategy=tier.strategy, native_session_id=native,
            latency_ms=round(latency_ms, 3), fresh=tier.is_fresh))]
        if native is not None and native != self.bound:
            commands.append(BindNativeSession(native_session_id=native))
        self._record(*commands)
        self.attempts.append(Attempt(tier.strategy, True, native, round(latency_ms, 3)))
        return native

    def failed(self, tier: Tier, exc: BaseException, latency_ms: float | None) -> None:
        reason, error = classify(exc), _error_text(exc)
        latency = None if latency_ms is None else round(latency_ms, 3)
        native = None if tier.is_fresh else self.bound
        self._record(RecordFact(event=ResumeFailed(
            at=_NOW, strategy=tier.strategy, reason=reason, native_session_id=native,
            error=error, latency_ms=latency)))
        self.attempts.append(Attempt(tier.strategy, False, native, latency, reason, error))

    def needs_injection(self, native: str | None) -> bool:
        state = self.builder.state(self.key)
        return native is None or native not in state.injected_native_session_ids

    def injected(self, native: str | None, context: Context) -> bool:
        """Record the injection; False when another writer injected first."""
        return record_injection(self.writer, self.key, context, native)

    def outcome(self, tier: Tier | None, native: str | None,
                injection: Context | None = None, already: bool = False) -> ResumeOutcome:
        return ResumeOutcome(ok=tier is not None, strategy=tier.strategy if tier else None,
                             native_session_id=native, fresh=bool(tier and tier.is_fresh),
                             attempts=list(self.attempts), injection=injection,
                             already_injected=already)
