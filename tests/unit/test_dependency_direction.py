"""The layers and rooms point one way. Checked on the source with `ast`, so a lazy
import inside a function is caught too.

- domain imports nothing of ours; projections only the domain;
- in adapters/ (import name `convlog`): accounting/ and crypto/ only the domain (and
  themselves); storage/ the domain and crypto/ (it seals payloads); views/ adds
  projections, storage and accounting; services/ adds views and crypto;
  cli/ may import anything, and nothing but cli/ imports cli/ (the demo included);
- any other room of adapters/ is an integration (ACP, SDK stores, HTTP, importers,
  HTML, watch, OpenTelemetry...): it reaches the log only through the facade
  (`import convlog`) or the application services, never around them into storage or
  the views. Each is registered in INTEGRATIONS, so a new room is a decision.
- no entry point (an integration room, or cli/) reaches the log's plumbing: no
  `.store`, `.writer`, `.write_lock`, `.analytics` or `._app` attribute is read there
  (issue 46). An entry point is handed the application (convlog.services.application)
  and uses its operations, or is handed a host's log and uses the host API and
  `application(log)`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ("convlog.domain",)
PROJECTIONS = (*DOMAIN, "convlog.projections")
ROOMS: dict[str, tuple[str, ...]] = {
    "domain": DOMAIN,
    "projections": PROJECTIONS,
    "adapters/accounting": (*DOMAIN, "convlog.accounting"),
    "adapters/crypto": (*DOMAIN, "convlog.crypto"),
    "adapters/storage": (*DOMAIN, "convlog.storage", "convlog.crypto"),
    "adapters/views": (*PROJECTIONS, "convlog.storage", "convlog.accounting", "convlog.views"),
    "adapters/services": (*PROJECTIONS, "convlog.storage", "convlog.accounting",
                          "convlog.views", "convlog.crypto", "convlog.services"),
    "adapters/cli": ("convlog",),  # anything of ours
}
INTEGRATION = (*PROJECTIONS, "convlog.services")
INTEGRATIONS = ("adapters/acp", "adapters/html", "adapters/http", "adapters/importers",
                "adapters/integrations", "adapters/otel", "adapters/watch")
NOT_FROM_THE_FACADE = ("convlog.cli",)


def imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.append("." * node.level + (node.module or ""))
            elif node.module:
                names.append(node.module)
    return names


def is_ours(name: str) -> bool:
    return name == "convlog" or name.startswith(
        ("convlog.", ".", "domain", "projections", "adapters"))


def allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def integration_rooms() -> list[str]:
    return sorted(
        f"adapters/{folder.name}" for folder in (ROOT / "adapters").iterdir()
        if (folder / "__init__.py").exists() and f"adapters/{folder.name}" not in ROOMS)


def offenders(room: str, prefixes: tuple[str, ...], *, facade: bool = False) -> list[str]:
    """Imports of ours in `room` outside `prefixes` (and the room itself); `facade`
    allows `import convlog` / `from convlog import name` too."""
    files = sorted((ROOT / room).rglob("*.py"))
    assert files, f"no sources found under {room}/"
    own = "convlog." + room.removeprefix("adapters/")
    return [f"{path.relative_to(ROOT)} imports {name}"
            for path in files for name in imported_modules(path)
            if is_ours(name) and not allowed(name, (*prefixes, own))
            and not (facade and name == "convlog")]


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_room_imports_only_inward(room: str) -> None:
    bad = offenders(room, ROOMS[room])
    assert not bad, "\n".join(bad)


def test_integration_rooms_go_through_the_facade_or_the_services() -> None:
    bad = [line for room in integration_rooms()
           for line in offenders(room, INTEGRATION, facade=True)]
    assert not bad, "\n".join(bad)


def test_every_integration_room_is_registered() -> None:
    assert integration_rooms() == sorted(INTEGRATIONS), (
        "a new room of adapters/: add it to ROOMS, or to INTEGRATIONS if it goes "
        "through the facade and the services")


ENTRY_POINTS = (*INTEGRATIONS, "adapters/cli")
PLUMBING = frozenset({"store", "writer", "write_lock", "analytics", "_app"})
"""Attributes of an open log's insides that entry points never read (issue 46)."""
OWN_PRIVATE = frozenset({"_store", "_writer"})
"""Read only on `self` (an entry point's own stream writer, say), never on a log."""


def plumbing_reads(path: Path) -> list[str]:
    """`x.store`, `x.writer`... read in `path` (a line each)."""
    return [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:"
            f"{node.lineno} reads {ast.unparse(node)}"
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Attribute) and not _is_module(node.value, "csv") and (
                node.attr in PLUMBING or (
                node.attr in OWN_PRIVATE and not (isinstance(node.value, ast.Name)
                                                  and node.value.id == "self")))]


