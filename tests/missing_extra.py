"""A package made missing for real, in a fresh interpreter: its import system refuses
the package (a meta path finder installed by a `sitecustomize` on PYTHONPATH), so a
test sees what a user without the extra sees, and nothing is mocked."""

from __future__ import annotations

import os
from pathlib import Path

BLOCKER = '''
import importlib.abc, sys
BLOCKED = {blocked!r}

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
'''


def env_without(folder: Path, *blocked: str, base: dict[str, str] | None = None
                ) -> dict[str, str]:
    """An environment whose Python processes cannot import `blocked` (top-level
    package names, e.g. "acp" or "google.adk"); the blocker lives in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(BLOCKER.format(blocked=tuple(blocked)))
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)
    return env
