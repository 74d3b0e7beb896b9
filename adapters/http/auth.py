"""Who is asking: bearer tokens, checked before any endpoint runs.

Two kinds of token. The admin token (`CONVLOG_TOKEN`) may do everything. A user token
(from `--user-tokens FILE`, a JSON object ``{"alice": "TOKEN", ...}``) may only see
and write conversations whose `user` is that user, and starts new ones as that user;
the catalog is filtered to them, and the cross-user endpoints (costs, telemetry, SQL)
are refused. Another user's conversation answers 404, exactly like a missing one, so
a token cannot probe which keys exist.

With no token configured at all, every request is admin: allowed only when the
server is bound to loopback (the server refuses to start otherwise).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from convlog.domain.errors import InvalidInput
from convlog.http.problems import ProblemError

MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class Principal:
    """The caller: `user` None is the admin (every conversation)."""

    user: str | None

    @property
    def admin(self) -> bool:
        return self.user is None

    def require_admin(self, what: str) -> None:
        if not self.admin:
            raise ProblemError(403, "forbidden", f"{what} needs the admin token "
                               "(CONVLOG_TOKEN): it spans every user's conversations")


ADMIN = Principal(None)


def _digest(token: str) -> bytes:
    # Looked up by digest: the lookup time does not depend on how much of a guess
    # matches a real token.
    return hashlib.sha256(token.encode()).digest()


def check_token(token: str, field: str) -> str:
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise InvalidInput(f"a token needs at least {MIN_TOKEN_CHARS} printable characters "
                           "and no spaces", field=field)
    return token


def load_user_tokens(path: str | Path) -> dict[str, str]:
    """``{"user": "token", ...}`` from a JSON file; every error names the file."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot read the user tokens: {exc.strerror}", where=where) from None
    except ValueError as exc:
        raise InvalidInput(f"not JSON: {exc}", where=where) from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in data.items()):
        raise InvalidInput('expected a JSON object {"user": "token", ...}', where=where)
    for user, token in data.items():
        check_token(token, f"{where}: {user}")
    if len(set(data.values())) != len(data):
        raise InvalidInput("two users share a token", where=where)
    return dict(data)


class Auth:
    def __init__(self, admin_token: str | None = None,
                 user_tokens: dict[str, str] | None = None):
        self._tokens: dict[bytes, Principal] = {}
        for user, token in (user_tokens or {}).items():
            self._tokens[_digest(check_token(token, f"user token of {user!r}"))] = Principal(user)
        if admin_token is not None:
            digest = _digest(check_token(admin_token, "CONVLOG_TOKEN"))
            if digest in self._tokens:
                raise InvalidInput("the admin token is also a user's token",
                                   field="CONVLOG_TOKEN")
            self._tokens[digest] = ADMIN

    @property
    def required(self) -> bool:
        return bool(self._tokens)

    def authenticate(self, authorization: str | None) -> Principal:
        if not self._tokens:
            return ADMIN
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ProblemError(401, "unauthorized", "send `Authorization: Bearer TOKEN`",
                               field="Authorization",
                               headers={"WWW-Authenticate": 'Bearer realm="convlog"'})
        found = self._tokens.get(_digest(token.strip()))
        if found is None:
            raise ProblemError(401, "unauthorized", "unknown token", field="Authorization",
                               headers={"WWW-Authenticate":
                                        'Bearer realm="convlog", error="invalid_token"'})
        return found


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
