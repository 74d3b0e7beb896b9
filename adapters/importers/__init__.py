"""Importers: history that other agent tools already wrote, read into convlog.

One module per format (`claude_code`, `openai`, `codex`), each an `Importer`
(convlog.services.importing) registered under the ``convlog.importers`` entry points;
`files` is the base they share (which files of a tree, a located failure per
unreadable file), `lines` reads files line by line with a bound on a line's size,
`responses` maps the OpenAI message and item shapes that both `openai` and `codex`
use; Claude Code's content blocks are mapped by convlog.services.anthropic_blocks,
the one mapping the Claude Agent SDK store shares. Importers only
read: the driver in convlog.services.import_run records each conversation as one
batch.

Also here:
- `follow`: reading a transcript that is still being written (complete lines only).

May import: the facade (`convlog`), convlog.services, convlog.domain,
convlog.projections. Never storage or the views.
"""
