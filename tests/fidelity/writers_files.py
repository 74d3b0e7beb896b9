"""Writers of files other tools write: the importers (`convlog import claude-code`,
`openai`, `codex`) and `convlog watch` (the watcher's tail following a Claude Code
transcript as it grows, a turn at a time).

Each file holds the one conversation as that tool writes it: Claude Code's transcript
entries (also what the Claude Agent SDK hands its store, tests/fidelity/writers_sdks.py),
an OpenAI Chat Completions document, a Codex rollout. The tools number their calls
per process, so `call-1` / `toolu_01` comes back in the second turn.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import convlog
from tests.fidelity.conversation import (
    ANSWERS,
    ARGS,
    ASK,
    PNG_B64,
    PNG_DATA_URL,
    PNG_URL,
    RESULTS,
    SYSTEM,
    TITLE,
    TOOL,
    USAGE,
    Fact,
    image_of_bytes,
    image_of_url,
    sent,
)
from tests.fidelity.readers import messages

SESSION = "5e1f0c2b-9d1a-4c7e-9b7a-2e6f8d3c4a10"


def _at(seconds: int) -> str:
    return f"2026-11-28T06:00:{seconds:02d}.000Z"


def claude_turn(turn: int, session: str = SESSION, parent: str | None = None
                ) -> list[dict[str, Any]]:
    """One turn of a Claude Code transcript, as its entries (one per line)."""
    base = {"sessionId": session, "cwd": "/w", "isSidechain": False, "userType": "external",
            "version": "2.0.31"}
    content: list[dict[str, Any]] = [{"type": "text", "text": ASK[turn]}]
    if turn == 0:
        content.append({"type": "image", "source": {"type": "base64",
                                                    "media_type": "image/png",
                                                    "data": PNG_B64}})
    uid = f"t{turn}"
    tool_id = "toolu_02" if turn == 2 else "toolu_01"  # numbered per process
    entries = [
        {**base, "type": "user", "uuid": f"{uid}-u", "parentUuid": parent,
         "timestamp": _at(10 * turn), "message": {"role": "user", "content": content}},
        {**base, "type": "assistant", "uuid": f"{uid}-c", "parentUuid": f"{uid}-u",
         "timestamp": _at(10 * turn + 1), "requestId": f"req-{uid}-1",
         "message": {"id": f"msg-{uid}-1", "type": "message", "role": "assistant",
                     "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": tool_id, "name": TOOL,
                                  "input": ARGS[turn]}],
                     "stop_reason": "tool_use",
                     "usage": {"input_tokens": 0, "output_tokens": 0}}},
    ]
    if turn < 2:
        entries += [
            {**base, "type": "user", "uuid": f"{uid}-r", "parentUuid": f"{uid}-c",
             "timestamp": _at(10 * turn + 2),
             "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": tool_id, "content": RESULTS[turn]}]}},
            {**base, "type": "assistant", "uuid": f"{uid}-a", "parentUuid": f"{uid}-r",
             "timestamp": _at(10 * turn + 3), "requestId": f"req-{uid}-2",
             "message": {"id": f"msg-{uid}-2", "type": "message", "role": "assistant",
                         "model": "claude-sonnet-4-5",
                         "content": [{"type": "text", "text": ANSWERS[turn]}],
                         "stop_reason": "end_turn",
                         "usage": {"input_tokens": USAGE[turn][0],
                                   "output_tokens": USAGE[turn][1]}}},
        ]
    if turn == 0:
        entries.append({"type": "summary", "summary": TITLE, "leafUuid": f"{uid}-a"})
    return entries


def claude_last(turn: int) -> str:
    return f"t{turn}-a" if turn < 2 else f"t{turn}-c"


def _lines(entries: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def _import(tmp: Path, fmt: str, path: Path) -> str:
    """`convlog import FORMAT PATH` as a process; the log's URL."""
    url = f"sqlite:///{tmp / 'import.db'}"
    subprocess.run([sys.executable, "-m", "convlog.cli.main", "import", fmt, str(path),
                    "--db", url], check=True, capture_output=True, timeout=120)
    return url


def _written(name: str, url: str, key: str, tmp: Path, **carried: bool) -> Any:
    from tests.fidelity.writers import Written

    with convlog.open(url) as log:
        native = messages(log, key)
    image = {"import-claude-code": image_of_bytes(PNG_B64), "watch": image_of_bytes(PNG_B64),
             "import-openai": image_of_url(PNG_DATA_URL)}.get(name, Fact("image", PNG_URL))
    return Written(name, url, key, sent(image, **carried), native, tmp)


def import_claude_code(tmp: Path) -> Any:
    path = tmp / "-w" / f"{SESSION}.jsonl"
    path.parent.mkdir()
    parent: str | None = None
    entries = []
    for turn in range(3):
        entries += claude_turn(turn, parent=parent)
        parent = claude_last(turn)
    path.write_text(_lines(entries))
    return _written("import-claude-code", _import(tmp, "claude-code", path),
                    f"claude-code:{SESSION}", tmp)