def _is_module(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name  # `csv.writer` is no log's


def test_entry_points_never_reach_the_store_or_the_writer() -> None:
    bad = [line for room in ENTRY_POINTS for path in sorted((ROOT / room).rglob("*.py"))
           for line in plumbing_reads(path)]
    assert not bad, "\n".join(bad)


def test_the_plumbing_check_catches_a_store_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f(log, app):\n    log.store.load()\n    app.writer.execute()\n"
                   "    log._app\n    other._writer\n    self._writer.write(b'')\n")
    assert sorted(line.split(" reads ")[1] for line in plumbing_reads(bad)) == [
        "app.writer", "log._app", "log.store", "other._writer"]


def test_only_cli_imports_cli() -> None:
    bad = [f"{path.relative_to(ROOT)} imports {name}"
           for folder in ("domain", "projections", "adapters")
           for path in sorted((ROOT / folder).rglob("*.py"))
           if not path.is_relative_to(ROOT / "adapters" / "cli")
           and path != ROOT / "adapters" / "__main__.py"  # `python -m convlog`: the CLI
           for name in imported_modules(path) if allowed(name, NOT_FROM_THE_FACADE)]
    assert not bad, "\n".join(bad)


def test_every_room_is_documented() -> None:
    for room in [*ROOMS, *integration_rooms()]:
        init = ROOT / room / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) if init.exists() else None
        assert (doc and "May import" in doc) or room in ("domain", "projections"), (
            f"{room}/__init__.py must say what lives there and what it may import")


def test_every_module_is_named_in_its_rooms_docstring() -> None:
    """A newcomer reads a room's `__init__` to find where a thing lives: each module of
    the room is named there (a new module is added to its room's map)."""
    missing = []
    for room in [*ROOMS, *integration_rooms()]:
        folder = ROOT / room
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        missing += [f"{room}/{path.name}" for path in sorted(folder.glob("*.py"))
                    if path.stem != "__init__" and not re.search(rf"\b{path.stem}\b", doc)]
    assert not missing, "not named in their room's __init__ docstring:\n" + "\n".join(missing)


def test_the_check_catches_an_outward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from convlog.services.log import ConversationLog\n")
    assert imported_modules(bad) == ["convlog.services.log"]
    assert not allowed("convlog.services.log", ROOMS["adapters/storage"])
    assert not allowed("convlog.storagex", ("convlog.storage",))
    assert allowed("convlog.storage.sqlite", ROOMS["adapters/views"])
    assert not allowed("convlog.storage.sqlite", INTEGRATION)


LAZY_BY_DESIGN = {("convlog", "convlog.http.client"), ("convlog", "convlog.http.aclient")}
"""The facade serves the HTTP clients on first use (PEP 562), and they import it."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts = ["convlog", *parts[1:]] if parts[0] == "adapters" else ["convlog", *parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, tuple[set[str], set[str]]]:
    """Each module of ours -> (what it imports when it loads, what its functions import
    later); imports under TYPE_CHECKING are neither."""
    paths = {module_name(p): p for folder in ("domain", "projections", "adapters")
             for p in (ROOT / folder).rglob("*.py")}

    def ours(module: str, name: str | None = None) -> str | None:
        if name is not None and f"{module}.{name}" in paths:
            return f"{module}.{name}"
        return module if module in paths else None

    graph: dict[str, tuple[set[str], set[str]]] = {}
    for module, path in paths.items():
        now: set[str] = set()
        later: set[str] = set()

        def visit(node: ast.AST, in_function: bool, sets: tuple[set[str], set[str]]) -> None:
            for child in ast.iter_child_nodes(node):
                lazy = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                found: list[str | None] = []
                if isinstance(child, ast.Import):
                    found = [ours(a.name) for a in child.names]
                elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                    found = [ours(child.module, a.name) for a in child.names]
                sets[lazy].update(m for m in found if m)
                visit(child, lazy, sets)

        visit(ast.parse(path.read_text(), str(path)), False, (now, later))
        graph[module] = (now, later)
    return graph


def test_no_cycle_is_held_together_by_a_lazy_import() -> None:
    """A function that imports a module which (at load time) imports the function's
    own module is a cycle that only works because of where the import stands
    (acp/lifecycle took the proxy's private `_check` that way): move what both need
    into a module of its own. Loading a submodule loads its packages, except the
    facade (`convlog`) itself, which every module would reach."""
    graph = import_graph()

    def loads(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            module = todo.pop()
            if module in seen or module not in graph:
                continue
            seen.add(module)
            parts = module.split(".")
            todo += [*graph[module][0], *(".".join(parts[:i]) for i in range(2, len(parts)))]
        return seen

    bad = [f"{module} imports {target} in a function, and {target} loads {module}"
           for module, (_, later) in sorted(graph.items()) for target in sorted(later)
           if module in loads(target) and (module, target) not in LAZY_BY_DESIGN]
    assert not bad, "\n".join(bad)
