"""Storage technology: where events are kept, and in which bytes.

Lives here: the eventsourcing application (`application`), the msgspec mapper that
turns events into stored rows and back (`mapper`, whose output is a STORED FORMAT),
storage URLs (`urls`), the storage errors (`errors`), sealed events of encrypted
stores (`sealed`, also a STORED FORMAT), and one module per technology with the same
shape: `sqlite` (with `sqlite_wal`, its checkpointer, and `sqlite_keys`, its key
table), `postgres` (with `postgres_keys`), `memory`.

Also here:
- `recorder`: the typed seam (`ConvlogRecorder`) every backend's recorder implements.
- `sqlite_open`, `sqlite_readers`: opening a SQLite file others may be making; read
  connections without locks.
- `postgres_pool`, `postgres_requests`, `postgres_token_counts`: PostgreSQL while the
  database is away, and its side of requests and token_counts.
- `requests`: the answers of keyed HTTP requests, kept in the store.
- `token_counts`: token counts made on read, kept beside the events.
- `raw_items`: a message row read as an SDK store needs it, and no further.
- `erasure`: a conversation's events with their text removed in place (an erasure by
  the retention policy), also a STORED FORMAT.
- `lineage`: a fork's history by reference (its parent's events up to the fork, then
  its own), spliced into every read by position.

May import: the domain, `crypto/` (keys and ciphers), and other modules of
`storage/`. Never the services, the views, `accounting/` or `cli/`: a store knows
events, not what hosts do with them.
"""
