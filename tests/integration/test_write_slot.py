"""The process's write slot and a conflict (issue 33): when another process wrote the
conversation since this one last saw it, the insert conflicts; the tail is then
reloaded and the write retried at once, and the slot (which every write of the
process needs) is not held meanwhile: one conversation's race never stalls the
process's other writes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.services.log import application

OTHER_HOST = textwrap.dedent("""
    import sys, convlog
    with convlog.open(sys.argv[1], views=sys.argv[2]) as log:
        log.append_turn("s", [convlog.user("from the other host", id=sys.argv[3])])
""")


class TracedSlot:
    """The writer's real lock, recording when it is entered and left."""

    def __init__(self, trace: list[Any]) -> None:
        self.lock = threading.RLock()
        self.trace = trace

    def __enter__(self) -> TracedSlot:
        self.lock.acquire()
        self.trace.append("enter")
        return self

    def __exit__(self, *exc: object) -> None:
        self.trace.append("exit")
        self.lock.release()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_stale_write_reloads_and_retries_outside_the_write_slot(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = (f"sqlite:///{tmp_path / 'c.db'}" if backend == "sqlite"
           else str(request.getfixturevalue("pg_url")))
    views = str(tmp_path / "v.duckdb")
    with convlog.open(url, views=views) as log:
        log.append_turn("s", [convlog.user("first", id="m0")])  # this process's state
        subprocess.run([sys.executable, "-c", OTHER_HOST, url, str(tmp_path / "o.duckdb"),
                        "m1"], check=True, timeout=60)  # ...is now stale
        trace: list[Any] = []
        application(log).writer.lock = TracedSlot(trace)  # type: ignore[assignment]
        store: Any = application(log).writer.store
        load = store._state  # the state reads of `execute` (load's body, unwrapped)

        def traced_load(conversation: Any, key: str, fresh: bool) -> Any:
            trace.append(("load", fresh))
            return load(conversation, key, fresh)

        store._state = traced_load
        result = log.append_turn("s", [convlog.user("second", id="m2")])
        assert result.appended == ["m2"]
        # the stale attempt, then the reload outside the slot, then the retry
        assert trace == ["enter", ("load", False), "exit",
                         ("load", True),
                         "enter", ("load", False), "exit"]
        assert [m.message_id for m in log.messages("s")] == ["m0", "m1", "m2"]
