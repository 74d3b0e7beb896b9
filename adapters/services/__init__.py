"""Application services: what a host does with a log, as use cases.

Lives here: the composition root (`application`: `bootstrap` opens the store and
builds ONE `Application` per open log: the writer, the read API, the catalog, request
claims, the injection record, the import driver, the context builder, keys), the
store's read API (`reads`), the host API over it: the log and its conversation
handles (`log`, with its analytics half in `catalog` and the values it hands back in
`results`; `handle`; `aio` for asyncio hosts; `options`, how a log is opened), the
one writer every write goes through (`writer`), resuming after a restart
(`resume/`: its `__init__` maps where a resume is decided, recorded and served), the
context builder (`context`), the message builders (`builders`) and the typed
record input that every entry point decodes into (`jsonlines`: the CLI's `record`,
and any other surface that takes a host's lines), and `anthropic_blocks`, the one
mapping of Anthropic content blocks that the Claude Code importer and the Claude Agent
SDK store share (pairing needs one view of tool blocks).

Also here:
- `items`: the live history (current epoch, not retracted) an SDK store hands back.
- `compaction`: a compaction (the range, the host's summary, its record).
- `rewind`: a rewind (back to a message, for the model).
- `fork`: a fork (a new conversation continuing a parent's history after a message,
  by reference).
- `memory`: memory blocks: inject (decided inside the write), cooldown, live blocks.
- `summary`: one conversation at a glance, without building a context.
- `privacy`: erasure and key management on an open log; `redacting`: the `redact=` hook.
- `retention`: the retention policy set, read and carried out (archive, erase).
- `export_jsonl`: a conversation as `convlog record` lines (`convlog export --format`).
- `copy_store`: a whole store copied into another, resumable, verified (`convlog copy`).
- `importing`: an importer's contract; `import_run`: the import driver (a conversation,
  one batch); `import_usage`: tokens and USD of an import.
- `requests`: a request's idempotency key carried into its write.
- `jsonstrict`: the one JSON decoder of everything a host sends.
- `feed`: the whole log as one ordered feed, for exporters; `sidecar`: a follower's own
  state file.
- `shown_counts`: the token count a reader is shown for a message.
- `images`: an image as every reader shows it (its URL, or its bytes' SHA-256 and
  size), whatever surface carried it.

May import: the domain, the projections, `storage/`, `views/`, `accounting/`.
Never `cli/` or an integration room: entry points call in, services never call out.
Entry points are handed the `Application` (or a host's log, and then reach its
application with `log.application(log)`); they use its operations, never its
`store` or `writer` (tests/unit/test_dependency_direction.py).
"""
