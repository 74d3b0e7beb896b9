"""Numbers are checked at the edge (issue 25): a cost that is infinite, NaN, negative
or absurd (`1e999` was stored and served as `1E+999`, the views showed inf), and a
token count past any real response (a 23-digit count was stored, the views showed 0)
are typed errors naming the field, in `record` (with the line), the Python API and
HTTP (422)."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

import convlog
from tests.httpserver import served

BAD_COSTS = ["1e999", "-1", '"NaN"', '"Infinity"', "1e12"]
BIG = "12345678901234567890123"


@pytest.mark.parametrize(("line", "field"), [
    *[(f'{{"type":"message","role":"assistant","content":"x","cost_usd":{c}}}', "cost_usd")
      for c in BAD_COSTS],
    ('{"type":"message","role":"assistant","content":"x","usage":{"input_tokens":' + BIG
     + "}}", "usage.input_tokens"),
    ('{"type":"message","role":"assistant","content":"x","usage":{"output_tokens":'
     "9223372036854775808}}", "usage.output_tokens"),
    ('{"type":"message","role":"assistant","content":"x","tokens":' + BIG + "}", "tokens"),
])
def test_record_refuses_out_of_range_numbers(line: str, field: str, sqlite_url: str) -> None:
    exe = str(Path(sys.executable).parent / "convlog")
    ok = '{"type":"message","role":"user","content":"fine"}'
    done = subprocess.run([exe, "record", "c:1", "--db", sqlite_url],
                          input=f"{ok}\n{line}\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("convlog: error: stdin:2:"), done.stderr
    assert field in done.stderr
    with convlog.open(sqlite_url) as log:
        assert log.sql("SELECT count(*) FROM messages")[1] == [(0,)]  # nothing written


@pytest.mark.parametrize("cost", ["1e999", "-0.01", "NaN", "1e12"])
def test_api_refuses_bad_costs(cost: str) -> None:
    with pytest.raises(convlog.InvalidInput) as caught:
        convlog.assistant("x", cost_usd=Decimal(cost))
    assert caught.value.field == "cost_usd"


@pytest.mark.parametrize("name", ["input_tokens", "cache_read_tokens"])
def test_api_refuses_huge_token_counts(name: str) -> None:
    with pytest.raises(convlog.InvalidInput) as caught:
        convlog.assistant("x", usage=convlog.Usage(**{name: int(BIG)}))
    assert caught.value.field == f"usage.{name}"
    with pytest.raises(convlog.InvalidInput) as caught:
        convlog.assistant("x", tokens=2**63)
    assert caught.value.field == "tokens"


def test_a_real_cost_and_count_still_pass() -> None:
    m = convlog.assistant("x", cost_usd=Decimal("123456.789"),
                          usage=convlog.Usage(input_tokens=10**12), tokens=10**9)
    assert m.cost_usd == Decimal("123456.789")


def test_http_answers_422_naming_the_field(tmp_path: Path) -> None:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log, served(log) as url, \
            httpx.Client(base_url=url, timeout=10) as http:
        for body, field in [
            ('{"messages":[{"type":"message","role":"assistant","content":"x",'
             '"cost_usd":1e999}]}', "cost_usd"),
            ('{"messages":[{"type":"message","role":"assistant","content":"x",'
             '"usage":{"input_tokens":'
             + BIG + "}}]}", "input_tokens"),
        ]:
            r = http.post("/v1/conversations/k/turns", content=body,
                          headers={"content-type": "application/json"})
            assert r.status_code == 422, r.text
            assert r.headers["content-type"] == "application/problem+json"
            assert field in r.json()["field"]
        assert http.get("/v1/conversations/k/messages").status_code in (200, 404)
        assert log.sql("SELECT count(*) FROM messages")[1] == [(0,)]
