"""Google ADK events for `get_session`, function calls and responses in pairs (issue 28).

The rule is convlog.projections.pairing (`pair`); this module only describes ADK
events to it and renders its plan as ADK events (their JSON dumps, before
`Event.model_validate`, so nothing is decoded twice). What ADK needs kept as it is:

- Calls ADK itself expects to stay open are never answered here: interrupts (ids in
  `long_running_tool_ids`, and the `adk_request_input` / `adk_request_credential`
  calls of sessions stored without them, as `google.adk.events._interrupts` reads
  them), and, in a resumable app, every call of the session's newest invocation:
  resuming it re-runs its unanswered calls (crash recovery,
  `flows/llm_flows/core/_resume.py`), which a synthetic response would prevent. The
  service is not told whether the app is resumable; its events are: only a resumable
  app records agent states (`actions.agent_state` / `actions.end_of_agent`, written
  when an agent ends or pauses). So a resumable app whose very first invocation died
  mid-tool is read as not resumable: its call gets a lost response and resuming it
  goes on to the model with that response, instead of re-running the tool. The
  responses of open calls may come later, in any invocation.
- Order: events come back in stored order. ADK answers a call wherever its response
  is (its contents builder moves async responses up to their call), so text between
  a call and its response does not end the exchange (`Tools.other` is False), and a
  later response is not moved. A call answered twice keeps both responses (a long
  running tool reports progress under one id; ADK takes the last).
- A call id may be reused: a response belongs to the newest call before it with that
  id (ADK's rule, and pairing's own: `scope`), so each call occurrence is paired under
  its own key; ADK gets its events back with their ids as stored (its builder pairs
  by the same rule). Calls without id are left alone, as ADK does (ids are stripped
  for some model families).

A call with no response gets, right after its event, a synthetic event built like
ADK's own seal of an aborted invocation (`google.adk.events._abort_events`): author,
branch, isolation scope and invocation of the call's event, role ``user``, a
``function_response`` per lost call whose ``response`` is ``{"error": lost_text}``,
the call's timestamp, and ``custom_metadata.convlog_repair`` naming the cause. A
response with no call before it is taken out of its event (ADK's builder drops it
too; an event left without parts keeps its actions, without content).
"""

from __future__ import annotations

import uuid
from typing import Any

from convlog.projections.pairing import Lost, Scope, Tools, pair, scope

_INTERRUPT_CALLS = frozenset({"adk_request_input", "adk_request_credential"})
_NEUTRAL = Tools(other=False)


def _parts(event: dict[str, Any]) -> list[Any]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def pairing_view(event: dict[str, Any]) -> dict[str, Any]:
    """All `paired_events` reads of `event` to plan the pairing: its invocation, its
    actions (only whether they mark an agent state), its long-running ids and the
    parts that hold a function call or response (the others add nothing to the
    plan). `paired_events` of the views returns the views themselves exactly when it
    returns the events themselves, so a reader can decide on small views and leave
    each whole event to be decoded when it is needed (issue 30); a list that needs
    repairs is redone over the whole events, which `_without` and `_lost_event`
    read. tests/sdks/test_google_adk_pairs.py checks the two agree."""
    view: dict[str, Any] = {}
    if "invocation_id" in event:
        view["invocation_id"] = event["invocation_id"]
    actions = event.get("actions")
    if isinstance(actions, dict):
        marks = {k: actions[k] for k in ("end_of_agent", "agent_state") if k in actions}
        if marks:
            view["actions"] = marks
    elif actions:
        view["actions"] = actions
    if "long_running_tool_ids" in event:
        view["long_running_tool_ids"] = event["long_running_tool_ids"]
    tools = [p for p in _parts(event) if isinstance(p, dict) and (
        "function_call" in p or "function_response" in p)]
    if tools:
        view["content"] = {"parts": tools}
    return view


