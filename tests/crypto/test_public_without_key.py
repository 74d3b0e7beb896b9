"""Counts, costs and telemetry need no plaintext (issue 25): on an encrypted store,
`convlog costs`, `telemetry` and `sql` run without the master key (they refused with
MissingKey before). Content commands still need it, and no write happens without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

import convlog
from tests.crypto.helpers import no_key, use_key


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "convlog")
    env = {k: v for k, v in os.environ.items() if k not in ("CONVLOG_KEY", "CONVLOG_KEY_FILE")}
    return subprocess.run([exe, *args, "--db", url], capture_output=True, text=True,
                          env=env, timeout=120)


def test_costs_telemetry_and_sql_run_without_the_key(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    key = use_key(monkeypatch)
    with convlog.open(url, preload_tokenizer=False) as log:
        c = log.conversation("k", user="alice", title="secret title")
        c.append_turn([convlog.user("secret text"),
                       convlog.assistant("secret answer", model="gpt-4o",
                                         usage=convlog.Usage(input_tokens=100, output_tokens=7),
                                         cost_usd=Decimal("0.25"))])
    no_key(monkeypatch)
    costs = run(url, "--json", "costs", "--by", "user")
    assert costs.returncode == 0, costs.stderr
    [row] = json.loads(costs.stdout)
    assert (row["group"], row["input_tokens"], row["output_tokens"]) == ("alice", 100, 7)
    assert Decimal(str(row["cost_usd"])) == Decimal("0.25")
    tele = run(url, "telemetry")
    assert tele.returncode == 0, tele.stderr
    sql = run(url, "sql", "SELECT count(*) AS n, sum(input_tokens) AS t FROM messages", "--json")
    assert sql.returncode == 0, sql.stderr
    assert json.loads(sql.stdout) == [{"n": 2, "t": 100}]
    shown = run(url, "show", "k")  # content still needs the key
    assert shown.returncode == 1 and "is encrypted" in shown.stderr
    with pytest.raises(convlog.MissingKey):
        convlog.open(url, preload_tokenizer=False)
    with convlog.ConversationLog(url, preload_tokenizer=False, master_key="public") as log, \
            pytest.raises(convlog.MissingKey):
        log.conversation("k").append(convlog.user("no key, no write"))
    use_key(monkeypatch, key)  # nothing was written without the key
    with convlog.open(url, preload_tokenizer=False) as log:
        assert [m.content for m in log.messages("k")] == ["secret text", "secret answer"]
