"""Every write of a process goes through one writer: the tiered resume, context
summaries, memory blocks, retractions, injections and plain appends, run at the same
time from several threads of one process, all hold the process's write lock while
they write, and all pass the host's redaction before anything is stored."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.conversation import conversation_id
from convlog.domain.events import MemoryInjected, ResumeFailed, SummaryRecorded
from convlog.services.log import application

SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
REDACTED = "[REDACTED:github-token]"
WORKERS = 6


class WriteProbe:
    """Wraps the store's one insert (our own port): notes, for every write, whether
    the calling thread held the log's write lock. (The lock is held by each attempt
    of a write, not across a conflict's reload: ConversationStore.execute.)"""

    def __init__(self, log: convlog.ConversationLog):
        self.held: list[bool] = []
        store: Any = application(log).store
        write = store._save
        lock: Any = application(log).write_lock

        def save(*args: Any, **kwargs: Any) -> Any:
            self.held.append(bool(lock._is_owned()))
            return write(*args, **kwargs)

        store._save = save


@pytest.fixture
def log(tmp_path: Path) -> Iterator[convlog.ConversationLog]:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}", redact=convlog.redact_secrets,
                      preload_tokenizer=False, context_window_depth=0) as opened:
        yield opened


def summarize(previous: str | None, messages: list[Any]) -> str:
    return f"the user pasted {SECRET} in {len(messages)} messages"


def seed(log: convlog.ConversationLog, key: str) -> None:
    conv = log.conversation(key, user="u1")
    conv.bind_native_session(f"native-{key}")  # the native tier gets called, and fails
    for i in range(12):
        conv.append_turn([convlog.user(f"question {i} " + "words " * 30),
                          convlog.assistant(f"answer {i} " + "words " * 30)])


def failing_tier(call: convlog.TierCall) -> Any:
    raise ConnectionError(f"cannot reach the agent with token {SECRET}")


def stored_bytes(log: convlog.ConversationLog, keys: list[str]) -> bytes:
    return b"".join(row.state for key in keys
                    for row in application(log).store.recorder.select_events(conversation_id(key)))


def run_together(jobs: list[Callable[[], Any]]) -> None:
    """Start every job at the same instant, each in its own thread; re-raise the
    first failure."""
    barrier = threading.Barrier(len(jobs))
    errors: list[BaseException] = []

    def run(job: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            job()
        except BaseException as exc:  # collected, re-raised in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_concurrent_resume_summary_memory_and_appends_pass_the_same_steps(
        log: convlog.ConversationLog) -> None:
    keys = [f"k{i}" for i in range(WORKERS)]
    for key in keys:
        seed(log, key)
    probe = WriteProbe(log)
    budget = convlog.Budget(tokens=400, messages=4)

    def resume(key: str) -> Callable[[], Any]:
        return lambda: log.resume(key, [
            convlog.Tier("session/resume", failing_tier, fresh=False),
            convlog.Tier("session/new", lambda call: "fresh-" + key)],
            budget=budget, summarizer=summarize)

    jobs: list[Callable[[], Any]] = [
        resume("k0"),
        lambda: log.context("k1", budget=budget, summarizer=summarize),
        lambda: log.inject_memory("k2", f"the deploy key is {SECRET}", ["m1"]),
        lambda: log.append_turn("k3", [convlog.user(f"again {SECRET}")]),
        lambda: log.retract_last("k4"),
        lambda: asyncio.run(_resume_async(log, "k5", budget)),
    ]
    run_together(jobs)

    assert probe.held and all(probe.held), (
        f"{probe.held.count(False)} of {len(probe.held)} writes did not hold the lock")
    assert SECRET.encode() not in stored_bytes(log, keys)
    failed = [r.event for r in log.events("k0") if isinstance(r.event, ResumeFailed)]
    assert failed and REDACTED in (failed[0].error or "")
    for key in ("k0", "k1", "k5"):
        [summary] = [r.event for r in log.events(key) if isinstance(r.event, SummaryRecorded)]
        assert REDACTED in summary.text
        assert summary.tokens == application(log).builder().count(summary.text)
    [block] = [r.event for r in log.events("k2") if isinstance(r.event, MemoryInjected)]
    assert block.text.endswith(f"the deploy key is {REDACTED}")
    assert log.live_memory("k2")[0].text == block.text


async def _resume_async(log: convlog.ConversationLog, key: str,
                        budget: convlog.Budget) -> convlog.ResumeOutcome:
    async def summarize_async(previous: str | None, messages: list[Any]) -> str:
        return summarize(previous, messages)

    alog = convlog.AsyncConversationLog(log)
    return await alog.resume(key, [
        convlog.Tier("session/resume", failing_tier, fresh=False),
        convlog.Tier("session/new", lambda call: "fresh-" + key)],
        budget=budget, summarizer=summarize_async)
