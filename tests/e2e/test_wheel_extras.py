"""The README's Install, as written (issue 44, item 1): the wheel `make wheel` builds,
installed with each extra into a fresh venv outside the repository, runs that extra's
smallest command; `make wheel-check`'s smoke test (tests/smoke_wheel.py) runs on the
plain install. Dependencies come from the package index, as a user's do.

The plain install is the README's command as written (`python -m venv`, then pip). Each
extra gets a fresh venv of its own too (an extra must work alone: a dependency it
forgot would not be hidden by another's), made and filled by uv from the same wheel and
the same index: pip took 30-90 s an extra (twelve venvs were the suite's longest pole
on 2 cores), uv links what its cache already holds. Marked `slow`, one case per extra
so the workers share them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make wheel`, once for the whole run: the first worker builds it into the run's
    shared temporary folder, the others take it (builds share the tree's build/ folder,
    so one at a time in any case)."""
    from filelock import FileLock

    run = tmp_path_factory.getbasetemp()  # a worker's is popen-gwN in the run's folder
    out = (run.parent if os.environ.get("PYTEST_XDIST_WORKER") else run) / "dist"
    with FileLock(Path(sys.prefix) / "make-wheel.lock"):
        if not list(out.glob("convlog-*.whl")):
            out.mkdir(exist_ok=True)
            done = subprocess.run(["make", "-s", "wheel", f"DIST={out}"], cwd=ROOT,
                                  capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stdout + done.stderr
    (found,) = out.glob("convlog-*.whl")
    return found


def venv_with(tmp_path: Path, wheel: Path, extra: str | None) -> Path:
    """A fresh venv (outside the repository) with the wheel and `extra` installed, as
    the README says: ``pip install 'convlog-X.whl[extra]'``; returns its bin/."""
    venv = tmp_path / "venv"
    if extra is None:  # the README's own command
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                   "--disable-pip-version-check", str(wheel)]
    else:
        uv = str(Path(sys.executable).parent / "uv")
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                       check=True, timeout=300, capture_output=True)
        install = [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                   f"{wheel}[{extra}]"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return venv / "bin"


def env() -> dict[str, str]:
    drop = ("CONVLOG_URL", "CONVLOG_TOKEN", "PYTHONPATH", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def python(bin_: Path, code: str, cwd: Path, **extra_env: str) -> str:
    done = subprocess.run([str(bin_ / "python"), "-c", textwrap.dedent(code)], cwd=cwd,
                          env={**env(), **extra_env}, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def convlog(bin_: Path, cwd: Path, *args: str) -> str:
    done = subprocess.run([str(bin_ / "convlog"), *args], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def recorded(bin_: Path, cwd: Path) -> str:
    """A conversation `k` with a turn and a resume, recorded with the installed CLI."""
    db = f"sqlite:///{cwd / 'c.db'}"
    lines = [{"type": "session_started", "user": "u1", "agent": "a1"},
             {"type": "message", "role": "user", "content": "hello from the wheel"},
             {"type": "message", "role": "assistant", "content": "hi", "model": "gpt-4o"},
             {"type": "resume_attempted", "strategy": "session/load"},
             {"type": "resume_succeeded", "strategy": "session/load", "latency_ms": 12.0}]
    subprocess.run([str(bin_ / "convlog"), "--db", db, "record", "k"], cwd=cwd, env=env(),
                   input="".join(json.dumps(line) + "\n" for line in lines), text=True,
                   check=True, capture_output=True, timeout=300)
    return db


# ------------------------------------------------------ each extra's smallest command


def core(bin_: Path, cwd: Path) -> None:
    done = subprocess.run([str(bin_ / "python"), str(ROOT / "tests" / "smoke_wheel.py")],
                          cwd=cwd, env=env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wheel smoke test passed" in done.stdout


def postgres(bin_: Path, cwd: Path) -> None:
    schema = f"convlog_wheel_{uuid.uuid4().hex[:10]}"
    url = f"postgresql://postgres@127.0.0.1:5432/test?schema={schema}"
    try:
        out = python(bin_, f"""
            import convlog
            with convlog.open({url!r}) as log:
                log.conversation("k").append(convlog.user("on postgres"))
                print(log.messages("k")[0].content)
        """, cwd)
        assert out == "on postgres\n"
    finally:
        python(bin_, f"""
            import psycopg
            with psycopg.connect("host=127.0.0.1 dbname=test user=postgres",
                                 autocommit=True) as c:
                c.execute('DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        """, cwd)


def acp(bin_: Path, cwd: Path) -> None:
    done = subprocess.run([str(bin_ / "python"), "-m", "convlog.cli.demo_acp"], cwd=cwd,
                          env=env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "they rotate every 24h" in done.stdout


def http(bin_: Path, cwd: Path) -> None:
    proc = subprocess.Popen([str(bin_ / "convlog"), "serve", "--port", "0", "--db",
                             f"sqlite:///{cwd / 's.db'}"], cwd=cwd, env=env(),
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        with urllib.request.urlopen(f"{url}/health", timeout=30) as answer:
            assert json.loads(answer.read())["ok"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def html(bin_: Path, cwd: Path) -> None:
    db = recorded(bin_, cwd)
    convlog(bin_, cwd, "--db", db, "html", "k", "-o", "page.html")
    assert "hello from the wheel" in (cwd / "page.html").read_text()


def charts(bin_: Path, cwd: Path) -> None:
    db = recorded(bin_, cwd)
    convlog(bin_, cwd, "--db", db, "telemetry", "--chart", "resume.png")
    assert (cwd / "resume.png").read_bytes()[:4] == b"\x89PNG"


def watch(bin_: Path, cwd: Path) -> None:
    folder = cwd / "sessions"
    folder.mkdir()
    proc = subprocess.Popen([str(bin_ / "convlog"), "--db", f"sqlite:///{cwd / 'w.db'}",
                             "watch", "codex", str(folder)], cwd=cwd, env=env(),
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # it says it watches, once it does
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 0, first + proc.stderr.read()
    assert str(folder) in first


def otel(bin_: Path, cwd: Path) -> None:
    from tests.otlp_receiver import running

    db = recorded(bin_, cwd)
    with running() as receiver:
        done = subprocess.run([str(bin_ / "convlog"), "--db", db, "export", "--otel"],
                              cwd=cwd, capture_output=True, text=True, timeout=300,
                              env={**env(), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert done.returncode == 0, done.stdout + done.stderr
        assert receiver.spans


def openai_agents(bin_: Path, cwd: Path) -> None:
    out = python(bin_, f"""
        import asyncio
        from convlog.integrations.openai_agents import ConvlogSession
        async def main():
            session = ConvlogSession("s1", "sqlite:///{cwd / 'o.db'}")
            await session.add_items([{{"role": "user", "content": "hi"}}])
            print(len(await session.get_items()))
        asyncio.run(main())
    """, cwd)
    assert out == "1\n"


def claude_agent_sdk(bin_: Path, cwd: Path) -> None:
    out = python(bin_, f"""
        import asyncio
        from convlog.integrations.claude_agent_sdk import ConvlogSessionStore
        async def main():
            store = ConvlogSessionStore("sqlite:///{cwd / 'c.db'}")
            key = {{"project_key": "p", "session_id": "s1"}}
            await store.append(key, [{{"type": "user", "uuid": "u-1",
                "message": {{"role": "user", "content": "hi"}}}}])
            print(len(await store.load(key)))
        asyncio.run(main())
    """, cwd)
    assert out == "1\n"


def google_adk(bin_: Path, cwd: Path) -> None:
    out = python(bin_, f"""
        import asyncio
        from convlog.integrations.google_adk import ConvlogSessionService
        async def main():
            service = ConvlogSessionService("sqlite:///{cwd / 'g.db'}")
            session = await service.create_session(app_name="app", user_id="u1")
            again = await service.get_session(app_name="app", user_id="u1",
                                              session_id=session.id)
            print(again.id == session.id)
        asyncio.run(main())
    """, cwd)
    assert out == "True\n"


EXTRAS: dict[str | None, Callable[[Path, Path], None]] = {
    None: core, "postgres": postgres, "acp": acp, "http": http, "html": html,
    "charts": charts, "watch": watch, "otel": otel, "openai-agents": openai_agents,
    "claude-agent-sdk": claude_agent_sdk, "google-adk": google_adk,
}


@pytest.mark.parametrize("extra", list(EXTRAS), ids=[e or "core" for e in EXTRAS])
def test_the_wheel_with_each_extra_runs_its_smallest_command(
        tmp_path: Path, wheel: Path, extra: str | None) -> None:
    bin_ = venv_with(tmp_path, wheel, extra)
    where = python(bin_, "import convlog; print(convlog.__file__)", tmp_path)
    assert str(bin_.parent) in where and str(ROOT) not in where  # the wheel, not the tree
    work = tmp_path / "work"
    work.mkdir()
    EXTRAS[extra](bin_, work)


def test_the_readme_installs_from_the_wheel_make_wheel_builds() -> None:
    readme = (ROOT / "README.md").read_text()
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "make wheel" in install and "dist/convlog-" in install
    assert install.index("From a clone") < install.index("pip install convlog")
    makefile = (ROOT / "Makefile").read_text()
    assert "\nwheel:" in makefile
