"""No test stops or restarts the machine's shared PostgreSQL (issue 33): every test
running at the same time uses it. A test that needs a server to stop, restart or
break uses a private cluster (tests/pgcluster.py, the `private_pg` fixture)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CONTROLS = ("pg_ctlcluster", "pg_ctl ", "systemctl restart postgresql",
            "service postgresql")


def test_no_test_controls_the_shared_postgresql_server() -> None:
    offenders = [f"{path.relative_to(TESTS)}: {word!r}"
                 for path in TESTS.rglob("*.py")
                 if path.name not in ("pgcluster.py", Path(__file__).name)
                 for word in CONTROLS if word in path.read_text(encoding="utf-8")]
    assert not offenders, offenders
