"""The token count a reader is shown for a message (a timeline line, a page).

No append counts (issue 45): a message's count is the one stored on it (a host's, or
one made at append by an older convlog), else made now, once per text and tokenizer
(convlog.accounting.counted). A forgotten user's message shows none: its text is
gone, and a count of the placeholder would be a wrong number.
"""

from __future__ import annotations

from convlog.accounting.counted import COUNTS
from convlog.domain.events import MessageAppended
from convlog.storage.sealed import FORGOTTEN


def shown_tokens(event: MessageAppended) -> int | None:
    if event.tokens is not None:
        return event.tokens
    if event.content == FORGOTTEN:
        return None
    return COUNTS.message(event)
