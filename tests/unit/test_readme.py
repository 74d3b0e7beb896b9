"""The README and the reference in docs/ are a contract too: their examples must work and
their proofs must exist. (Issue 29 moved the reference out of the README into docs/*.md;
docs/moved.md maps each old section to its page.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convlog.services.jsonlines import LINE_TYPES, parse_lines

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
PAGES = {page.name: page.read_text() for page in sorted(DOCS.glob("*.md"))}
EVERYTHING = "\n".join([README, *PAGES.values()])


def page(name: str) -> str:
    return PAGES[name]


def test_the_readme_is_a_short_front_door() -> None:
    assert len(README.splitlines()) < 300


def test_the_readme_installs_what_works_today_first_then_names_every_extra() -> None:
    """`pip install convlog` cannot work before convlog is published: the Install
    starts with a clone, a git URL and the wheel (issue 44); every extra is listed."""
    import tomllib

    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    first = install.split("```sh", 1)[1].split("```", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in first.strip().splitlines()]
    assert lines[0].startswith("git clone ") and "pip install ." in lines
    assert "git+" in install and "make wheel" in install
    assert install.index("make wheel") < install.index("pip install convlog")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    table = install.split("| extra |", 1)[1]
    for extra in set(extras) - {"dev"}:
        assert f"`{extra}`" in table, extra


def test_every_extra_is_documented_and_all_includes_every_other() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    users = set(extras) - {"dev", "all"}
    for extra in users | {"all"}:
        assert f"pip install 'convlog[{extra}]'" in page("install.md"), extra
    included = {name.strip() for spec in extras["all"]
                for name in spec.split("[", 1)[1].rstrip("]").split(",")}
    assert included == users


def test_every_docs_page_the_readme_links_exists() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(links) >= 15
    for link in links:
        assert (ROOT / link).exists(), link


def test_the_two_setup_commands_are_still_documented() -> None:
    block = README.split("## Development", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.strip().splitlines()] == [
        ["make", "demo"], ["make", "test"]]


def test_every_record_line_in_the_readme_parses_and_every_type_is_shown() -> None:
    block = page("cli.md").split("### The `record` input format", 1)[1].split("```json", 1)[1]
    lines = block.split("```", 1)[0].strip().encode()
    commands, origins = parse_lines(lines, "README")
    assert len(commands) == len(origins) == len(lines.splitlines())
    shown = set(re.findall(r'"type": "(\w+)"', block.split("```", 1)[0]))
    assert shown == set(LINE_TYPES)


REFERENCES = sorted(set(re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", EVERYTHING)))


@pytest.mark.parametrize(("path", "name"), REFERENCES)
def test_every_test_the_guarantees_cite_exists(path: str, name: str) -> None:
    source = ROOT / path
    assert source.exists(), path
    if name:
        assert re.search(rf"^(def|class) {name}\b", source.read_text(), re.M), (path, name)


def test_the_guarantees_cite_tests() -> None:
    assert len(REFERENCES) >= 15


def test_every_queryable_table_and_view_is_documented_with_its_columns() -> None:
    from convlog.views.analytics import Analytics

    section = page("analytics.md").split("### Tables and views", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `(\w+)` \| [^|]+ \| ([^\n]+) \|$", section, re.M))
    tables = {t.name: t for v in Analytics.VIEWS for t in v.tables}
    for name in [*tables, *Analytics.SQL_VIEWS]:
        assert name in documented, f"{name} is missing from docs/analytics.md"
    for name, table in tables.items():
        for column in table.columns:
            assert column.name in documented[name], (name, column.name)


def test_every_cli_command_is_in_the_cli_reference() -> None:
    from convlog.cli.main import build_parser

    section = page("cli.md").split("## The CLI", 1)[1].split("\n## ", 1)[0]
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands
    missing = [name for name in commands if not re.search(rf"`(convlog )?{name}\b", section)]
    assert not missing, f"commands missing from docs/cli.md's table: {missing}"


MEMORY_SECTIONS = page("context.md").split("### Memory blocks (`[Context from memory]`)", 1)[1]
MEMORY_EXAMPLES = re.findall(r"```python\n(.*?)```", MEMORY_SECTIONS, re.S)


@pytest.mark.parametrize("code", MEMORY_EXAMPLES, ids=["memory-blocks", "user-context"])
def test_the_memory_and_user_context_examples_run(code: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "docs/context.md", "exec"), {})  # their asserts are the checks
    if "print(span.text)" in code:
        assert capsys.readouterr().out.startswith("## Recent conversations of `u1`")


def test_the_debugging_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    section = page("debugging.md").split("### Debugging: what the user saw", 1)[1].split(
        "\n### ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    exec(compile(code, "docs/debugging.md", "exec"), {})  # its asserts are the checks
    assert "before the clear" in capsys.readouterr().out


def test_every_http_endpoint_is_in_the_http_reference() -> None:
    """Each path of docs/openapi.json has a row in docs/http.md's table (the reference once
    said memory blocks had no endpoint while they had one)."""
    import json

    http = page("http.md")
    table = "\n".join(line for line in http.splitlines() if line.startswith("| `"))
    paths = json.loads((DOCS / "openapi.json").read_text())["paths"]
    for path in paths:
        tail = path.split("/v1/conversations/{key}", 1)[-1]
        shown = [re.escape(path)] + ([rf"\.\.\.{re.escape(tail)}"] if tail else [])
        assert re.search(rf"(?:{'|'.join(shown)})[`? ]", table), f"{path} missing from docs/http.md"
    assert "no endpoint" not in http
