"""Drop-in session stores for the agent SDKs hosts already use: switching an existing
agent to convlog is one line where the SDK takes its session store.

    openai_agents.py     `ConvlogSession`: the OpenAI Agents SDK's `Session` protocol
    openai_items.py      Responses input items <-> convlog messages (item kept as `raw`)
    claude_agent_sdk.py  `ConvlogSessionStore`: the Claude Agent SDK's `SessionStore`
    claude_entries.py    Claude Code transcript entries read back (pairing, repairs)
    claude_messages.py   a transcript entry -> the convlog message stored beside it
    google_adk.py        `ConvlogSessionService`: Google ADK's `BaseSessionService`
    adk_events.py        ADK events <-> convlog messages, and their state deltas
    extras.py            the one clear error when an SDK's extra is not installed

Each SDK is an optional extra (`pip install 'convlog[openai-agents]'`,
`'convlog[claude-agent-sdk]'`, `'convlog[google-adk]'`); `import convlog` and this
package never import an SDK, only the module for that SDK does.

Every store keeps the SDK's own item verbatim in the message's `raw` (what the SDK
gets back is exactly what it gave), and a readable message beside it, so contexts,
costs and the HTML pages work on SDK conversations too.

Also here:
- `adk_pairs`: ADK events for `get_session`, function calls and responses paired.
- `openai_nearest`: a message another host wrote, as the nearest Responses items.
- `settled`: writes that a cancelled caller still waits for.

May import: the public facade (`import convlog`), the application services
(`convlog.services`), domain and projection types, and the SDKs. It is an
integration room: never storage or the views, no events written around the services.
A store is handed a host's log: what it needs beyond the host API (a batch of
commands, a read of retracted messages) it asks of the log's application,
`convlog.services.log.application(log)`, never of `log.store` / `log.writer` (the
dependency test reads every attribute).
"""
