"""Old public names that still work, with a DeprecationWarning when used.

A class renamed for clarity keeps its old name as an alias for a while: the module
sets `__getattr__ = renamed(__name__, {"Old": "New"}, globals())` (PEP 562), so the
old name is found only when asked for, and each use says what to write instead.
Stored formats never depend on these names (events are stored under their tags).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any


class ConvlogDeprecationWarning(DeprecationWarning):
    """What convlog's own deprecations warn with: a DeprecationWarning (a host's
    filters for those apply), of a class of its own so that convlog's test suite can
    make exactly these errors (pyproject.toml, ``filterwarnings``) and not every
    library's."""


def warn_renamed(old: str, new: str, what: str = "the same class under its clearer name",
                 stacklevel: int = 3) -> None:
    """Say that `old` is deprecated and `new` is what to write: the one wording of every
    deprecation of a name (a class, a function, a method, a field)."""
    warnings.warn(f"{old} is deprecated: use {new}, {what}", ConvlogDeprecationWarning,
                  stacklevel=stacklevel)


def renamed(module: str, names: Mapping[str, str], namespace: Mapping[str, Any]
            ) -> Callable[[str], Any]:
    """A module `__getattr__` serving each old name of `names` as its new one."""

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed(f"{module}.{name}", new)
        return namespace[new]

    return __getattr__
