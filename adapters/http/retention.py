"""Endpoints of retention: the policy of the store (admin) and of one conversation,
and a run of it (admin; `dry_run=true` lists exactly what it would do).

The store's policy spans every user, so it needs the admin token; a user token
reads and sets its own conversations' policies. See docs/settings.md#retention.
"""

from __future__ import annotations

import convlog
from convlog.http.endpoint import Call, Endpoint, Param
from convlog.http.schema import RetentionIn
from convlog.services.retention import RetentionInForce, RetentionRun

KEY = "/v1/conversations/{key}"


async def store_policy(call: Call) -> RetentionInForce:
    call.principal.require_admin("the store's retention policy")
    return await call.run(call.log.store_retention_policy)


async def set_store_policy(call: Call) -> RetentionInForce:
    call.principal.require_admin("the store's retention policy")
    body = await call.body(RetentionIn)
    await call.run(call.log.set_store_retention_policy, body.policy())
    return await call.run(call.log.store_retention_policy)


async def policy(call: Call) -> RetentionInForce:
    key = await call.readable()
    return await call.run(call.log.retention_policy, key)


def _set(log: convlog.ConversationLog, key: str, body: RetentionIn) -> RetentionInForce:
    log.set_retention_policy(key, body.policy())
    return log.retention_policy(key)


async def set_policy(call: Call) -> RetentionInForce:
    body = await call.body(RetentionIn)
    key = await call.readable()  # an existing conversation: a policy starts none
    return await call.run(_set, call.log, key, body)


async def run(call: Call) -> RetentionRun:
    call.principal.require_admin("a retention run")
    return await call.run(call.log.enforce_retention, dry_run=call.q_bool("dry_run"))


ENDPOINTS = [
    Endpoint("GET", "/v1/retention", store_policy,
             "The store's retention policy (source `none`: keep everything)",
             operation_id="getStoreRetention", answer=RetentionInForce, tag="retention",
             admin=True),
    Endpoint("PUT", "/v1/retention", set_store_policy,
             "Set the store's retention policy from now on (pinned: the server's own "
             "--archive-after-days... no longer change it)",
             operation_id="setStoreRetention", body=RetentionIn,
             answer=RetentionInForce, tag="retention", admin=True),
    Endpoint("GET", KEY + "/retention", policy,
             "The retention policy in force for this conversation, and whose it is",
             operation_id="getRetention", answer=RetentionInForce, tag="retention"),
    Endpoint("PUT", KEY + "/retention", set_policy,
             "Set this conversation's own retention policy from now on (it wins over "
             "the store's)",
             operation_id="setRetention", body=RetentionIn, answer=RetentionInForce,
             tag="retention"),
    Endpoint("POST", "/v1/retention/run", run,
             "Carry out the retention policy now: archive and erase what it asks, each "
             "an event; with dry_run=true, list exactly that and write nothing",
             operation_id="runRetention", answer=RetentionRun, tag="retention", admin=True,
             query=(Param("dry_run", {"type": "boolean", "default": False},
                          "only list what would be done"),)),
]
