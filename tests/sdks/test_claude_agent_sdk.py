"""convlog's `SessionStore` for the Claude Agent SDK beyond the SDK's own suite: real
transcript shapes read as messages (so costs and contexts work), dedupe by uuid,
delete as a new epoch that keeps the history, and a second process's store."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import convlog

pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import get_session_messages_from_store

from convlog.domain.events import MessageAppended
from convlog.integrations.claude_agent_sdk import (
    ConvlogSessionStore,
    conversation_key,
)

KEY: Any = {"project_key": "-home-me-api", "session_id": "5f0c6a4e-0000-4000-8000-000000000001"}
USAGE = {"input_tokens": 12, "output_tokens": 30, "cache_read_input_tokens": 900,
         "cache_creation_input_tokens": 40}


def entry(uuid: str, kind: str, message: Any = None, parent: str | None = None) -> Any:
    found: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": parent,
                             "sessionId": KEY["session_id"],
                             "timestamp": "2026-01-02T03:04:05.000Z", "isSidechain": False}
    if message is not None:
        found["message"] = message
    return found


TRANSCRIPT = [
    entry("u1", "user", {"role": "user", "content": "Where is auth configured?"}),
    entry("a1", "assistant", {"id": "msg_01", "role": "assistant", "model": "claude-sonnet-4-5",
                              "content": [{"type": "thinking", "thinking": "look",
                                           "signature": "s"}],
                              "usage": USAGE}, "u1"),
    entry("a2", "assistant", {"id": "msg_01", "role": "assistant", "model": "claude-sonnet-4-5",
                              "content": [{"type": "tool_use", "id": "toolu_1", "name": "Grep",
                                           "input": {"pattern": "auth"}}],
                              "usage": USAGE}, "a1"),
    entry("u2", "user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "src/auth.py:3"}]}, "a2"),
    entry("a3", "assistant", {"id": "msg_02", "role": "assistant", "model": "claude-sonnet-4-5",
                              "content": [{"type": "text", "text": "In src/auth.py."}],
                              "usage": {"input_tokens": 5, "output_tokens": 7}}, "u2"),
    {"type": "custom-title", "customTitle": "Auth config", "sessionId": KEY["session_id"]},
]


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = ConvlogSessionStore(f"sqlite:///{tmp_path / 'c.db'}")
    yield opened
    opened.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_transcripts_come_back_exactly_and_read_as_messages(store: Any) -> None:
    run(store.append(KEY, TRANSCRIPT))
    assert run(store.load(KEY)) == TRANSCRIPT
    messages = store.log.messages(conversation_key(KEY))
    assert [m.role for m in messages] == ["user", "assistant", "assistant", "user",
                                          "assistant"]
    assert messages[2].content[0].name == "Grep"
    # the title entry: kept for `load` (above), a record, no message (issue 41)
    (title,) = [r.event for r in store.log.events(conversation_key(KEY))
                if getattr(r.event, "record", None) is not None]
    assert title.record == "custom-title" and title.raw == TRANSCRIPT[5]
    text = store.log.context(conversation_key(KEY)).text
    assert "Where is auth configured?" in text and "In src/auth.py." in text
    assert "called tool Grep" in text


def test_usage_repeated_per_content_block_is_counted_once(store: Any) -> None:
    run(store.append(KEY, TRANSCRIPT))
    (row,) = [r for r in store.log.costs(by="model") if r.group == "claude-sonnet-4-5"]
    assert (row.output_tokens, row.cache_read_tokens) == (30 + 7, 900)
    assert row.cost_usd is not None and row.cost_usd > 0


def test_a_retried_batch_is_deduplicated_by_uuid(store: Any) -> None:
    run(store.append(KEY, TRANSCRIPT[:3]))
    run(store.append(KEY, TRANSCRIPT[1:]))  # a retry overlapping what landed
    run(store.append(KEY, [TRANSCRIPT[0], TRANSCRIPT[0]]))  # twice in one batch
    assert run(store.load(KEY)) == TRANSCRIPT
    run(store.append(KEY, [TRANSCRIPT[-1]]))  # no uuid: appended again, as the SDK asks
    assert run(store.load(KEY)) == [*TRANSCRIPT, TRANSCRIPT[-1]]


def test_delete_is_a_new_epoch_and_the_log_keeps_the_history(store: Any) -> None:
    sub = {**KEY, "subpath": "subagents/agent-7"}
    run(store.append(KEY, TRANSCRIPT[:2]))
    run(store.append(sub, TRANSCRIPT[:1]))
    run(store.delete(KEY))
    assert run(store.load(KEY)) is None and run(store.load(sub)) is None
    assert run(store.list_sessions(KEY["project_key"])) == []
    kept = [r.event for r in store.log.events(conversation_key(KEY))
            if isinstance(r.event, MessageAppended)]
    assert len(kept) == 2 and store.log.messages(conversation_key(KEY)) == []  # for replay
    run(store.append(KEY, TRANSCRIPT[:2]))  # the same uuids, after the delete
    assert run(store.load(KEY)) == TRANSCRIPT[:2]
    assert [s["session_id"] for s in run(store.list_sessions(KEY["project_key"]))] == [
        KEY["session_id"]]


def test_another_process_store_reads_what_the_first_wrote(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first = ConvlogSessionStore(url)
    run(first.append(KEY, TRANSCRIPT))
    first.close()
    second = ConvlogSessionStore(url)
    messages = run(get_session_messages_from_store(second, KEY["session_id"],
                                                   directory="/home/me/api"))
    second.close()
    # the SDK's own reader rebuilds the conversation chain from what the store returns
    assert [(m.type, m.uuid) for m in messages] == [
        ("user", "u1"), ("assistant", "a1"), ("assistant", "a2"), ("user", "u2"),
        ("assistant", "a3")]


def test_keys_never_collide_and_bad_keys_are_named(store: Any) -> None:
    a: Any = {"project_key": "a/b", "session_id": "c"}
    b: Any = {"project_key": "a", "session_id": "b/c"}
    assert conversation_key(a) != conversation_key(b)
    run(store.append(a, [{"type": "x", "n": 1}]))
    assert run(store.load(b)) is None
    with pytest.raises(convlog.InvalidInput, match="subpath"):
        run(store.append({**a, "subpath": ""}, [{"type": "x"}]))
    with pytest.raises(convlog.InvalidInput, match="project_key"):
        run(store.load({"session_id": "x"}))
    with pytest.raises(convlog.InvalidInput, match="JSON object"):
        run(store.append(a, ["not an entry"]))


def test_the_store_works_under_trio_too(store: Any) -> None:
    trio = pytest.importorskip("trio")

    async def go() -> Any:
        await store.append(KEY, TRANSCRIPT)
        return await store.load(KEY)

    assert trio.run(go) == TRANSCRIPT


def test_an_encrypted_store_seals_entries_and_hands_them_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry is stored from the caller's own dict (issue 30: no copy made first):
    sealed all the same, and read back equal, in batches of one and of many."""
    monkeypatch.setenv("CONVLOG_KEY", "55" * 32)
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    sealed = ConvlogSessionStore(url, user="ana")
    run(sealed.append(KEY, TRANSCRIPT[:1]))
    run(sealed.append(KEY, TRANSCRIPT[1:]))
    assert run(sealed.load(KEY)) == TRANSCRIPT
    sealed.close()
    data = (tmp_path / "sealed.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("sealed.db-wal"))
    assert b"Where is auth configured" not in data and b"src/auth.py" not in data
    again = ConvlogSessionStore(url, user="ana")
    assert run(again.load(KEY)) == TRANSCRIPT
    again.close()


def test_a_cancelled_append_is_awaited_to_its_end_before_the_cancellation(
        tmp_path: Path) -> None:
    """The worker thread cannot be stopped: a caller cancelled under asyncio must not
    see its cancellation while the write may still commit (the SDK's mirror retries
    on failure, so a write it believes undone must be). The cancellation comes once
    the write is under way in its worker thread (its redaction hook has run), not
    after a guessed delay: on a loaded machine 5 ms did not always reach it."""
    under_way = threading.Event()

    def redact(text: str) -> str:
        under_way.set()
        return text

    log = convlog.open(f"sqlite:///{tmp_path / 'c.db'}", redact=redact)
    store = ConvlogSessionStore(log)
    entries = [entry(f"c{i}", "user", {"role": "user", "content": f"line {i} " * 20})
               for i in range(3000)]

    async def cancelled_then_loaded() -> list[Any] | None:
        task = asyncio.ensure_future(store.append(KEY, entries))
        while not under_way.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await store.load(KEY)

    try:
        loaded = run(cancelled_then_loaded())
    finally:
        log.close()
    assert loaded is not None and len(loaded) == len(entries)


def test_a_redacting_log_counts_the_redacted_text(tmp_path: Path) -> None:
    """A redaction hook works on its own copy of the store's messages: what is stored,
    and the count made of it when first needed (issue 45), is the redacted text's,
    the first write and a retried one alike."""
    from convlog.accounting.tokens import count_tokens

    log = convlog.open(f"sqlite:///{tmp_path / 'c.db'}",
                       redact=lambda text: text.replace("hunter2", "[secret]"))
    try:
        store = ConvlogSessionStore(log)
        said = entry("s1", "user", {"role": "user", "content": "my password is hunter2"})
        run(store.append(KEY, [said]))
        run(store.append(KEY, [said, TRANSCRIPT[0]]))  # s1 known: skipped, u1 written
        first, second = store.log.messages(conversation_key(KEY))
        assert first.content == "my password is [secret]"
        assert first.tokens is None and second.tokens is None  # no append counts
        _, rows = log.sql("SELECT content_tokens FROM messages ORDER BY version")
        assert [r[0] for r in rows] == [count_tokens("my password is [secret]")[0],
                                        count_tokens("Where is auth configured?")[0]]
    finally:
        log.close()


def test_the_sdks_fork_session_via_store_works_through_the_store(store: Any,
                                                                 tmp_path: Path) -> None:
    """The SDK's own store-backed fork (`fork_session_via_store`, issue 47): it loads
    the source through the store and appends a rewritten copy under a new session id
    (every entry a new uuid, the new sessionId, `forkedFrom`): the SDK's fork is a
    copy by its own definition, and this store keeps what it appends, as it came."""
    from claude_agent_sdk import fork_session_via_store, project_key_for_directory

    ids = [f"5f0c6a4e-0000-4000-8000-00000000001{i}" for i in range(4)]
    source: Any = {"project_key": project_key_for_directory(tmp_path),
                   "session_id": "5f0c6a4e-0000-4000-8000-000000000002"}

    def turn(i: int, kind: str, text: str) -> Any:
        found = entry(ids[i], kind, {"role": kind, "content": text},
                      ids[i - 1] if i else None)
        return {**found, "sessionId": source["session_id"]}

    run(store.append(source, [turn(0, "user", "Book Paris"),
                              turn(1, "assistant", "Booked."),
                              turn(2, "user", "Add a hotel"),
                              turn(3, "assistant", "The Ritz.")]))
    result = run(fork_session_via_store(store, source["session_id"], directory=str(tmp_path),
                                        up_to_message_id=ids[1], title="Paris, no hotel"))
    fork: Any = {**source, "session_id": result.session_id}
    loaded = run(store.load(fork))
    said = [e for e in loaded if e.get("type") in ("user", "assistant")]
    assert [e["message"]["content"] for e in said] == ["Book Paris", "Booked."]
    assert all(e["forkedFrom"]["sessionId"] == source["session_id"] for e in said)
    assert [e["forkedFrom"]["messageUuid"] for e in said] == ids[:2]
    messages = store.log.messages(conversation_key(fork))
    assert [m.content for m in messages] == ["Book Paris", "Booked."]
    assert len(run(store.load(source))) == 4  # the source unaffected
