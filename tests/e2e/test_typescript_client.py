"""clients/typescript: the TypeScript client generated from docs/openapi.json
(openapi-typescript for the types, openapi-fetch for the requests), type-checked by tsc
(strict) and run by this machine's Node.js against a real `convlog serve` (issue 29).

The npm packages come at the versions clients/typescript/package-lock.json pins,
installed once into a copy of the folder inside the venv (`npm ci`); the work tree
gets no node_modules. A second test regenerates the types and fails when they differ
from the committed src/schema.d.ts: the OpenAPI document changed and nobody ran
`npm run generate`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import convlog
from tests.httpserver import ADMIN_TOKEN, spawn_serve
from tests.node_packages import installed

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"


def installed_client() -> Path:
    """A copy of clients/typescript with its locked node_modules, in the venv."""
    return installed(CLIENT, "node-client")


def test_the_generated_types_match_the_openapi_document(tmp_path: Path) -> None:
    home = installed_client()
    out = tmp_path / "schema.d.ts"
    generator = home / "node_modules" / ".bin" / "openapi-typescript"
    done = subprocess.run([str(generator), str(ROOT / "docs" / "openapi.json"),
                           "--default-non-nullable", "false", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.read_text() == (CLIENT / "src" / "schema.d.ts").read_text(), (
        "clients/typescript/src/schema.d.ts is stale: cd clients/typescript && npm run generate")
    script = json.loads((CLIENT / "package.json").read_text())["scripts"]["generate"]
    assert "--default-non-nullable false" in script  # the same command as this test's


def test_the_typescript_client_runs_against_a_real_server(tmp_path: Path) -> None:
    home = installed_client()
    compiled = subprocess.run([str(home / "node_modules" / ".bin" / "tsc"), "-p", str(home)],
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with spawn_serve(db, tmp_path, env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        ran = subprocess.run(["node", str(home / "dist" / "client.js"), url,
                              "electron/window 1"], capture_output=True, text=True,
                             timeout=120,
                             env={"CONVLOG_TOKEN": ADMIN_TOKEN, "PATH": "/usr/bin:/bin"})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        lines = ran.stdout.splitlines()
        assert json.loads(lines[0]) == {"appended": ["turn-1#0", "turn-1#1"],
                                        "retried": ["turn-1#0", "turn-1#1"]}
        assert json.loads(lines[1]) == {"last": "turn-1#1", "role": "assistant"}
        injected = json.loads(lines[2])
        assert injected["injected"] is True and injected["again"] is True
        assert "JWT with rotating keys." in ran.stdout
        assert json.loads(lines[-1]) == {"status": 422, "field": "messages[0].role"}
        with convlog.Client(url, token=ADMIN_TOKEN) as client:
            conv = client.get("electron/window 1")
            assert [m.message_id for m in conv.messages()] == ["turn-1#0", "turn-1#1"]
            rows = {r.group: r for r in client.telemetry()}
            assert rows["session/resume"].failed == 1 and rows["session/new"].succeeded == 1
