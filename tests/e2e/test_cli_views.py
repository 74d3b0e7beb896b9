"""`convlog replay --view user|agent` and `convlog diff`, end to end: the installed
console script against the README's example conversation (examples/forgetful_agent.py,
run as a real subprocess too)."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.e2e.test_cli import clean_env, run, run_all

ROOT = Path(__file__).resolve().parents[2]
KEY = "support:7"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("views") / "demo.db"
    subprocess.run([sys.executable, str(ROOT / "examples" / "forgetful_agent.py"), str(path)],
                   check=True, capture_output=True, timeout=120)
    return f"sqlite:///{path}"


def test_agent_view_shows_what_the_agent_received(db: str) -> None:
    result = run("--db", db, "replay", KEY, "--view", "agent")
    assert result.code == 0 and result.err == "", result
    out = result.out
    flat = " ".join(out.split())  # long lines are wrapped to the terminal's width
    assert out.startswith(f"{KEY}: what the agent received, up to #21 (now in agent session 0")
    assert "injected history  (4 messages" in out and "<conversation_history" in out
    assert "!!: new agent session 0 (session/new after session/resume failed" in flat
    assert "nothing was injected: the agent lost 8 earlier messages" in flat
    assert "~3 " in out and "#20 " in out  # gone entries marked, live ones not
    assert out.index("~ left the agent's context") < out.index("~3 ")


def test_user_view_and_json(db: str) -> None:
    user, agent, timeline = run_all(
        ["--db", db, "replay", KEY, "--view", "user", "--json"],
        ["--db", db, "replay", KEY, "--view", "agent", "--json"],
        ["--db", db, "replay", KEY, "--json"])
    u, a = user.json(), agent.json()
    assert u["view"] == "user" and len(u["entries"]) == 10
    assert {e["kind"] for e in u["entries"]} == {"message"}
    assert a["view"] == "agent" and a["session"] == "0" and a["version"] == 21
    live = [e["text"] for e in a["entries"] if e["live"]]
    assert live == ["Which branch do we deploy from?", "I don't know which branch you use."]
    alerts = [e for e in a["entries"] if e["alert"]]
    assert len(alerts) == 1 and alerts[0]["version"] == 19
    # Without --view, replay is the timeline, as before.
    assert [row["type"] for row in timeline.json()][:2] == ["session_started",
                                                            "native_session_bound"]


def test_diff_terminal_and_json(db: str) -> None:
    text, data, earlier = run_all(["--db", db, "diff", KEY], ["--db", db, "diff", KEY, "--json"],
                                  ["--db", db, "diff", KEY, "--at", "16", "--json"])
    assert text.code == 0 and text.err == "", text
    flat = " ".join(text.out.split())
    assert "8 missing" in flat
    assert "why: the agent's session started empty at #19 and got no history injected" in flat
    assert "!! #19" in text.out
    d = data.json()
    assert d["parted"] and [m["version"] for m in d["missing"]] == [3, 4, 5, 6, 7, 8, 14, 15]
    assert len(d["alerts"]) == 1 and d["extra"][0]["kind"] == "injection"
    e = earlier.json()
    assert e["version"] == 16 and [m["version"] for m in e["missing"]] == [3, 4]
    assert e["covered"] == 4 and e["alerts"] == []


def test_at_a_time(db: str) -> None:
    rows = run("--db", db, "replay", KEY, "--json").json()
    cut = next(r for r in rows if r["version"] == 8)["at"]
    naive = datetime.fromisoformat(cut).replace(tzinfo=None).isoformat()
    result = run("--db", db, "replay", KEY, "--view", "user", "--at", naive, "--json")
    # A time without an offset is UTC; the conversation's events are stamped in UTC.
    assert [e["version"] for e in result.json()["entries"]] == [3, 4, 5, 6, 7, 8]
    assert result.json()["version"] == 8


@pytest.mark.parametrize("argv", [
    ["replay", KEY, "--view", "agent", "--at", "yesterday"],
    ["diff", KEY, "--at", "v3"],
])
def test_bad_at_is_a_usage_error_naming_it(db: str, argv: list[str]) -> None:
    result = run("--db", db, *argv)
    assert result.code == 2 and result.out == ""
    last = result.err.splitlines()[-1]
    assert last.startswith("convlog: error: --at: ") and repr(argv[-1]) in last
    assert "Traceback" not in result.err


def test_the_timeline_takes_at_too(db: str) -> None:
    at, until = run_all(["--db", db, "replay", KEY, "--at", "2", "--json"],
                        ["--db", db, "replay", KEY, "--until", "2", "--json"])
    assert [r["version"] for r in at.json()] == [1, 2] == [r["version"] for r in until.json()]


def test_at_and_until_together_and_a_bad_view(db: str) -> None:
    both = run("--db", db, "replay", KEY, "--at", "3", "--until", "4")
    assert both.code == 2 and "not both" in both.err
    bad = run("--db", db, "replay", KEY, "--view", "bot")
    assert bad.code == 2 and "invalid choice: 'bot'" in bad.err


def test_unknown_conversation_is_one_line(db: str) -> None:
    for argv in (["replay", "nobody", "--view", "agent"], ["diff", "nobody"]):
        result = run("--db", db, *argv)
        assert result.code == 1 and result.out == ""
        assert result.err == "convlog: error: unknown conversation 'nobody'\n"


def test_the_readme_session_is_real(db: str) -> None:
    """The documented debugging session is this command's output (times aside)."""
    readme = (ROOT / "docs" / "debugging.md").read_text()
    block = readme.split("$ python examples/forgetful_agent.py demo.db\n", 1)[1].split(
        "\n```", 1)[0]
    commands = re.findall(r"^\$ convlog --db demo.db (.+?)(?:\s+#.*)?$", block, re.M)
    assert commands == ["replay support:7 --view agent", "diff support:7",
                        "diff support:7 --at 16"]
    shown = re.split(r"^\$ .*\n", block, flags=re.M)[1:]
    env = clean_env(COLUMNS="96")
    for command, expected in zip(commands, shown, strict=True):
        result = run("--db", db, *command.split(), env=env)
        assert result.code == 0, result
        assert _timeless(result.out) == _timeless(expected.rstrip("\n") + "\n"), command


