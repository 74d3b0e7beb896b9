"""Running the tiers of a resume: ONE plan, and a blocking and an asyncio driver.

The plan (`_plan`) is the whole algorithm: for each tier, record the attempt, call
the tier, record how it went, stop at the first success, and when a fresh tier
worked build the history and record its injection (at most once per native session).
It is a generator that yields each step it needs done (`_Blocking` work on the log,
`_CallTier`, `_Build`) and gets each result (or exception) back, so it never decides
HOW a step runs: the blocking driver does it in place, the asyncio driver off the
event loop (`asyncio.to_thread`), awaiting coroutine tiers and summarizers. A rule of
the resume is therefore written once, and cannot drift between the two APIs.
"""

from __future__ import annotations

import concurrent.futures
import inspect
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from convlog.domain.errors import InvalidInput
from convlog.services.context import AsyncSummarizer, Context, Summarizer
from convlog.services.resume.run import ResumeOutcome, ResumeRun, Tier, TierCall, TierFailed


@dataclass(frozen=True)
class _Blocking:
    """Work on the log (a write, a state read): run in place, or in a worker thread."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass(frozen=True)
class _CallTier:
    tier: Tier
    call: TierCall


@dataclass(frozen=True)
class _Build:
    """The context to inject; `summarizer` None: without a new summary."""

    run: ResumeRun
    summarizer: Summarizer | AsyncSummarizer | None
    summarizer_name: str | None


Step = _Blocking | _CallTier | _Build
Plan = Generator[Step, Any, ResumeOutcome]


def _ms(run: ResumeRun, started: float) -> float:
    """Milliseconds since `started` on the run's clock (the log's: a test gives one its
    tiers move, so a recorded latency can be checked exactly)."""
    return (run.clock.elapsed() - started) * 1000


def _plan(run: ResumeRun, tiers: Sequence[Tier],
          summarizer: Summarizer | AsyncSummarizer | None,
          summarizer_name: str | None) -> Plan:
    yield _Blocking(run.begin, ())
    for tier in tiers:
        call = yield _Blocking(run.start, (tier,))
        if call is None:
            continue
        started = run.clock.elapsed()
        try:
            result = yield _CallTier(tier, call)
        except Exception as exc:
            yield _Blocking(run.failed, (tier, exc, _ms(run, started)))
            continue
        latency = _ms(run, started)
        if result is False:
            yield _Blocking(run.failed, (tier, TierFailed("error", "the tier reported failure"),
                                         latency))
            continue
        native = yield _Blocking(run.succeeded, (tier, result, latency))
        if not tier.is_fresh:
            return run.outcome(tier, native)
        if not (yield _Blocking(run.needs_injection, (native,))):
            return run.outcome(tier, native, already=True)
        try:
            context: Context = yield _Build(run, summarizer, summarizer_name)
        except Exception:  # the host's summarizer failed: inject without a new summary
            context = yield _Build(run, None, None)
        if context.message_count == 0 and not context.summarized:
            return run.outcome(tier, native)  # nothing to remember: nothing injected
        if not (yield _Blocking(run.injected, (native, context))):  # another process won
            return run.outcome(tier, native, already=True)
        return run.outcome(tier, native, context)
    return run.outcome(None, run.bound)


def check_tiers(tiers: Sequence[Tier], *, sync: bool) -> None:
    """Everything that can be checked before a tier runs is checked here."""
    if not tiers:
        raise InvalidInput("give at least one tier", field="tiers")
    for i, tier in enumerate(tiers):
        if not isinstance(tier, Tier):
            raise InvalidInput(f"expected a convlog.Tier, got {type(tier).__name__}",
                               field=f"tiers[{i}]")
        if sync and tier.is_async:
            raise InvalidInput("async tiers need the async API (convlog.open_async)",
                               field=f"tier {tier.strategy!r}.run")


def _next(plan: Plan, answer: Any, failure: Exception | None) -> Step | ResumeOutcome:
    """The plan's next step, given the last one's answer (or its failure, thrown in
    where the plan asked for it); the outcome when the plan is done."""
    try:
        return plan.send(answer) if failure is None else plan.throw(failure)
    except StopIteration as done:
        outcome: ResumeOutcome = done.value
        return outcome


def _timed_out(tier: Tier) -> TimeoutError:
    return TimeoutError(f"tier {tier.strategy!r} did not answer within {tier.timeout:g}s")


# ------------------------------------------------------------------ blocking


def resume(run: ResumeRun, tiers: Sequence[Tier], summarizer: Summarizer | None = None,
           summarizer_name: str | None = None) -> ResumeOutcome:
    check_tiers(tiers, sync=True)
    plan = _plan(run, tiers, summarizer, summarizer_name)
    step = _next(plan, None, None)
    while not isinstance(step, ResumeOutcome):
        try:
            answer, failure = _do(step), None
        except Exception as exc:  # handed to the plan, which decides what it means
            answer, failure = None, exc
        step = _next(plan, answer, failure)
    return step


def _do(step: Step) -> Any:
    if isinstance(step, _Blocking):
        return step.fn(*step.args)
    if isinstance(step, _CallTier):
        result = _call_with_timeout(step.tier, step.call)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()  # never awaited: say so instead of a runtime warning
            raise TierFailed("error", "the tier returned an awaitable: async tiers need "
                                      "convlog.open_async()")
        return result
    run = step.run
    summarizer: Any = step.summarizer
    return run.builder.build(run.key, run.budget, run.format, run.exclude, summarizer,
                             step.summarizer_name)


def _call_with_timeout(tier: Tier, call: TierCall) -> Any:
    if tier.timeout is None:
        return tier.run(call)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                 thread_name_prefix="convlog-tier")
    try:
        return pool.submit(tier.run, call).result(timeout=tier.timeout)
    except concurrent.futures.TimeoutError:
        raise _timed_out(tier) from None
    finally:
        pool.shutdown(wait=False)  # a hung tier keeps its thread; the host goes on


# ------------------------------------------------------------------- asyncio


async def resume_async(run: ResumeRun, tiers: Sequence[Tier],
                       summarizer: Summarizer | AsyncSummarizer | None = None,
                       summarizer_name: str | None = None) -> ResumeOutcome:
    check_tiers(tiers, sync=False)
    plan = _plan(run, tiers, summarizer, summarizer_name)
    step = _next(plan, None, None)
    while not isinstance(step, ResumeOutcome):
        try:
            answer, failure = await _do_async(step), None
        except Exception as exc:
            answer, failure = None, exc
        step = _next(plan, answer, failure)
    return step


async def _do_async(step: Step) -> Any:
    import asyncio  # here, not at import time: a synchronous host never pays for it

    if isinstance(step, _Blocking):
        return await asyncio.to_thread(step.fn, *step.args)
    if isinstance(step, _CallTier):
        try:
            return await asyncio.wait_for(_run_async(step.tier, step.call), step.tier.timeout)
        except TimeoutError:
            raise _timed_out(step.tier) from None
    run = step.run
    return await run.builder.build_async(run.key, run.budget, run.format, run.exclude,
                                         step.summarizer, step.summarizer_name)


async def _run_async(tier: Tier, call: TierCall) -> Any:
    """Await a coroutine tier on the loop; run a plain one in a worker thread, and await
    what it returns if that is awaitable (``lambda c: client.resume(c)``)."""
    import asyncio

    if tier.is_async:
        return await tier.run(call)
    result = await asyncio.to_thread(tier.run, call)
    if inspect.isawaitable(result):
        return await result
    return result
