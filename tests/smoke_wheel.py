"""`make wheel-check`: run from an installed wheel (not the source tree) in a fresh venv.

Not collected by pytest (no test_ prefix): it is executed by the Makefile with the
wheel venv's interpreter, from outside the repository, so only installed code is used.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import convlog
import convlog.domain.events
import convlog.projections.timeline

here = Path(convlog.__file__).resolve().parent
assert "site-packages" in str(here), f"convlog imported from the source tree: {here}"
for package in (convlog, convlog.domain.events, convlog.projections.timeline):
    assert Path(package.__file__ or "").exists()
for marker in ("py.typed", "domain/py.typed", "projections/py.typed"):
    assert (here / marker).exists(), f"{marker} missing from the wheel"

# Every file of the source tree (modules, templates, assets) is in the wheel: a
# subpackage missing from pyproject's `packages` list would be silently dropped.
source = Path(__file__).resolve().parents[1]
for folder, installed_as in (("adapters", here), ("domain", here / "domain"),
                             ("projections", here / "projections")):
    for module in (source / folder).rglob("*"):
        if not module.is_file() or "__pycache__" in module.parts:
            continue
        relative = module.relative_to(source / folder)
        assert (installed_as / relative).exists(), f"{folder}/{relative} missing from the wheel"

with tempfile.TemporaryDirectory() as tmp:
    url = f"sqlite:///{tmp}/smoke.db"
    with convlog.open(url) as log:
        log.conversation("smoke", user="u1").append(convlog.user("hello from the wheel"))
    exe = Path(sys.executable).parent / "convlog"
    out = subprocess.run([str(exe), "show", "smoke", "--db", url, "--json"],
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out)[0]["text"] == "hello from the wheel", out
    version = subprocess.run([str(exe), "--version"], check=True, capture_output=True,
                             text=True).stdout
    assert version.strip() == f"convlog {convlog.__version__}", version
# the importers are found through the wheel's entry points
from convlog.services.importing import available_formats, find_importer  # noqa: E402

assert {"claude-code", "openai", "codex"} <= set(available_formats()), available_formats()
assert find_importer("codex").name == "codex"

# The wheel installs no agent SDK: each integration says which extra brings it.
import importlib  # noqa: E402

for integration, extra in (("openai_agents", "openai-agents"),
                           ("claude_agent_sdk", "claude-agent-sdk"), ("google_adk", "google-adk")):
    message = ""
    try:
        importlib.import_module(f"convlog.integrations.{integration}")
    except convlog.ConvlogError as exc:
        message = str(exc)
    assert f"pip install 'convlog[{extra}]'" in message, (integration, message)

print(f"wheel smoke test passed: convlog {convlog.__version__} from {here}")
