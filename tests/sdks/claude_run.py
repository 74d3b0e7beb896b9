"""The Claude Agent SDK's real runner, offline: `query()` drives the SDK's bundled
Claude Code, pointed at the fake Anthropic API (tests/sdks/anthropic_fake.py), with a
convlog session store. Each prompt is one `query()` (a new CLI process), the later
ones resuming the first one's session from the store."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, query

from convlog.integrations.claude_agent_sdk import ConvlogSessionStore
from tests.sdks.anthropic_fake import FakeAnthropic


class RecordingStore(ConvlogSessionStore):
    """convlog's store, keeping every (key, entries) the SDK appended, in order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.appended: list[tuple[Any, list[Any]]] = []

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.appended.append((dict(key), list(entries)))
        await super().append(key, entries)

    def entries(self, key: Any) -> list[Any]:
        """Every entry appended under `key`, once per uuid (the store's dedupe)."""
        seen: set[str] = set()
        out = []
        for k, entries in self.appended:
            if k != key:
                continue
            for entry in entries:
                uid = entry.get("uuid")
                if isinstance(uid, str) and uid in seen:
                    continue
                if isinstance(uid, str):
                    seen.add(uid)
                out.append(entry)
        return out


@dataclass
class Run:
    session_id: str
    messages: list[Any] = field(default_factory=list)


async def run_claude(store: ConvlogSessionStore, fake: FakeAnthropic, workdir: Path,
                     prompts: list[str]) -> Run:
    """Each prompt in a new Claude Code process, resuming the same session."""
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-fake",
           "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1", "PATH": os.environ.get("PATH", "")}
    session_id: str | None = None
    run: Run | None = None
    for prompt in prompts:
        # the CLI refuses bypassPermissions as root: the one tool the fake model
        # uses (Read) is allowed instead
        options = ClaudeAgentOptions(cwd=str(workdir), env=env, session_store=store,
                                     model="claude-sonnet-4-5", resume=session_id,
                                     permission_mode="acceptEdits", allowed_tools=["Read"])
        async for message in query(prompt=prompt, options=options):
            session_id = getattr(message, "session_id", None) or session_id
            if run is None and session_id is not None:
                run = Run(session_id)
            if run is not None:
                run.messages.append(message)
    assert run is not None and session_id is not None
    return run


def notes_session(url: str, workdir: Path) -> tuple[Any, list[Any]]:
    """Two turns of Claude Code on a store at `url`, offline: its Read tool on a notes
    file (KEY-FACT-42), then a plain question. (The session's main key, every entry
    the SDK appended under it.)"""
    import asyncio

    from tests.sdks.anthropic_fake import serving

    (workdir / "notes.txt").write_text("KEY-FACT-42\n")

    async def go() -> tuple[Any, list[Any]]:
        store = RecordingStore(url)
        try:
            with serving() as fake:
                run = await run_claude(store, fake, workdir, [
                    f'use Read {{"file_path": "{workdir / "notes.txt"}"}}', "and again?"])
            key = next(k for k, _ in store.appended
                       if k["session_id"] == run.session_id and "subpath" not in k)
            return key, store.entries(key)
        finally:
            store.close()

    return asyncio.run(go())
