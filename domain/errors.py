"""Typed errors of the domain.

Every error a user can cause names *what* is wrong and *where*: the field, and when
the input came from a file or stream, its position. Hosts catch `ConvlogError`; the
CLI turns it into a one-line message and exit status 1.
"""

from __future__ import annotations


class ConvlogError(Exception):
    """Base class of every error convlog raises on purpose."""


class MissingExtra(ConvlogError, ImportError):
    """An optional extra that a feature needs is not installed; the message names the
    `pip install 'convlog[...]'` line."""


class InvalidInput(ConvlogError, ValueError):
    """Input that breaks a rule of the conversation model.

    `field` is a dotted path into the offending object (``messages[2].role``);
    `where` says where the object came from when known (``stdin:3``).
    """

    def __init__(self, message: str, *, field: str | None = None, where: str | None = None):
        self.reason = message
        self.field = field
        self.where = where
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.where:
            parts.append(self.where)
        if self.field:
            parts.append(f"field {self.field!r}")
        prefix = ": ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason

    def located(self, where: str) -> InvalidInput:
        """The same error, placed at `where` (e.g. a file name and line number)."""
        return type(self)(self.reason, field=self.field, where=where)

    def nested(self, prefix: str) -> InvalidInput:
        """The same error with its field path under `prefix` (``messages[2]``)."""
        field = f"{prefix}.{self.field}" if self.field else prefix
        return type(self)(self.reason, field=field, where=self.where)


class SystemMessageRejected(InvalidInput):
    """System prompts belong to the host's configuration, not to the conversation log.

    Storing them would inject stale instructions on resume and leak host internals
    into analytics, so a message with role ``system`` is refused.
    """


class UnknownUser(ConvlogError, LookupError):
    """No conversation was ever recorded for this user (or workspace): a context for
    them is a mistake to report (a typo, another store), not an empty answer."""

    def __init__(self, user: str | None, workspace: str | None, message: str | None = None):
        self.user = user
        self.workspace = workspace
        who = " and ".join(f"{k} {v!r}" for k, v in (("user", user), ("workspace", workspace))
                           if v is not None)
        super().__init__(message or f"no conversation was ever recorded for {who}")


class ArchivedConversation(ConvlogError):
    """An archived conversation is not resumed (no tier runs, nothing is injected)
    until it is reactivated: `reactivate()`, or a new message, which reactivates it."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"conversation {key!r} is archived: reactivate it (or append a "
                         "message) before resuming it")


class UnknownConversation(ConvlogError, LookupError):
    """No conversation has been recorded under this key."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"unknown conversation {key!r}")


class ConversationForgotten(ConvlogError):
    """The conversation's user was forgotten: it records nothing more (its content is
    erased for good; a new conversation under another key starts afresh)."""

    def __init__(self, key: str, user: str):
        self.key = key
        self.user = user
        super().__init__(f"conversation {key!r} belongs to forgotten user {user!r}: it "
                         "records nothing more")


class CompactedMeanwhile(ConvlogError):
    """Another compaction of the conversation was recorded while this one was being
    made (its summary would not fold the other's in): nothing was recorded; compact
    again, which folds the newer summary in."""

    def __init__(self, key: str, detail: str | None = None):
        self.key = key
        super().__init__(detail or f"conversation {key!r} was compacted by another writer "
                         "meanwhile: nothing recorded; compact again")
