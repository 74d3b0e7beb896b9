"""Writing pages: one self-contained file per conversation, and a report folder.

Every file is written atomically (a temporary file in the same folder, then
`os.replace`), so a reader or a crash never sees half a page.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import convlog
from convlog.html.conversation import conversation_data
from convlog.html.render import render
from convlog.html.report import report_data

PAGE_SIZE = 200
"""Messages per page of a view: 10,000 messages stay quick to render and scroll."""


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(temporary, 0o644)  # a page to share, not mkstemp's private 0600
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def page_name(key: str) -> str:
    """A file name for a conversation key: readable where the key is, unique always
    (keys differing only in characters a file name cannot hold get different hashes)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:60] or "conversation"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return f"{readable}-{digest}.html"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def conversation_html(log: convlog.ConversationLog, key: str, *,
                      back: str | None = None) -> str:
    return render("conversation.html.j2", data=conversation_data(log, key),
                  page_size=PAGE_SIZE, back=back, generated=_now())


def write_conversation_page(log: convlog.ConversationLog, key: str,
                            path: str | Path) -> Path:
    """`convlog html KEY -o FILE.html`: one static page, nothing fetched at view time."""
    target = Path(path)
    write_atomically(target, conversation_html(log, key))
    return target


def write_report(log: convlog.ConversationLog, directory: str | Path,
                 progress: Callable[[int, int], None] | None = None) -> Path:
    """`convlog report -o DIR`: DIR/index.html and DIR/conversations/<page>.html for
    every conversation (archived ones too: the index filters by status)."""
    root = Path(directory)

    def link(key: str) -> str:
        return f"conversations/{page_name(key)}"

    data = report_data(log, link)
    keys = [row["key"] for row in data["conversations"]]
    for done, key in enumerate(keys, 1):
        write_atomically(root / link(key), conversation_html(log, key, back="../index.html"))
        if progress is not None:
            progress(done, len(keys))
    index = root / "index.html"
    write_atomically(index, render("report.html.j2", data=data, generated=_now()))
    return index