def import_openai(tmp: Path) -> Any:
    """A Chat Completions document: the request's messages and the last response."""
    def calling(turn: int) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call-2" if turn == 2 else "call-1", "type": "function",
            "function": {"name": TOOL, "arguments": json.dumps(ARGS[turn])}}]}

    chat: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for turn in range(3):
        chat.append({"role": "user", "content": ASK[turn] if turn else [
            {"type": "text", "text": ASK[0]},
            {"type": "image_url", "image_url": {"url": PNG_DATA_URL}}]})
        chat.append(calling(turn))
        if turn < 2:
            chat += [{"role": "tool", "tool_call_id": "call-1", "content": RESULTS[turn]},
                     {"role": "assistant", "content": ANSWERS[turn]}]
    path = tmp / "weather.json"
    path.write_text(json.dumps({
        "id": "weather", "model": "gpt-4o", "title": TITLE, "messages": chat,
        "usage": {"prompt_tokens": USAGE[1][0], "completion_tokens": USAGE[1][1]}}))
    return _written("import-openai", _import(tmp, "openai", path), "openai:weather", tmp)


CODEX_ID = "019b0000-7d1e-7f30-a2b4-5c6d7e8f9a01"


def import_codex(tmp: Path) -> Any:
    """A Codex rollout: the session's meta (its instructions), then per turn the
    items and the token count after each answer."""
    def line(kind: str, payload: dict[str, Any], second: int) -> dict[str, Any]:
        return {"timestamp": _at(second), "type": kind, "payload": payload}

    rows = [line("session_meta", {"id": CODEX_ID, "timestamp": _at(0), "cwd": "/w",
                                  "originator": "codex_cli_rs", "cli_version": "0.53.0",
                                  "instructions": SYSTEM}, 0)]
    total = [0, 0]
    for turn in range(3):
        s = 10 * turn
        content: list[dict[str, Any]] = [{"type": "input_text", "text": ASK[turn]}]
        if turn == 0:
            content.append({"type": "input_image", "image_url": PNG_URL})
        cid = "call-2" if turn == 2 else "call-1"
        rows += [
            line("turn_context", {"cwd": "/w", "model": "gpt-5-codex"}, s),
            line("response_item", {"type": "message", "role": "user", "content": content}, s),
            line("response_item", {"type": "function_call", "name": TOOL, "call_id": cid,
                                   "arguments": json.dumps(ARGS[turn])}, s + 1),
        ]
        if turn < 2:
            total = [total[0] + USAGE[turn][0], total[1] + USAGE[turn][1]]
            last = {"input_tokens": USAGE[turn][0], "cached_input_tokens": 0,
                    "output_tokens": USAGE[turn][1], "reasoning_output_tokens": 0,
                    "total_tokens": sum(USAGE[turn])}
            rows += [
                line("response_item", {"type": "function_call_output", "call_id": cid,
                                       "output": RESULTS[turn]}, s + 2),
                line("response_item", {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": ANSWERS[turn]}]}, s + 3),
                line("event_msg", {"type": "token_count", "info": {
                    "total_token_usage": {**last, "input_tokens": total[0],
                                          "output_tokens": total[1],
                                          "total_tokens": sum(total)},
                    "last_token_usage": last, "model_context_window": 272000}}, s + 3),
            ]
    path = tmp / "2026" / "11" / "28" / f"rollout-2026-11-28T06-00-00-{CODEX_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(_lines(rows))
    return _written("import-codex", _import(tmp, "codex", tmp / "2026"), f"codex:{CODEX_ID}",
                    tmp)


def watch(tmp: Path) -> Any:
    """`convlog watch`'s tail (convlog.watch.tail.Tail, what the watcher runs on each
    change) following a Claude Code transcript as Claude Code writes it: a turn at a
    time, each turn read while the file is still growing, then the quiet file."""
    from convlog.services.importing import find_follower
    from convlog.watch.positions import Positions
    from convlog.watch.tail import Tail

    url = f"sqlite:///{tmp / 'watch.db'}"
    path = tmp / f"{SESSION}.jsonl"
    parent: str | None = None
    for turn in range(3):  # a watcher process per turn: its positions carry over
        with convlog.open(url, preload_tokenizer=False) as log:
            tail = Tail(log, find_follower("claude-code"), Positions(tmp / "watch.sqlite"))
            with path.open("a") as f:
                f.write(_lines(claude_turn(turn, parent=parent)))
            parent = claude_last(turn)
            captured = tail.read(path, final=turn == 2)
            assert not captured.failures, captured.failures
    return _written("watch", url, f"claude-code:{SESSION}", tmp)
