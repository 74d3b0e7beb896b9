"""pyproject.toml in the form today's setuptools builds without warnings (issue 29):
the licence as an SPDX expression (a TOML table is deprecated), and every folder
shipped in the wheel listed as a package (a data folder left out warned on build)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_licence_is_an_spdx_expression() -> None:
    assert PROJECT["project"]["license"] == "MIT"
    assert PROJECT["build-system"]["requires"][0] == "setuptools>=77"


def test_every_shipped_folder_is_a_listed_package() -> None:
    listed = set(PROJECT["tool"]["setuptools"]["packages"])
    roots = {"convlog": ROOT / "adapters", "convlog.domain": ROOT / "domain",
             "convlog.projections": ROOT / "projections"}
    for name, root in roots.items():
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__" or not any(f.is_file() for f in folder.iterdir()):
                continue
            dotted = ".".join([name, *folder.relative_to(root).parts])
            if dotted.startswith(("convlog.domain", "convlog.projections")) \
                    and name == "convlog":
                continue
            assert dotted in listed, f"{folder} is shipped but not listed as {dotted!r}"
