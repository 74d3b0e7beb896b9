"""The checks of what a client sends to the methods the proxy serves itself
(convlog.acp.proxy, convlog.acp.lifecycle): against the SDK's schema models, or only
what the proxy relies on. Each failure is the JSON-RPC invalid-params error naming the
bad fields; the SDK (pydantic) is imported when a check first runs."""

from __future__ import annotations

from typing import Any

from convlog.acp.sessions import key_of
from convlog.domain.conversation import check_key
from convlog.domain.errors import InvalidInput


def invalid(exc: Exception) -> Exception:
    """A pydantic ValidationError as the JSON-RPC error naming the bad fields."""
    from acp import RequestError

    errors = [{"field": ".".join(str(p) for p in e.get("loc", ())), "error": e.get("msg")}
              for e in getattr(exc, "errors", list)()]
    return RequestError.invalid_params({"errors": errors})


def check(model_name: str, params: Any) -> None:
    """`params` against the SDK's schema model `model_name` (``CloseSessionRequest``...):
    an invalid-params error naming each bad field otherwise."""
    import acp.schema
    from pydantic import ValidationError

    try:
        getattr(acp.schema, model_name).model_validate(params)
    except ValidationError as exc:
        raise invalid(exc) from None


def check_prompt(params: Any) -> None:
    """Only what the proxy relies on: a content block type it does not know (a newer
    protocol's) passes through to the agent, which decides."""
    from acp import RequestError

    errors = []
    if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
        errors.append({"field": "sessionId", "error": "must be a string"})
    prompt = params.get("prompt") if isinstance(params, dict) else None
    if not isinstance(prompt, list) or not all(isinstance(b, dict) for b in prompt):
        errors.append({"field": "prompt", "error": "must be a list of content blocks"})
    if errors:
        raise RequestError.invalid_params({"errors": errors})


def check_session_id(session_id: str) -> None:
    """An id whose conversation key the log would refuse (a NUL, over the key length)
    names no session that can exist: invalid params, not an internal error."""
    from acp import RequestError

    try:
        check_key(key_of(session_id))
    except InvalidInput as exc:
        raise RequestError.invalid_params(
            {"errors": [{"field": "sessionId", "error": exc.reason.replace(
                "conversation key", "session id (as a conversation key)")}]}) from None
