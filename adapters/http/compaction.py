"""Endpoints of the history operations (issue 47). Compaction: the plan (what a
compaction would replace now, for the host to summarize with its own model), and
the compaction itself, with the summary the host wrote; the write decides again (the
range is chosen from the log inside it), so a plan that has moved since is a 409,
and nothing is recorded. Rewind: back to a message, for the model. Fork: a new
conversation continuing this one's history after a message."""

from __future__ import annotations

import convlog
from convlog.http.endpoint import Call, Endpoint, Param
from convlog.http.problems import ProblemError
from convlog.http.schema import CompactIn, CompactOut, ForkIn, ForkOut, RewindIn, RewindOut
from convlog.services.compaction import check_keep_last

KEY = "/v1/conversations/{key}"


async def plan(call: Call) -> convlog.CompactionPlan:
    key = await call.readable()
    keep_last = check_keep_last(call.q_int("keep_last", 10, minimum=0))
    return await call.run(call.log.compaction_plan, key, keep_last=keep_last)


async def compact(call: Call) -> CompactOut:
    body = await call.body(CompactIn)
    key = await call.readable()
    done = await call.run(call.log.compact, key, body.summary,
                          keep_last=check_keep_last(body.keep_last), reason=body.reason,
                          summarizer_name=body.summarizer, through=body.through_message_id)
    return CompactOut(compaction=done)


async def rewind(call: Call) -> RewindOut:
    body = await call.body(RewindIn)
    key = await call.readable()
    return RewindOut(rewound=await call.run(call.log.rewind, key, body.to,
                                            reason=body.reason))


async def fork(call: Call) -> ForkOut:
    body = await call.body(ForkIn)
    key = await call.readable()  # a user token forks its own conversations only
    if not call.principal.admin and body.user not in (None, call.principal.user):
        raise ProblemError(403, "forbidden", "a user token forks for its own user only",
                           field="user")
    return ForkOut(forked=await call.run(
        call.log.fork, key, at=body.at, new_key=body.key, user=body.user,
        agent=body.agent, channel=body.channel, title=body.title,
        metadata=dict(body.metadata) or None))


ENDPOINTS = [
    Endpoint("GET", KEY + "/compaction", plan,
             "What a compaction would replace now: the messages to summarize, the "
             "previous summary to fold in, the last message of the range",
             operation_id="getCompactionPlan", answer=convlog.CompactionPlan,
             tag="conversations",
             query=(Param("keep_last", {"type": "integer", "minimum": 0, "default": 10},
                          "keep the newest N messages as they are"),)),
    Endpoint("POST", KEY + "/compaction", compact,
             "Compact the history for the model with the host's summary (nothing is "
             "deleted)", operation_id="compact", body=CompactIn, answer=CompactOut,
             tag="conversations"),
    Endpoint("POST", KEY + "/rewind", rewind,
             "Rewind to a message: for the model, the messages after it are abandoned "
             "(nothing is deleted)", operation_id="rewind", body=RewindIn, answer=RewindOut,
             tag="conversations"),
    Endpoint("POST", KEY + "/fork", fork,
             "Fork at a message: a new conversation whose history is this one's up to "
             "it, by reference (this one is unaffected)", operation_id="fork",
             body=ForkIn, answer=ForkOut, tag="conversations"),
]