def _timeless(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?", "TIME", text).rstrip() + "\n"


def test_repairs_are_marked_in_the_agent_view_and_the_diff(tmp_path: Path) -> None:
    """Issue 28: a call whose result was lost and a result without its call, written
    through the library; the agent view and the diff mark convlog's repairs, as text
    and as `--json` fields; the user's view shows what happened."""
    import convlog
    from tests.integration.test_repair_marks import orphans

    path = tmp_path / "orphans.db"
    with convlog.open(f"sqlite:///{path}") as log:
        orphans(log.conversation("k"))
    db = f"sqlite:///{path}"
    agent, agent_json, user_json, diff_json = run_all(
        ["--db", db, "replay", "k", "--view", "agent"],
        ["--db", db, "replay", "k", "--view", "agent", "--json"],
        ["--db", db, "replay", "k", "--view", "user", "--json"],
        ["--db", db, "diff", "k", "--json"])
    assert agent.code == 0 and agent.err == "", agent
    flat = " ".join(agent.out.split())
    assert "convlog repair: [convlog: the result of tool ls was lost" in flat
    assert "~ left the agent's context: left out of the model's input by convlog" in flat
    entries = agent_json.json()["entries"]
    assert [(e["kind"], e["repairs"]) for e in entries if e["repairs"]] == [
        ("repair", [{"kind": "synthesized", "call_id": "c1", "cause": "process_died"}]),
        ("message", [{"kind": "dropped", "call_id": "c9", "cause": "no_call"}])]
    user = user_json.json()["entries"]
    assert len(user) == 7 and not [e for e in user if e["repairs"] or e["kind"] != "message"]
    d = diff_json.json()
    assert [m["text"] for m in d["missing"]] == ["stale output"]
    assert [e["repairs"][0]["cause"] for e in d["extra"]] == ["process_died"]
