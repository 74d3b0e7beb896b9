"""`make demo`: a scripted agent host records a conversation in ./convlog.db, then the
real `convlog` CLI shows it back (`show`, `replay`), in separate processes.

Run it twice: the second run appends nothing, because every message has an id and
re-appending a known id is a no-op (that is what makes a host's retries safe).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import convlog

KEY = "demo:discord:thread:42"


def record(url: str) -> None:
    with convlog.open(url) as log:
        conv = log.conversation(KEY, user="u1", agent="copilot", channel="discord",
                                title="Auth design")
        conv.bind_native_session("acp-sess-1", agent="copilot")
        turns = [
            [convlog.user("Which auth scheme should the API use?", id="m1"),
             convlog.assistant(
                 [convlog.ThinkingPart(text="Compare sessions, JWT, mTLS."),
                  convlog.TextPart(text="Let me check the current gateway config.")],
                 id="m2", model="gpt-4o",
                 tool_calls=[convlog.ToolCall(id="call-1", name="read_file",
                                              arguments='{"path": "gateway.yaml"}')],
                 usage=convlog.Usage(input_tokens=812, output_tokens=41)),
             convlog.tool("auth: none\nrate_limit: 100/s", tool_call_id="call-1", id="m3"),
             convlog.assistant("The gateway has no auth yet. I suggest JWT with rotating "
                               "signing keys (kid header, 24h rotation).", id="m4",
                               model="gpt-4o",
                               usage=convlog.Usage(input_tokens=901, output_tokens=25))],
            [convlog.user("OK, JWT with rotating keys it is. Rotation every 24h.", id="m5"),
             convlog.assistant("Decision recorded: JWT, keys rotate every 24h.", id="m6",
                               model="gpt-4o",
                               usage=convlog.Usage(input_tokens=960, output_tokens=12))],
        ]
        for turn in turns:
            result = conv.append_turn(turn)
            print(f"  turn of {len(turn)} message(s): appended {len(result.appended)}, "
                  f"skipped {len(result.skipped)} already recorded -> version {result.version}")


def cli(*args: str) -> None:
    exe = shutil.which("convlog", path=str(Path(sys.executable).parent)) or "convlog"
    print(f"\n$ convlog {' '.join(args)}")
    sys.stdout.flush()
    subprocess.run([exe, *args], check=True)


def main() -> int:
    path = Path(os.environ.get("CONVLOG_DEMO_DB", "convlog.db"))
    url = f"sqlite:///{path}"
    print(f"== a host records a conversation in {path} (process {os.getpid()})")
    record(url)
    print("\n== a new process reads it back with the CLI")
    cli("show", KEY, "--db", url)
    cli("replay", KEY, "--db", url)
    print("\nTry next:\n"
          f"  .venv/bin/convlog sessions --db {url}\n"
          f"  .venv/bin/convlog replay {KEY} --until 3 --db {url}\n"
          f"  .venv/bin/convlog show {KEY} --json --db {url}\n"
          f"  echo '{{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}}' | "
          f".venv/bin/convlog record demo:other --db {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
