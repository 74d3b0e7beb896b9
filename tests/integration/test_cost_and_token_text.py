"""Issue 26, small things that gave a wrong impression:

* `convlog sessions`' TOKENS column summed usage tokens, so it read 0 for imported or
  ACP conversations that carry message tokens and no usage;
* an unknown cost was written four ways (``0.0000*``, ``-*``, ``$0.0000``,
  ``$0.0000+``): the CLI tables, the HTML page, the import summary and the resumption
  context. Now one function (`convlog.projections.money.usd_text`) writes it everywhere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import convlog
from convlog.cli.importing import print_summary
from convlog.cli.main import main
from convlog.projections.money import usd_text
from convlog.services.import_run import ImportSummary

MILLION = 1_000_000


@pytest.fixture
def url(tmp_path: Path) -> str:
    """Three conversations: priced (gpt-4o), unknown (a model no table knows),
    partial (both); and one with message tokens but no usage (an ACP or imported
    conversation)."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    known = {"model": "gpt-4o", "usage": convlog.Usage(input_tokens=MILLION)}
    unknown = {"model": "no-such-model", "usage": convlog.Usage(input_tokens=MILLION)}
    with convlog.open(url) as log:
        for key in ("priced", "unknown", "partial", "acp"):
            log.conversation(key, user="u1")
        log.append("priced", convlog.assistant("a", **known))  # type: ignore[arg-type]
        log.append("unknown", convlog.assistant("b", **unknown))  # type: ignore[arg-type]
        log.append_turn("partial", [convlog.assistant("c", **known),  # type: ignore[arg-type]
                                    convlog.assistant("d", **unknown)])  # type: ignore[arg-type]
        log.append_turn("acp", [convlog.user("what is up", tokens=40),
                                convlog.assistant("all good", tokens=60)])
    return url


def test_one_rendering_of_a_cost() -> None:
    assert usd_text(2.5) == "$2.5000"
    assert usd_text(2.5, incomplete=True) == "$2.5000+"  # at least that much
    assert usd_text(None, incomplete=True) == "unknown"  # usage, but no price at all
    assert usd_text(None) == "-"  # nothing to price


def _table(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    capsys.readouterr()
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines]


def test_sessions_shows_the_conversations_tokens_under_a_name_that_says_so(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    header, *rows = _table(["sessions", "--db", url], capsys)
    assert "TOKENS" not in header  # it said "tokens" and showed usage tokens
    content = header.index("CONTENT TOKENS")
    usage = header.index("USAGE TOKENS")
    by_key = {row[0]: row for row in rows}
    assert by_key["acp"][content] == "100"  # read 0 before
    assert by_key["acp"][usage] == "0"
    assert by_key["priced"][usage] == str(MILLION)
    capsys.readouterr()
    assert main(["sessions", "--json", "--db", url]) == 0
    listed = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed["acp"]["content_tokens"] == 100  # --json unchanged: the same fields
    assert listed["priced"]["input_tokens"] == MILLION


def test_the_cli_tables_render_costs_with_the_one_function(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    header, *rows = _table(["sessions", "--db", url], capsys)
    cost = {row[0]: row[header.index("COST USD")] for row in rows}
    assert cost == {"priced": usd_text(2.5), "unknown": usd_text(None, True),
                    "partial": usd_text(2.5, True), "acp": usd_text(None)}
    header, *rows = _table(["costs", "--by", "conversation", "--db", url], capsys)
    cost = {row[0]: row[header.index("COST USD")] for row in rows if len(row) > 1}
    assert cost["unknown"] == "unknown"
    assert cost["partial"] == "$2.5000+"


def test_the_html_page_renders_an_unknown_cost_with_the_one_function(
        url: str, tmp_path: Path) -> None:
    for key, text in (("unknown", "unknown"), ("partial", "$2.5000+"),
                      ("priced", "$2.5000"), ("acp", "-")):
        page = tmp_path / f"{key}.html"
        assert main(["html", key, "-o", str(page), "--db", url]) == 0
        facts = page.read_text().split('<dl class="facts">')[1].split("</dl>")[0]
        assert f"<dt>cost</dt><dd>{text}</dd>" in facts, facts


def test_the_html_report_data_carries_the_rendered_cost(url: str, tmp_path: Path) -> None:
    from convlog.html.report import catalog

    with convlog.open(url) as log:
        rows = {r["key"]: r for r in catalog(log, lambda key: key)}
    assert rows["unknown"]["cost_text"] == "unknown"
    assert rows["partial"]["cost_text"] == "$2.5000+"


def test_the_import_summary_renders_costs_with_the_one_function(
        capsys: pytest.CaptureFixture[str]) -> None:
    print_summary(ImportSummary(format="x", cost_usd=0.0, unpriced_models=["m"]))
    assert "cost unknown (no price known for m)" in capsys.readouterr().out
    print_summary(ImportSummary(format="x", cost_usd=1.5, unpriced_models=["m"]))
    assert "cost $1.5000+ (no price known for m)" in capsys.readouterr().out
    print_summary(ImportSummary(format="x", cost_usd=1.5))
    assert "cost $1.5000\n" in capsys.readouterr().out


def test_the_resumption_context_renders_costs_with_the_one_function(url: str) -> None:
    with convlog.open(url) as log:
        for fmt in ("markdown", "xml"):
            text = log.resumption_context(user="u1", conversations=4, format=fmt).text
            assert "$2.5000+" in text and "unknown" in text, text
            assert "$2.5000" in text.replace("$2.5000+", "")


def test_the_html_viewer_data_carries_each_messages_and_turns_rendered_cost(
        url: str) -> None:
    from convlog.html.conversation import conversation_data

    with convlog.open(url) as log:
        data = conversation_data(log, "partial")
    assert [m["cost_text"] for m in data["messages"]] == ["$2.5000", "unknown"]
    assert [t["cost_text"] for t in data["turns"]] == ["$2.5000+"]
