"""Each SDK integration is an optional extra: `import convlog` never imports an SDK,
and importing an integration whose SDK is missing gives ONE clear error naming the
extra to install. The missing SDK is simulated for real, in a fresh interpreter whose
import system refuses the SDK's package (a meta path finder installed by
sitecustomize), so nothing here mocks the classes under test."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.missing_extra import env_without

CASES = [
    ("convlog.integrations.openai_agents", "openai-agents", "agents"),
    ("convlog.integrations.claude_agent_sdk", "claude-agent-sdk", "claude_agent_sdk"),
    ("convlog.integrations.google_adk", "google-adk", "google.adk"),
]


def python(tmp_path: Path, blocked: str, code: str) -> subprocess.CompletedProcess[str]:
    env = env_without(tmp_path, blocked)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.parametrize(("module", "extra", "blocked"), CASES)
def test_a_missing_sdk_names_the_extra(tmp_path: Path, module: str, extra: str,
                                       blocked: str) -> None:
    done = python(tmp_path, blocked, f"""
        import sys
        try:
            import {blocked}
        except ImportError:
            pass
        else:
            sys.exit("the blocker did not block {blocked}")
        import convlog, convlog.integrations
        try:
            import {module}
        except convlog.ConvlogError as exc:
            assert isinstance(exc, ImportError)
            print(exc)
        else:
            sys.exit("imported without its SDK")
    """)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout
    message = done.stdout.strip()
    assert f"pip install 'convlog[{extra}]'" in message
    assert module in message and blocked in message
    assert "Traceback" not in done.stderr


def test_convlog_never_imports_an_sdk(tmp_path: Path) -> None:
    done = python(tmp_path, "nothing-blocked", """
        import sys
        import convlog, convlog.integrations, convlog.integrations.extras
        loaded = [m for m in ("agents", "claude_agent_sdk", "google.adk") if m in sys.modules]
        print(loaded)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_postgresql_without_the_postgres_extra_names_it(tmp_path: Path) -> None:
    """On a plain install `convlog --db postgresql://... sessions` said `internal error:
    ModuleNotFoundError: No module named 'psycopg' ... please report it` (issue 29)."""
    done = python(tmp_path, "psycopg", """
        import sys
        from convlog.cli.main import main
        sys.exit(main(["--db", "postgresql://postgres@127.0.0.1:5432/test", "sessions"]))
        """)
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr
    assert done.stderr.strip() == ("convlog: error: PostgreSQL needs the 'postgres' extra: "
                                   "pip install 'convlog[postgres]'")
