"""The SDK examples of docs/sdks.md (once in the README) run as written, each in a fresh
interpreter in an empty folder (they write sdk.db there), and print what the page says
they print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "sdks.md").read_text().split("## Agent SDKs", 1)[1].split("\n## ", 1)[0]
BLOCKS = [block.split("```", 1)[0] for block in SECTION.split("```python\n")[1:]]


def test_there_is_one_example_per_sdk() -> None:
    imports = [line for block in BLOCKS for line in block.splitlines()
               if line.startswith("from convlog.integrations")]
    assert [line.split()[1] for line in imports] == [
        "convlog.integrations.openai_agents", "convlog.integrations.claude_agent_sdk",
        "convlog.integrations.google_adk"]


@pytest.mark.parametrize("block", BLOCKS, ids=["openai-agents", "claude-agent-sdk",
                                               "google-adk"])
def test_the_example_runs(block: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"OPENAI_AGENTS_DISABLE_TRACING": "1",
                                                       "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    if "ConvlogSession(" in block:
        assert out.count("Remember: PELICAN") == 2  # read back, then popped
    elif "ConvlogSessionStore" in block:
        assert out.splitlines()[0].count("'uuid': 'u1'") == 1
        assert "'session_id': '9b2c'" in out.splitlines()[1]
    else:
        assert out.strip() == "{'cart': [], 'user:lang': 'fr'}"
    assert (tmp_path / "sdk.db").exists()
