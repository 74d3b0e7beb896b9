"""The tiered-resume bookkeeping over HTTP, for hosts that run the tiers themselves.

A host in another language cannot hand convlog its tier callables, so it reports:
`attempts` before trying a tier, `outcomes` after (ok, or the reason class), and when
a fresh (empty) agent session is what worked, asks for the `injection`: convlog
builds the history to the budget, records exactly what it handed out
(HistoryInjected), and hands it out at most once per native session, as
`convlog.services.resume.run` does for Python hosts: the check runs inside the write, so
of two servers asked at the same instant for the same native session only one answers
with the history.
Telemetry then reads the same events whichever way they came.

The rule of every resume holds here as in the library (`check_resumable`): a key
nothing was recorded under is a 404 and stays unknown (a resume never starts a
conversation), an archived conversation is a 409 `conversation-archived`, and
nothing is recorded for either.
"""

from __future__ import annotations

import threading

import convlog
from convlog.domain.conversation import BindNativeSession, Command, RequireUser, check_resumable
from convlog.domain.errors import InvalidInput
from convlog.http.endpoint import Call, Endpoint
from convlog.http.schema import AttemptIn, InjectionIn, OutcomeIn
from convlog.http.schema import Injection as InjectionOut
from convlog.projections.context import Budget
from convlog.services.jsonlines import (
    ResumeAttemptedLine,
    ResumeFailedLine,
    ResumeSucceededLine,
    to_command,
)

KEY = "/v1/conversations/{key}/resume"


async def attempt(call: Call) -> convlog.AppendResult:
    body = await call.body(AttemptIn)
    command = to_command(ResumeAttemptedLine(strategy=body.strategy,
                                             native_session_id=body.native_session_id))
    key, first = await _existing(call)
    return await call.write(key, [*first, command])


async def _existing(call: Call) -> tuple[str, list[Command]]:
    """The path's key, if it exists and this caller may write it (404 otherwise: a
    resume never starts a conversation), and the guard to write with it."""
    key = await call.readable()
    user = call.principal.user
    return key, [] if user is None else [RequireUser(user=user)]


async def outcome(call: Call) -> convlog.AppendResult:
    body = await call.body(OutcomeIn)
    commands: list[Command]
    if body.ok:
        if body.reason is not None or body.error is not None:
            raise InvalidInput("a successful outcome has no reason or error",
                               field="reason" if body.reason is not None else "error")
        commands = [to_command(ResumeSucceededLine(
            strategy=body.strategy, native_session_id=body.native_session_id,
            latency_ms=body.latency_ms, fresh=body.fresh))]
        if body.native_session_id:  # the session that worked is this conversation's now
            commands.append(BindNativeSession(native_session_id=body.native_session_id))
    else:
        if body.reason is None:
            raise InvalidInput("a failed outcome needs its reason class", field="reason")
        commands = [to_command(ResumeFailedLine(
            strategy=body.strategy, reason=body.reason, error=body.error,
            native_session_id=body.native_session_id, latency_ms=body.latency_ms))]
    if body.latency_ms is not None and not 0 <= body.latency_ms < float("inf"):
        raise InvalidInput("must be a finite number >= 0", field="latency_ms")
    key, first = await _existing(call)
    return await call.write(key, [*first, *commands])


_INJECTING = threading.Lock()


def _inject(log: convlog.ConversationLog, key: str, body: InjectionIn) -> InjectionOut:
    with _INJECTING:  # one context build at a time here; the write itself decides
        return _inject_once(log, key, body)


def _inject_once(log: convlog.ConversationLog, key: str, body: InjectionIn) -> InjectionOut:
    b = body.budget
    budget = Budget(tokens=b.tokens, messages=b.messages, chars=b.chars)
    state = log.state(key)
    check_resumable(state)  # before the context is built: an archived one gets nothing
    native = body.native_session_id
    if native is not None and native in state.injected_native_session_ids:
        return InjectionOut(injected=False, already_injected=True)
    context = log.context(key, budget=budget, format=body.format, exclude=body.exclude,
                          model=body.model)
    if context.message_count == 0 and not context.summarized:
        return InjectionOut(injected=False, already_injected=False)  # nothing to remember
    if not log.record_injection(key, context, native):  # another server won the race
        return InjectionOut(injected=False, already_injected=True)
    return InjectionOut(injected=True, already_injected=False, context=context)


async def injection(call: Call) -> InjectionOut:
    body = await call.body(InjectionIn)
    key = await call.readable()
    return await call.run(_inject, call.log, key, body)


ENDPOINTS = [
    Endpoint("POST", KEY + "/attempts", attempt, "Record that a resume tier is being tried",
             operation_id="recordResumeAttempt",
             body=AttemptIn, answer=convlog.AppendResult, tag="resume"),
    Endpoint("POST", KEY + "/outcomes", outcome, "Record how a resume tier went",
             operation_id="recordResumeOutcome",
             body=OutcomeIn, answer=convlog.AppendResult, tag="resume"),
    Endpoint("POST", KEY + "/injection", injection,
             "A fresh agent session needs the history: get it (recorded, once per "
             "native session)",
             operation_id="requestInjection", body=InjectionIn, answer=InjectionOut, tag="resume"),
]
