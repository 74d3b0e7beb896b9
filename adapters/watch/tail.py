"""One followed file: read its new complete lines, record them, then save the position.

The order is the guarantee. The lines' conversations are recorded first (each one
batch, through the same driver as `convlog import`), and only then is the position
saved: a kill in between means the lines are read again, and their messages are
skipped by id. A storage failure raises before the position moves, so the lines are
read again on the next attempt. A line that cannot be read is reported at
``file:line`` and skipped, so one bad line never stops a transcript's capture.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from pathlib import Path

import msgspec

import convlog
from convlog.services.importing import Follower, ImportFailure, Position
from convlog.services.log import application
from convlog.watch.positions import HEAD_BYTES, TAIL_BYTES, Positions, Saved

logger = logging.getLogger("convlog.watch")


class Captured(msgspec.Struct, kw_only=True):
    """What one visit of a file did."""

    path: str
    keys: list[str] = []
    """Conversations that got new messages."""
    messages: int = 0
    messages_known: int = 0
    failures: list[str] = []
    held: bool = False
    """Complete lines were left for later (a response that may still be written)."""
    gone: bool = False
    rewritten: bool = False


class Tail:
    """Reads followed files of one format into one log."""

    def __init__(self, log: convlog.ConversationLog, follower: Follower, positions: Positions,
                 *, max_bytes: int = 8 * 2**20):
        self.log, self.follower, self.positions = log, follower, positions
        self.app = application(log)
        self.max_bytes = max_bytes

    def read(self, path: Path, *, final: bool = False) -> Captured:
        """Record the new complete lines of `path` (all of them when `final`: its
        writer has been quiet for a while). Raises ConvlogError when the log could
        not record them; the position is then where it was."""
        name, fmt = str(path), self.follower.name
        done = Captured(path=name)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            done.gone = self.positions.drop(fmt, name)
            return done
        if not stat.S_ISREG(st.st_mode):
            return done  # a FIFO, a device or a directory with a transcript's name
        saved = self.positions.get(fmt, name)
        start = Position()
        if saved is not None:
            if _same_file(path, st, saved):
                start = saved.position
            else:
                done.rewritten = True
                logger.info("%s was replaced or rewritten: reading it again from its "
                            "start (messages already recorded are skipped)", name)
        if st.st_size == start.offset and saved is not None and not done.rewritten:
            return done
        stale = saved is None or done.rewritten  # the saved row must be replaced
        while True:
            followed = self.follower.follow(path, start, final=final, max_bytes=self.max_bytes)
            items: list[convlog.ImportedConversation | ImportFailure] = list(
                followed.conversations)
            if followed.failure is not None:
                items.append(followed.failure)
            summary = self.app.imports.record(fmt, items)
            if summary.messages:
                done.keys += [c.key for c in followed.conversations if c.messages]
            done.messages += summary.messages
            done.messages_known += summary.messages_known
            done.failures += [f.error for f in summary.failures]
            position = followed.position
            if position != start or stale:
                self.positions.put(fmt, name, Saved(
                    device=st.st_dev, inode=st.st_ino, position=position,
                    tail=_fingerprint(path, position.offset)))
                stale = False
            done.held = followed.held
            if not followed.more or position == start:
                return done
            start = position


def _same_file(path: Path, st: os.stat_result, saved: Saved) -> bool:
    """The file a position was saved for, grown or not, but not rewritten."""
    offset = saved.position.offset
    if (st.st_dev, st.st_ino) != (saved.device, saved.inode) or st.st_size < offset:
        return False
    return _fingerprint(path, offset) == saved.tail


def _fingerprint(path: Path, offset: int) -> bytes:
    """A digest of the file's first bytes and of the bytes just before `offset`: what
    recognises the same file at that position (a rewrite changes one or the other)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        head = os.pread(fd, min(offset, HEAD_BYTES), 0)
        tail = os.pread(fd, min(offset, TAIL_BYTES), max(0, offset - TAIL_BYTES))
    finally:
        os.close(fd)
    return hashlib.sha256(b"%d:%s:%s" % (offset, head, tail)).digest()[:16]
