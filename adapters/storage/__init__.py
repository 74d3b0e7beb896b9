"""Storage technology: where events are kept, and in which bytes.

Lives here: the eventsourcing application (`application`), the msgspec mapper that
turns events into stored rows and back (`mapper`, whose output is a STORED FORMAT),
storage URLs (`urls`), the storage errors (`errors`), sealed events of encrypted
stores (`sealed`, also a STORED FORMAT), and one module per technology with the same
shape: `sqlite` (with `sqlite_wal`, its checkpointer, and `sqlite_keys`, its key
table), `postgres` (with `postgres_keys`), `memory`.

May import: the domain, `crypto/` (keys and ciphers), and other modules of
`storage/`. Never the services, the views, `accounting/` or `cli/`: a store knows
events, not what hosts do with them.
"""
