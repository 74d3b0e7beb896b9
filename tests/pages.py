"""Conversations to render as HTML, built through the public API only.

`story` has everything a page marks: thinking, a tool call and its result, a native
session, a restart whose native tiers fail and whose fresh tier gets injected
history, then a user and an agent message full of hostile markup.
"""

from __future__ import annotations

import convlog
from convlog import TextPart, ThinkingPart, Tier, TierCall, TierFailed, ToolResultPart, ToolUsePart

# Each tries a different way out of the page: closing the data block, an attribute,
# an event handler, a javascript: URL, an HTML comment, a template expression.
HOSTILE = (
    '</script><script>window.__pwned = 1</script>'
    '"><img src=x onerror="window.__pwned = 2">'
    "' onmouseover='window.__pwned = 3' "
    '<a href="javascript:window.__pwned = 4">click</a>'
    "<!-- <script>window.__pwned = 5</script> -->"
    "{{ 7 * 7 }} ${7*7} \u2028\u2029 </style><style>body{display:none}</style>"
)
HOSTILE_KEY = 'evil:<script>window.__pwned = 6</script>:"quote'


def story(log: convlog.ConversationLog, key: str = "discord:thread:42", *,
          user: str = "u1", agent: str = "copilot") -> None:
    conv = log.conversation(key, user=user, agent=agent, channel="discord",
                            title="Auth design")
    conv.append_turn([
        convlog.user("What did we decide about auth?"),
        convlog.assistant([ThinkingPart(text="SECRET-THOUGHT: recall the design doc"),
                           TextPart(text="JWT with rotating keys.")], model="gpt-4o",
                          usage=convlog.Usage(input_tokens=812, output_tokens=9)),
    ])
    conv.inject_memory("Keys rotate every 24 hours (ADR-7).", memory_ids=["adr-7"])
    conv.append_turn([
        convlog.user("How often do they rotate?"),
        convlog.assistant([ToolUsePart(id="t1", name="read_file",
                                       arguments='{"path": "auth.yaml"}')], model="gpt-4o",
                          usage=convlog.Usage(input_tokens=900, output_tokens=20)),
        convlog.tool([ToolResultPart(tool_use_id="t1", content="rotate: 24h")],
                     tool_call_id="t1"),
        convlog.assistant("Every 24 hours.", model="gpt-4o",
                          usage=convlog.Usage(input_tokens=950, output_tokens=6)),
    ])
    conv.bind_native_session("sess-1", agent=agent)

    def resume_fails(call: TierCall) -> str:
        raise TierFailed("not_found", f"agent forgot {call.native_session_id}")

    def load_unsupported(call: TierCall) -> str:
        raise NotImplementedError("session/load")

    conv.resume([Tier("session/resume", resume_fails), Tier("session/load", load_unsupported),
                 Tier("session/new", lambda call: "sess-2")])
    conv.append_turn([
        convlog.user(HOSTILE),
        convlog.assistant("I will not run " + HOSTILE, model="gpt-4o",
                          usage=convlog.Usage(input_tokens=1200, output_tokens=30)),
    ])


def long_conversation(log: convlog.ConversationLog, key: str, messages: int) -> None:
    """`messages` short messages in turns of two, with host-given counts (fast)."""
    conv = log.conversation(key, user="u-long", agent="copilot", title="A long one")
    for start in range(0, messages, 500):
        batch = []
        for i in range(start, min(start + 500, messages)):
            make = convlog.user if i % 2 == 0 else convlog.assistant
            batch.append(make(f"message {i}: " + "lorem ipsum " * 8, tokens=20))
        conv.append_turn(batch)
