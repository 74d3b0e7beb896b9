"""How a failed command says so: exit status 2 for a usage error, 1 for any other, and
one line on stderr, either ``convlog: error: ...`` or, under ``--json``, one JSON
document ``{"error": {...}}`` a script can read (the type of the error, its message,
the field and place it names, the usage for a usage error). No traceback.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import msgspec

from convlog.cli.arguments import UsageError
from convlog.cli.render import visible
from convlog.domain.errors import InvalidInput


def fail(exc: BaseException, message: str, status: int, *, as_json: bool,
         usage: str | None = None) -> NoReturn:
    """Report `exc` (as `message`) and exit with `status`."""
    if as_json:
        error: dict[str, Any] = {"status": status, "type": type(exc).__name__,
                                 "message": message}
        if isinstance(exc, InvalidInput):
            error.update({k: v for k, v in (("field", exc.field), ("where", exc.where))
                          if v is not None})
        if usage is not None:
            error["usage"] = usage.strip()
        sys.stderr.write(msgspec.json.encode({"error": error}).decode() + "\n")
    else:
        if usage is not None:
            sys.stderr.write(usage)
        sys.stderr.write(f"convlog: error: {visible(message)}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def fail_usage(exc: UsageError, usage: str, *, as_json: bool) -> NoReturn:
    fail(exc, str(exc), 2, as_json=as_json, usage=exc.usage or usage)
