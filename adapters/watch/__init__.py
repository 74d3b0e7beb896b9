"""`convlog watch`: capture other tools' transcripts while they are written, before
the tools delete them (Claude Code removes its transcripts after 30 days by default).

Lives here: the watcher (`watcher`: filesystem events, start-up catch-up, timing),
one file's read-record-save step (`tail`), the saved reading positions (`positions`,
a SQLite file beside the log) and the status line (`status`). The formats themselves
are the importers' (`convlog.importers`, through `Follower.follow`), and every write
goes through the import driver of the application services, so a watched line is
recorded exactly as `convlog import` records it.

May import: the facade (`convlog`), convlog.services, convlog.domain,
convlog.projections; watchdog (the `watch` extra) and rich. Never storage or views.
"""
