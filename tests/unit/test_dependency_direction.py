"""The layers point one way: domain imports nothing of ours, projections only the
domain, adapters anything. Checked on the source with `ast`, so a lazy import inside
a function is caught too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {
    "domain": ("convlog.domain",),
    "projections": ("convlog.domain", "convlog.projections"),
}


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


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_inward(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"no sources found under {layer}/"
    offending = []
    for path in files:
        for name in imported_modules(path):
            ours = name.startswith(("convlog", ".", "domain", "projections", "adapters"))
            if ours and not name.startswith(ALLOWED[layer]):
                offending.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offending, "\n".join(offending)


def test_the_check_catches_an_outward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from convlog.log import ConversationLog\n")
    assert imported_modules(bad) == ["convlog.log"]
