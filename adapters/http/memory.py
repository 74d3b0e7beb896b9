"""Endpoints of memory: a conversation's memory blocks (inject one, see the live ones
and the cooldown), and the context across a user's recent conversations.

An injection is decided inside the write, like every command (a memory id that is
cooling down is refused with 422 naming `memory_ids`, and nothing is recorded), so
two servers on one PostgreSQL cannot both inject the same memory.
"""

from __future__ import annotations

import msgspec

import convlog
from convlog.domain.conversation import SetMemoryPolicy
from convlog.domain.errors import InvalidInput
from convlog.domain.events import MemoryInjected
from convlog.domain.memory import InjectMemory, check_depth
from convlog.http.conversations import CONTEXT_QUERY
from convlog.http.endpoint import Call, Endpoint, Param
from convlog.http.problems import ProblemError
from convlog.http.schema import MemoryIn, MemoryPolicyIn, MemoryState
from convlog.projections.memory import check_cap
from convlog.projections.resumption import SPAN_FORMATS
from convlog.services.memory import as_block, cooldown
from convlog.services.resume.resumption import SPAN_MESSAGES, span_budget

KEY = "/v1/conversations/{key}"


def _recorded(log: convlog.ConversationLog, key: str, version: int) -> convlog.MemoryBlock:
    [row] = log.events(key, after=version - 1, upto=version)
    assert isinstance(row.event, MemoryInjected), row
    return as_block(row.version, row.event)


async def inject(call: Call) -> convlog.MemoryBlock:
    body = await call.body(MemoryIn)
    command = InjectMemory(text=body.text, memory_ids=list(body.memory_ids),
                           native_session_id=body.native_session_id)
    if body.block_id is not None:
        command = msgspec.structs.replace(command, block_id=body.block_id)
    key, first = await call.writable()
    result = await call.write(key, [*first, command])
    return await call.run(_recorded, call.log, key, result.version)


def _state(log: convlog.ConversationLog, key: str, at: int | None) -> MemoryState:
    state = log.state(key)
    cap = state.policy()[0]  # the conversation's recorded policy
    depth = state.cooldown_depth(log.context_window_depth)  # what an injection enforces
    return MemoryState(live=log.live_memory(key, at=at),
                       cooldown=cooldown(state, depth),
                       max_injected_blocks_in_history=cap, context_window_depth=depth)


async def set_policy(call: Call) -> MemoryState:
    body = await call.body(MemoryPolicyIn)
    check_cap(body.max_injected_blocks_in_history)
    check_depth(body.context_window_depth)
    key, first = await call.writable()
    await call.write(key, [*first, SetMemoryPolicy(
        max_injected_blocks_in_history=body.max_injected_blocks_in_history,
        context_window_depth=body.context_window_depth, pinned=True)])
    return await call.run(_state, call.log, key, None)


async def state(call: Call) -> MemoryState:
    key = await call.readable()
    return await call.run(_state, call.log, key, call.q_int("at"))


async def user_context(call: Call) -> convlog.ResumptionContext:
    user = call.q_str("user")
    if not call.principal.admin:  # a user token reads its own conversations only
        if user is not None and user != call.principal.user:
            raise ProblemError(403, "forbidden", "a user token reads its own conversations "
                               "only", field="user")
        user = call.principal.user
    try:
        budget = span_budget(call.q_int("tokens"), call.q_int("messages"),
                             call.q_int("chars"))
    except InvalidInput as exc:
        raise InvalidInput(exc.reason, field=(exc.field or "").removeprefix("budget.")
                           ) from None
    return await call.run(call.log.resumption_context, user=user,
                          workspace=call.q_str("workspace"),
                          conversations=call.q_int("conversations", 3) or 3, budget=budget,
                          format=call.q_str("format", "xml", SPAN_FORMATS) or "xml",
                          model=call.q_str("model"))


_SPAN_QUERY = (
    Param("user", {"type": "string"}, "the user (a user token: its own)"),
    Param("workspace", {"type": "string"}, "the workspace (with user: both must match)"),
    Param("conversations", {"type": "integer", "minimum": 1, "default": 3},
          "the N most recently active conversations"),
    *[p for p in CONTEXT_QUERY if p.name in ("tokens", "chars", "model")],
    Param("messages", {"type": "integer", "minimum": 1, "default": SPAN_MESSAGES},
          "at most N messages in total across the conversations"),
    Param("format", {"type": "string", "enum": list(SPAN_FORMATS), "default": "xml"},
          "xml or markdown"),
)

ENDPOINTS = [
    Endpoint("POST", KEY + "/memory", inject,
             "Inject a memory block before a turn; returns it as the agent must get it",
             operation_id="injectMemory",
             body=MemoryIn, answer=convlog.MemoryBlock, tag="memory"),
    Endpoint("GET", KEY + "/memory", state,
             "The live memory blocks (now, or at log version `at`) and the memory ids "
             "cooling down",
             operation_id="getMemory", answer=MemoryState, tag="memory",
             query=(Param("at", {"type": "integer", "minimum": 1},
                          "the blocks live at this log version (a replay)"),)),
    Endpoint("PUT", KEY + "/memory/policy", set_policy,
             "Set this conversation's memory policy from here on (recorded in its log; "
             "the server's own settings no longer change it)",
             operation_id="setMemoryPolicy", body=MemoryPolicyIn, answer=MemoryState,
             tag="memory"),
    Endpoint("GET", "/v1/context", user_context,
             "One budgeted context across a user's (or workspace's) recent conversations, "
             "newest first, with the catalog's metadata",
             operation_id="getUserContext", answer=convlog.ResumptionContext,
             tag="memory", query=_SPAN_QUERY),
]
