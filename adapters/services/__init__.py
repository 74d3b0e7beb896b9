"""Application services: what a host does with a log, as use cases.

Lives here: the log and its conversation handles (`log`, with its analytics half in
`catalog` and the values it hands back in `results`; `handle`; `aio` for asyncio
hosts; `options`, how a log is opened), the one writer every write goes through
(`writer`), resuming after a restart (`resume/`: its `__init__` maps where a resume
is decided, recorded and served),
the context builder (`context`), the message builders (`builders`) and the typed
record input that every entry point decodes into (`jsonlines`: the CLI's `record`,
and any other surface that takes a host's lines), and `anthropic_blocks`, the one
mapping of Anthropic content blocks that the Claude Code importer and the Claude Agent
SDK store share (pairing needs one view of tool blocks).

May import: the domain, the projections, `storage/`, `views/`, `accounting/`.
Never `cli/` or an integration room: entry points call in, services never call out.
"""
