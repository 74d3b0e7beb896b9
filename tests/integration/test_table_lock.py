"""The events-table lock (issue 33). Every insert takes an EXCLUSIVE lock on the
events table so that notification ids become visible in order (the views read
``notification_id > position`` and must never pass over a late commit). It must be
held for the server's own work only: taken and released inside one statement, never
across a round trip to a client that may be waiting for CPU meanwhile."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg

import convlog
from tests.conftest import PG_HOST
from tests.pgproxy import WireProxy

HOLDERS = """
    SELECT a.state FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.relation = %s::regclass AND l.mode = 'ExclusiveLock' AND l.granted
"""


def test_the_table_lock_is_never_held_while_the_client_is_away(pg_url: str,
                                                                tmp_path: Path) -> None:
    schema = parse_qs(urlsplit(pg_url).query)["schema"][0]
    proxy = WireProxy(5432)  # a slow client: each chunk it sends arrives 0.15 s late
    url = pg_url.replace(":5432/", f":{proxy.port}/")
    states: list[str] = []
    stop = threading.Event()

    def sample() -> None:
        with psycopg.connect(PG_HOST, autocommit=True) as con:
            while not stop.is_set():
                rows = con.execute(HOLDERS, (f'"{schema}".stored_events',)).fetchall()
                states.extend(str(r[0]) for r in rows)
                time.sleep(0.005)

    try:
        with convlog.open(url, views=str(tmp_path / "v.duckdb")) as log:
            log.append("s", convlog.user("first", id="m0"))
            proxy.client_delay = 0.15
            sampler = threading.Thread(target=sample)
            sampler.start()
            try:
                for i in range(1, 4):
                    log.append("s", convlog.user(f"turn {i}", id=f"m{i}"))
            finally:
                stop.set()
                sampler.join()
            assert [m.message_id for m in log.messages("s")] == ["m0", "m1", "m2", "m3"]
    finally:
        proxy.close()
    # held by a transaction waiting for its client's next message: never
    assert "idle in transaction" not in states, states


def test_each_host_keeps_its_own_lock_timeout(pg_url: str, tmp_path: Path) -> None:
    """`?lock_timeout=` is a host's own setting: a second host opening the database
    with another value must not change how long the first one waits for the lock
    (the append function is shared by every host of the database)."""
    schema = parse_qs(urlsplit(pg_url).query)["schema"][0]
    outcome: dict[str, BaseException] = {}
    with convlog.open(f"{pg_url}&lock_timeout=1", views=str(tmp_path / "a.duckdb")) as hasty:
        hasty.append("s", convlog.user("first", id="m0"))
        with convlog.open(f"{pg_url}&lock_timeout=0", views=str(tmp_path / "b.duckdb")), \
                psycopg.connect(PG_HOST) as holder:
            holder.execute(f'LOCK TABLE "{schema}".stored_events IN EXCLUSIVE MODE')

            def write() -> None:
                try:
                    hasty.append("s", convlog.user("second", id="m1"))
                except BaseException as exc:
                    outcome["error"] = exc

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            writer.join(30)
            still_waiting = writer.is_alive()
            holder.rollback()
            writer.join(30)
        assert not still_waiting, "the 1 s lock timeout was replaced by the other host's 0"
        assert isinstance(outcome.get("error"), convlog.StorageError), outcome
        assert [m.message_id for m in hasty.messages("s")] == ["m0"]
