"""One way to write: only the writer (convlog.services.writer) calls the store's
write, nothing outside storage/ swaps the store's sealer, and the services that
write are handed the writer, never the whole log. Checked on the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITER = ROOT / "adapters" / "services" / "writer.py"
WRITING_SERVICES = ("resume/run", "context", "memory", "items", "privacy", "import_run",
                    "retention")


def sources() -> list[Path]:
    return [p for p in sorted((ROOT / "adapters").rglob("*.py"))
            if not p.is_relative_to(ROOT / "adapters" / "storage")]


def _is_store(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("store", "_store")) or (
        isinstance(node, ast.Attribute) and node.attr in ("store", "_store"))


def store_writes(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{node.lineno}"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "execute" and _is_store(node.func.value)]


def sealer_assignments(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{node.lineno}"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr in ("sealer", "keyring")
                for t in node.targets)]


def test_only_the_writer_calls_the_stores_write() -> None:
    found = [line for p in sources() if p != WRITER for line in store_writes(p)]
    assert found == []
    assert store_writes(WRITER), "the check no longer sees the writer's own call"


def test_nothing_outside_storage_swaps_the_sealer_or_the_keyring() -> None:
    assert [line for p in sources() for line in sealer_assignments(p)] == []


def test_the_writing_services_never_import_the_log() -> None:
    for name in WRITING_SERVICES:
        path = ROOT / "adapters" / "services" / f"{name}.py"
        imports = [n.module for n in ast.walk(ast.parse(path.read_text()))
                   if isinstance(n, ast.ImportFrom)]
        assert "convlog.services.log" not in imports, path.name
        assert "convlog.services.writer" in imports, path.name
