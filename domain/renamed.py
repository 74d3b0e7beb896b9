"""Old public names that still work, with a DeprecationWarning when used.

A class renamed for clarity keeps its old name as an alias for a while: the module
sets `__getattr__ = renamed(__name__, {"Old": "New"}, globals())` (PEP 562), so the
old name is found only when asked for, and each use says what to write instead.
Stored formats never depend on these names (events are stored under their tags).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


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


def old_method(new: Callable[P, R], old: str, owner: str) -> Callable[P, R]:
    """The old name of the method `new` of class `owner`: the same method (signature,
    coroutine or not), warning on each call. ``sessions = old_method(conversations,
    "sessions", "ConversationLog")`` in the class body."""
    what = "the same operation under its clearer name"
    if inspect.iscoroutinefunction(new):
        @functools.wraps(new)
        async def old_coroutine(*args: Any, **kwargs: Any) -> Any:
            warn_renamed(f"{owner}.{old}()", f"{new.__name__}()", what)
            return await new(*args, **kwargs)

        alias: Any = old_coroutine
    else:
        @functools.wraps(new)
        def old_function(*args: Any, **kwargs: Any) -> Any:
            warn_renamed(f"{owner}.{old}()", f"{new.__name__}()", what)
            return new(*args, **kwargs)

        alias = old_function
    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated: `{new.__name__}`, the same operation under its clearer name."
    return alias  # type: ignore[no-any-return]

