"""One clear error when an SDK integration is imported without its extra installed.

Why a function and not a bare import: the SDK's own ImportError names a module
(`agents`, `google.adk`) that says nothing about which convlog extra brings it."""

from __future__ import annotations

import importlib

from convlog.domain.errors import MissingExtra


def require(extra: str, module: str, what: str) -> None:
    """Import `module` or fail with the `pip install` line of `extra`."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"{what} needs the {extra!r} extra: pip install 'convlog[{extra}]' "
            f"(cannot import {module}: {exc})") from None
