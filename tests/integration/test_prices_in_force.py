"""Issue 26: a cost shown is computed with the price table in force. Changing
``$CONVLOG_PRICES`` takes effect without `convlog views rebuild`, and unsetting it
leaves no custom price behind. Before, the views kept every message's cost as first
computed: a new price file changed nothing already in the views, and unsetting it
kept the custom prices. Each test drives the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.cli.main import main

MILLION = 1_000_000


def _record(url: str) -> None:
    with convlog.open(url) as log:
        log.append("k", convlog.user("hi"))
        log.append("k", convlog.assistant("own", model="my-llm", usage=convlog.Usage(
            input_tokens=MILLION, output_tokens=MILLION)))
        log.append("k", convlog.assistant("known", model="gpt-4o", usage=convlog.Usage(
            input_tokens=MILLION)))


def _costs(url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["costs", "--by", "model", "--json", "--db", url]) == 0
    return {r["group"]: r for r in json.loads(capsys.readouterr().out)}


def _session_cost(url: str, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    assert main(["sessions", "--json", "--db", url]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    return row["cost_usd"], row["cost_incomplete"]


def _prices(path: Path, input_rate: float, output_rate: float, **more: float) -> None:
    table = {"my-llm": {"input_per_mtok": input_rate, "output_per_mtok": output_rate}}
    if more:
        table["gpt-4o"] = {"input_per_mtok": more["gpt"], "output_per_mtok": 0.0}
    path.write_text(json.dumps(table))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_changed_price_file_takes_effect_and_an_unset_one_leaves_nothing(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = (f"sqlite:///{tmp_path / 'c.db'}" if backend == "sqlite"
           else str(request.getfixturevalue("pg_url")) + f"&views={tmp_path / 'v.duckdb'}")
    _record(url)
    prices = tmp_path / "prices.json"
    _prices(prices, 1.0, 2.0, gpt=10.0)
    monkeypatch.setenv("CONVLOG_PRICES", str(prices))
    costs = _costs(url, capsys)
    assert costs["my-llm"]["cost_usd"] == pytest.approx(3.0)
    assert costs["gpt-4o"]["cost_usd"] == pytest.approx(10.0)
    assert costs["my-llm"]["price_versions"] == ["host"]
    assert _session_cost(url, capsys) == (pytest.approx(13.0), False)

    _prices(prices, 5.0, 0.0)  # the same file, new prices: no rebuild asked for
    costs = _costs(url, capsys)
    assert costs["my-llm"]["cost_usd"] == pytest.approx(5.0)
    assert costs["gpt-4o"]["cost_usd"] == pytest.approx(2.5)  # back to genai-prices
    assert costs["gpt-4o"]["price_versions"][0].startswith("genai-prices")
    assert _session_cost(url, capsys) == (pytest.approx(7.5), False)

    monkeypatch.delenv("CONVLOG_PRICES")  # no custom price may stay behind
    costs = _costs(url, capsys)
    assert costs["my-llm"]["cost_usd"] is None
    assert costs["my-llm"]["cost_incomplete"] is True
    assert costs["my-llm"]["price_versions"] == []
    assert costs["gpt-4o"]["cost_usd"] == pytest.approx(2.5)
    assert _session_cost(url, capsys) == (pytest.approx(2.5), True)


def test_new_messages_after_a_price_change_use_the_table_in_force(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    _record(url)
    prices = tmp_path / "prices.json"
    _prices(prices, 1.0, 0.0)
    monkeypatch.setenv("CONVLOG_PRICES", str(prices))
    assert _costs(url, capsys)["my-llm"]["cost_usd"] == pytest.approx(1.0)
    _prices(prices, 4.0, 0.0)
    with convlog.open(url) as log:  # a message arrives along with the new prices
        log.append("k", convlog.assistant("more", model="my-llm", usage=convlog.Usage(
            input_tokens=MILLION)))
    assert _costs(url, capsys)["my-llm"]["cost_usd"] == pytest.approx(8.0)


def test_a_running_host_follows_an_edited_price_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running host (or `convlog serve`) reads the file again once it changed,
    so it shows the figures the CLI shows."""
    prices = tmp_path / "prices.json"
    _prices(prices, 1.0, 0.0)
    monkeypatch.setenv("CONVLOG_PRICES", str(prices))
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log:
        log.append("k", convlog.assistant("x", model="my-llm", usage=convlog.Usage(
            input_tokens=MILLION)))
        assert log.costs()[0].cost_usd == pytest.approx(1.0)
        _prices(prices, 3.0, 0.0)
        assert log.costs()[0].cost_usd == pytest.approx(3.0)
        assert log.conversations()[0].cost_usd == pytest.approx(3.0)
