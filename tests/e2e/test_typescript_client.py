"""clients/typescript as an npm package (issue 44, item 2), the way a new project gets
it: `npm pack`ed, installed into a fresh project outside the repository, imported by
name (`exports`, `types`), with no side effect on import; a program using metadata, a
tool call's input, every role, an Idempotency-Key and the live stream compiles under
`tsc --strict` (and a role typo does not) and runs against a real `convlog serve`.

Its types (src/schema.d.ts, openapi-typescript) and routes (src/routes.ts,
scripts/routes.mjs) come from docs/openapi.json by `npm run generate`, at the versions
its package-lock.json pins: a test regenerates both and fails when they are stale. The
npm packages are installed once into a copy of the folder inside the venv (`npm ci`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import convlog
from tests.httpserver import ADMIN_TOKEN, spawn_serve
from tests.node_packages import installed

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"


def installed_client() -> Path:
    """A copy of clients/typescript with its locked node_modules, in the venv."""
    home = installed(CLIENT, "node-client")
    for folder in ("scripts", "examples"):
        shutil.copytree(CLIENT / folder, home / folder, dirs_exist_ok=True)
    return home


def test_the_generated_types_and_routes_match_the_openapi_document(tmp_path: Path) -> None:
    home = installed_client()
    generated = subprocess.run(
        [str(home / "node_modules" / ".bin" / "openapi-typescript"),
         str(ROOT / "docs" / "openapi.json"), "--default-non-nullable", "false", "-o",
         str(tmp_path / "schema.d.ts")], capture_output=True, text=True, timeout=300)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    routes = subprocess.run(["node", str(home / "scripts" / "routes.mjs"),
                             str(ROOT / "docs" / "openapi.json"), str(tmp_path / "routes.ts")],
                            capture_output=True, text=True, timeout=120)
    assert routes.returncode == 0, routes.stderr
    for name in ("schema.d.ts", "routes.ts"):
        assert (tmp_path / name).read_text() == (CLIENT / "src" / name).read_text(), (
            f"clients/typescript/src/{name} is stale: cd clients/typescript && npm run generate")
    script = json.loads((CLIENT / "package.json").read_text())["scripts"]["generate"]
    assert "--default-non-nullable false" in script and "scripts/routes.mjs" in script
    operations = {op["operationId"] for item in json.loads(
        (ROOT / "docs" / "openapi.json").read_text())["paths"].values() for op in item.values()}
    assert all(f"  {op}: " in (CLIENT / "src" / "routes.ts").read_text() for op in operations)


def packed(tmp_path: Path) -> Path:
    """`npm pack` of the package (its prepack builds it)."""
    home = installed_client()
    for old in home.glob("*.tgz"):
        old.unlink()
    done = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(tmp_path)],
                          cwd=home, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (tarball,) = tmp_path.glob("convlog-client-*.tgz")
    return tarball


def fresh_project(tmp_path: Path, tarball: Path) -> Path:
    """A new npm project that installs the packed client by its file, as a user would."""
    project = tmp_path / "app"
    project.mkdir()
    (project / "package.json").write_text(json.dumps(
        {"name": "app", "private": True, "type": "module"}))
    done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent",
                           str(tarball)], cwd=project, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return project


def tsc(project: Path, *files: str) -> subprocess.CompletedProcess[str]:
    compiler = installed_client() / "node_modules" / ".bin" / "tsc"
    return subprocess.run([str(compiler), "--strict", "--target", "es2022", "--module",
                           "nodenext", "--moduleResolution", "nodenext", "--lib",
                           "es2022,dom,dom.iterable", "--skipLibCheck", "false", *files],
                          cwd=project, capture_output=True, text=True, timeout=600)


def test_the_packed_client_in_a_fresh_project_compiles_strict_and_runs(
        tmp_path: Path) -> None:
    project = fresh_project(tmp_path, packed(tmp_path))
    manifest = json.loads((project / "node_modules" / "convlog-client" / "package.json")
                          .read_text())
    assert manifest["exports"]["."]["types"] == "./dist/index.d.ts"
    assert "private" not in manifest
    # importing it does nothing: no request, no output (there is no server to call)
    imported = subprocess.run(["node", "--input-type=module", "-e",
                               "const m = await import('convlog-client');"
                               "console.log(Object.keys(m).sort().join(','))"],
                              cwd=project, capture_output=True, text=True, timeout=120)
    assert (imported.returncode, imported.stdout, imported.stderr) == (
        0, "Convlog,ConvlogError\n", "")

    shutil.copy(CLIENT / "examples" / "host.ts", project / "host.ts")
    compiled = tsc(project, "host.ts")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with spawn_serve(db, tmp_path, env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        ran = subprocess.run(["node", "host.js", url, "electron/window 1"], cwd=project,
                             capture_output=True, text=True, timeout=300,
                             env={"CONVLOG_TOKEN": ADMIN_TOKEN, "PATH": "/usr/bin:/bin"})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        lines = [json.loads(line) for line in ran.stdout.splitlines()]
        ids = [f"turn-1#{n}" for n in range(4)]
        assert lines[0] == {"appended": ids, "retried": ids}
        assert lines[1] == {"streamed": [[1, "session_started"]] + [
            [n, "message_appended"] for n in range(2, 6)]}
        assert lines[2] == {"last": "assistant", "injected": True}
        assert lines[3] == {"status": 422, "field": "messages[0].role"}
        with convlog.Client(url, token=ADMIN_TOKEN) as client:
            conv = client.get("electron/window 1")
            started = conv.timeline()[0].event
            assert started.metadata == {  # type: ignore[union-attr]
                "client": "my-app", "window": 1, "tags": ["beta"]}
            messages = conv.messages()
            assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
            call = messages[1].content[0]
            assert isinstance(call, convlog.ToolUsePart) and call.name == "weather"
            assert len(messages[1].content) == 1
            assert json.loads(call.arguments) == {"city": "Paris", "units": "metric"}


def test_a_role_typo_does_not_compile(tmp_path: Path) -> None:
    """The @ts-expect-error of examples/host.ts is needed: without it, "usr" fails."""
    project = fresh_project(tmp_path, packed(tmp_path))
    source = (CLIENT / "examples" / "host.ts").read_text()
    lines = source.splitlines()
    (marker,) = [n for n, line in enumerate(lines) if line.startswith("// @ts-expect-error")]
    assert '"usr"' in lines[marker + 1]
    (project / "typo.ts").write_text("\n".join(lines[:marker] + lines[marker + 1:]))
    compiled = tsc(project, "typo.ts")
    assert compiled.returncode != 0
    assert "'\"usr\"' is not assignable" in compiled.stdout, compiled.stdout
