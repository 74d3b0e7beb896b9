"""docs/openapi.json as generators and linters take it (issue 44, item 3): Redocly's
recommended rules pass (`@redocly/cli`, pinned in tests/openapi_tools with its
lockfile), and the TypeScript client openapi-generator makes of it (`typescript-fetch`,
PyPI's openapi-generator-cli 7.26.0, pinned in the dev extra) compiles under
`tsc --strict` and has a typed `Idempotency-Key` parameter. Before, Redocly failed on
`no-empty-servers` and that client had 41 strict errors (`anyOf` + discriminator)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.node_packages import installed

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "openapi.json"
TOOLS = ROOT / "tests" / "openapi_tools"


def test_redocly_recommended_rules_pass() -> None:
    home = installed(TOOLS, "node-openapi-tools")
    done = subprocess.run([str(home / "node_modules" / ".bin" / "redocly"), "lint",
                           "--extends=recommended", "--format=stylish", str(DOCUMENT)],
                          capture_output=True, text=True, timeout=300, cwd=home)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "warning" not in out.split("validating", 1)[-1], out


def test_openapi_generators_typescript_client_compiles_strict() -> None:
    generator = Path(sys.executable).parent / "openapi-generator-cli"
    if shutil.which("java") is None:
        pytest.skip("openapi-generator needs Java")
    home = installed(TOOLS, "node-openapi-tools")
    out = home / "generated"
    shutil.rmtree(out, ignore_errors=True)
    made = subprocess.run([str(generator), "generate", "-g", "typescript-fetch", "-i",
                           str(DOCUMENT), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    compiled = subprocess.run([str(home / "node_modules" / ".bin" / "tsc"), "-p", str(home)],
                              capture_output=True, text=True, timeout=600)
    assert compiled.returncode == 0, compiled.stdout[-5000:] + compiled.stderr[-2000:]
    api = (out / "apis" / "ConversationsApi.ts").read_text()
    turn = api.split("export interface AppendTurnRequest", 1)[1].split("}", 1)[0]
    assert "idempotencyKey?: string;" in turn
    assert "headerParameters['Idempotency-Key']" in api