def paired_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` (ADK event dumps, stored order) with every call answered and every
    response after its call; a well-paired session comes back as the same list."""
    tools: list[Tools] = []
    exempt_at: list[tuple[int, int]] = []  # (event, call) of calls never answered here
    newest_at: list[tuple[int, int]] = []  # (event, call) of the newest invocation's
    newest = events[-1].get("invocation_id") if events else None
    resumable = False
    any_call = False
    for i, event in enumerate(events):
        actions = event.get("actions")
        if actions and not resumable and (actions.get("end_of_agent")
                                          or actions.get("agent_state") is not None):
            resumable = True
        parts = _parts(event)
        if not parts:
            tools.append(_NEUTRAL)
            continue
        interrupts = event.get("long_running_tool_ids") or ()
        calls: list[tuple[str, str]] = []
        results: list[str] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            call = part.get("function_call")
            if isinstance(call, dict) and call.get("id"):
                cid, name = str(call["id"]), str(call.get("name") or "")
                if cid in interrupts or name in _INTERRUPT_CALLS:
                    exempt_at.append((i, len(calls)))
                if event.get("invocation_id") == newest:
                    newest_at.append((i, len(calls)))
                calls.append((cid, name))
                continue
            answer = part.get("function_response")
            if isinstance(answer, dict) and answer.get("id"):
                results.append(str(answer["id"]))
        any_call = any_call or bool(calls)
        tools.append(Tools(calls=tuple(calls), results=tuple(results), other=False)
                     if calls or results else _NEUTRAL)
    if not any_call and not any(t.results for t in tools):
        return events
    # a reused id: each call under its own key, a response the newest call's before
    # it (ADK's rule, and pairing's: convlog.projections.pairing.scope)
    scoped = scope(tools)
    keyed = scoped.items
    exempt = {keyed[i].calls[j][0] for i, j in (exempt_at + newest_at if resumable
                                                 else exempt_at)}
    plan = pair(keyed)
    lost: dict[int, list[Lost]] = {}
    call_index = {key: i for i, t in enumerate(keyed) for key, _ in t.calls}
    for step in plan.steps:
        if isinstance(step, Lost) and step.call_id not in exempt:
            lost.setdefault(call_index[step.call_id], []).append(step)
    drops: dict[int, set[str]] = {}
    for repair in plan.repairs:  # duplicates stay (see above); results without call go
        if repair.kind == "dropped" and repair.cause != "duplicate":
            drops.setdefault(repair.index, set()).add(scoped.id_of(repair.call_id))
    if not lost and not drops:
        return events
    out: list[dict[str, Any]] = []
    for i, event in enumerate(events):
        out.append(_without(event, drops[i]) if i in drops else event)
        if i in lost:
            out.append(_lost_event(event, lost[i], scoped))
    return out


def _without(event: dict[str, Any], gone: set[str]) -> dict[str, Any]:
    """`event` without the responses to the call ids in `gone`."""
    parts = [p for p in _parts(event) if not (
        isinstance(p, dict) and isinstance(p.get("function_response"), dict)
        and str(p["function_response"].get("id")) in gone)]
    event = dict(event)
    if parts:
        event["content"] = {**event["content"], "parts": parts}
    else:
        event.pop("content", None)
    return event


def _lost_event(call_event: dict[str, Any], steps: list[Lost], scoped: Scope
                ) -> dict[str, Any]:
    ids = [scoped.id_of(s.call_id) for s in steps]
    made: dict[str, Any] = {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL,
                             f"convlog-lost:{call_event.get('id')}:{','.join(ids)}")),
        "invocation_id": call_event.get("invocation_id", ""),
        "author": call_event.get("author", ""),
        "timestamp": call_event.get("timestamp", 0.0),
        "content": {"role": "user", "parts": [
            {"function_response": {"id": cid, "name": s.name, "response": {"error": s.text}}}
            for cid, s in zip(ids, steps, strict=True)]},
        "custom_metadata": {"convlog_repair": {
            "kind": "synthesized", "calls": ids, "causes": [s.cause for s in steps]}},
    }
    for field in ("branch", "isolation_scope", "node_info"):
        if call_event.get(field) is not None:
            made[field] = call_event[field]
    return made
