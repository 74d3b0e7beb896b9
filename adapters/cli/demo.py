"""`make demo`: an agent host loses its agent process, and convlog gives the memory back.

Two real, separate host processes share ./convlog.db (embedded SQLite):

1. The host talks with an agent (a deterministic fake model behind a fake ACP-style
   agent that keeps its sessions in process memory), recording every turn. Exit.
2. A NEW host process starts with a NEW agent process. The user asks something only
   the earlier conversation can answer. The host resumes through tiers: native
   ``session/resume`` fails, ``session/load`` fails (the agent forgot everything), a
   ``session/new`` works, and convlog injects the budgeted history into it. The fake
   model answers from that history.

It prints what the user sees, what the agent receives and each resume outcome, then
leaves the database for the CLI to explore. Run it again: it is idempotent (turns
carry message ids) and every run is a fresh agent process, so it resumes again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import convlog

KEY = "demo:discord:thread:42"
SYSTEM_PROMPT = "You are Copilot, a helpful engineering assistant."
QUESTION = "Remind me: how often do the signing keys rotate, and which scheme did we pick?"
DEMO_MODEL = "fake-model-1"


class FakeModel:
    """Deterministic: answers only from what is in its prompt, like a model would."""

    def answer(self, prompt: list[str], question: str) -> str:
        text = "\n".join(prompt)
        period = re.search(r"[Rr]otation every (\d+\s*h)", text)
        scheme = re.search(r"\b(JWT|mTLS|session cookies)\b", text)
        if period and scheme:
            return (f"We picked {scheme.group(1)} with rotating signing keys; they rotate "
                    f"every {period.group(1)}.")
        return "I don't know: I have no record of an earlier decision about that."


class FakeAgent:
    """An agent process: its sessions live in its memory, so a restart loses them."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[str]] = {}

    def new_session(self, call: convlog.TierCall) -> str:
        session_id = f"sess-{uuid.uuid4().hex[:8]}"
        self.sessions[session_id] = [SYSTEM_PROMPT]
        return session_id

    def resume_session(self, call: convlog.TierCall) -> str:
        if call.native_session_id not in self.sessions:
            raise convlog.TierFailed("not_found", f"unknown session {call.native_session_id}")
        return call.native_session_id

    def load_session(self, call: convlog.TierCall) -> str:
        if call.native_session_id not in self.sessions:
            raise KeyError(f"session/load: {call.native_session_id} is not on disk")
        return call.native_session_id


def say(who: str, text: str) -> None:
    print(textwrap.fill(text, 96, initial_indent=f"  {who:>5} | ",
                        subsequent_indent=" " * 10 + "| "), flush=True)


def first_process(url: str) -> None:
    agent, model = FakeAgent(), FakeModel()
    with convlog.open(url) as log:
        conv = log.conversation(KEY, user="u1", agent="copilot", channel="discord",
                                title="Auth design")
        session = agent.new_session(convlog.TierCall(KEY, "session/new", None))
        conv.bind_native_session(session, agent="copilot")
        script = [
            ("m1", "Which auth scheme should the API use?",
             "The gateway has no auth yet. I suggest JWT with rotating signing keys."),
            ("m3", "OK, JWT it is. Rotation every 24h, please.",
             "Decision recorded: JWT, signing keys rotate every 24h (kid header)."),
        ]
        for mid, question, reply in script:
            say("user", question)
            agent.sessions[session] += [question, reply]
            say("agent", reply)
            conv.append_turn([
                convlog.user(question, id=mid),
                convlog.assistant(reply, id=f"{mid}-reply", model=DEMO_MODEL,
                                  usage=convlog.Usage(input_tokens=400, output_tokens=20)),
            ])
        print(f"  (host pid {os.getpid()} exits; the agent process and its sessions die "
              "with it)", flush=True)
        del model


def second_process(url: str) -> None:
    agent, model = FakeAgent(), FakeModel()  # a brand-new agent process: no sessions
    with convlog.open(url) as log:
        conv = log.get(KEY)
        message_id = f"q-{uuid.uuid4().hex[:8]}"
        say("user", QUESTION)
        conv.append(convlog.user(QUESTION, id=message_id))
        outcome = conv.resume(
            [convlog.Tier("session/resume", agent.resume_session),
             convlog.Tier("session/load", agent.load_session),
             convlog.Tier("session/new", agent.new_session)],
            budget=convlog.Budget(tokens=2_000, messages=30),
            exclude=[message_id],  # the question being sent now is not history
        )
        print("\n== resume outcomes (recorded as events)")
        for a in outcome.attempts:
            status = "ok" if a.ok else f"FAILED ({a.reason}: {a.error})"
            print(f"  {a.strategy:<15} {status}  [{a.latency_ms:.1f} ms]")
        injected = outcome.injection.text if outcome.injection else ""
        prompt = [SYSTEM_PROMPT, injected, QUESTION] if injected else [SYSTEM_PROMPT,
                                                                        QUESTION]
        print("\n== what the agent receives in its new session")
        for i, block in enumerate(prompt, 1):
            print(textwrap.indent(block, f"  [{i}] "))
        answer = model.answer(prompt, QUESTION)
        without = model.answer([SYSTEM_PROMPT, QUESTION], QUESTION)
        print("\n== what the user sees")
        say("user", QUESTION)
        say("agent", answer)
        print(f"\n  (without the injected history the same model would say: {without!r})")
        conv.append(convlog.assistant(answer, id=f"{message_id}-reply", model=DEMO_MODEL))


def run_phase(phase: str, url: str) -> None:
    subprocess.run([sys.executable, "-m", "convlog.cli.demo", phase, url], check=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] in ("first", "second"):
        (first_process if args[0] == "first" else second_process)(args[1])
        return 0
    path = Path(os.environ.get("CONVLOG_DEMO_DB", "convlog.db"))
    url = f"sqlite:///{path}"
    if path.exists():
        print(f"(appending to the demo conversation already in {path}: the scripted turns "
              "are skipped as already recorded, the question is asked again; delete the "
              "file to start fresh)\n")
    print(f"== host process 1: a conversation, recorded in {path}")
    run_phase("first", url)
    print("\n== host process 2: the agent restarted and remembers nothing")
    run_phase("second", url)
    exe = shutil.which("convlog", path=str(Path(sys.executable).parent)) or "convlog"
    shown = os.path.relpath(exe) if exe.startswith(os.getcwd()) else exe
    print("\nThe database stays for you to explore:\n"
          f"  {shown} show {KEY} --db {url}\n"
          f"  {shown} replay {KEY} --db {url}\n"
          f"  {shown} context {KEY} --format markdown --db {url}\n"
          f"  {shown} sessions --db {url} --json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
