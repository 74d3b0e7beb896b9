"""Shared by the encryption tests: keys in the environment, canaries, a byte scanner."""

from __future__ import annotations

from pathlib import Path

import pytest

import convlog


def use_key(monkeypatch: pytest.MonkeyPatch, key: str | None = None) -> str:
    """Put a master key in CONVLOG_KEY (a new one unless given); returns it."""
    key = key or convlog.generate_key()
    monkeypatch.delenv("CONVLOG_KEY_FILE", raising=False)
    monkeypatch.setenv("CONVLOG_KEY", key)
    return key


def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVLOG_KEY", raising=False)
    monkeypatch.delenv("CONVLOG_KEY_FILE", raising=False)


def canaries(user: str) -> dict[str, str]:
    """One distinct string per place a user's content can go."""
    return {place: f"CANARY-{user}-{place}-7f3a" for place in (
        "title", "workspace", "metadata", "text", "tool_args", "tool_result", "call_args",
        "thinking", "memory", "memory_id", "raw", "retracted")}


def record_with_canaries(log: convlog.ConversationLog, key: str, user: str) -> None:
    c = canaries(user)
    conv = log.conversation(key, user=user, agent="copilot", title=c["title"],
                            workspace=c["workspace"], metadata={"note": c["metadata"]})
    conv.append_turn([
        convlog.user(c["text"]),
        convlog.assistant([convlog.ThinkingPart(text=c["thinking"]),
                           convlog.ToolUsePart(id="t1", name="read",
                                               arguments=f'{{"path": "{c["tool_args"]}"}}')],
                          model="gpt-4o", usage=convlog.Usage(input_tokens=100, output_tokens=7),
                          tool_calls=[convlog.ToolCall(id="c1", name="grep",
                                                       arguments=f'{{"q": "{c["call_args"]}"}}')]),
        convlog.tool([convlog.ToolResultPart(tool_use_id="t1", content=c["tool_result"])],
                     tool_call_id="c1"),
    ])
    conv.inject_memory(f"{c['memory']} (retrieved)", memory_ids=[c["memory_id"]])
    conv.append(convlog.Message(role="user", content="as an SDK stored it",
                                raw={"type": "message", "content": c["raw"]}))
    conv.retract_last(c["retracted"])
    for i in range(12):  # enough events for snapshots when the interval is small
        conv.append(convlog.user(f"{c['text']} again {i}"))
    context = log.context(key)
    log.record_injection(key, context, native_session_id=f"native-{user}")


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def found_in_files(root: Path, needles: list[bytes]) -> list[str]:
    """Which needles occur in which file (every byte of every file under `root`)."""
    hits: list[str] = []
    for path in files_under(root):
        data = path.read_bytes()
        hits.extend(f"{path.name}: {n!r}" for n in needles if n in data)
    return hits
