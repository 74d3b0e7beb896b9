"""Token counts made on read, kept once per text and tokenizer in this process.

A count is derived data (issue 45): no append counts, and whatever needs a count (a
context's budget, a page that shows a message's tokens) asks here. A resumed
conversation's context is built from the same newest messages again and again, so
each text is counted once, when first needed, and remembered, per vocabulary: a
repeated context costs dictionary lookups, not tokenizer runs. The memo is bounded
(`LIMIT` texts per vocabulary, texts up to `LONGEST` characters; beyond, the oldest
half is forgotten), so a long-running host holds a few MiB at most.

A count stored on an event (a host's `tokens=`, or one made at append by a convlog
before issue 45) is used as it is: an old store reads exactly as it did.
"""

from __future__ import annotations

import threading
from itertools import islice

from convlog.accounting.tokens import count_tokens, counter_for
from convlog.domain.content import countable_text
from convlog.domain.events import MessageAppended

LIMIT = 20_000
"""Texts remembered per vocabulary (a context reads tens; a page of a few hundred)."""
LONGEST = 8_000
"""Longer texts are counted each time (a per-message cap keeps contexts' shorter)."""


class CountMemo:
    """Counts by (vocabulary, text), bounded; safe to share between threads (a lost
    race counts a text twice, with the same result)."""

    def __init__(self, limit: int = LIMIT, longest: int = LONGEST) -> None:
        self.limit, self.longest = limit, longest
        self._by_encoding: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()
        self.counted = 0
        """How many texts this memo had the tokenizer count (tests, benchmarks)."""

    def count(self, text: str, model: str | None = None) -> int:
        """The token count of `text` in `model`'s family (counted once)."""
        encoding = counter_for(model)[0]
        memo = self._by_encoding.get(encoding)
        if memo is not None:
            found = memo.get(text)
            if found is not None:
                return found
        tokens = count_tokens(text, model)[0]
        self.counted += 1
        if len(text) <= self.longest:
            self._keep(encoding, text, tokens)
        return tokens

    def _keep(self, encoding: str, text: str, tokens: int) -> None:
        with self._lock:
            memo = self._by_encoding.setdefault(encoding, {})
            if len(memo) >= self.limit:  # forget the oldest half (dicts keep order)
                for old in list(islice(memo, self.limit // 2)):
                    del memo[old]
            memo[text] = tokens

    def message(self, event: MessageAppended) -> int:
        """A message's tokens: the count stored on it, else its text (`countable_text`)
        counted in its model's family, as an append counted it before issue 45."""
        if event.tokens is not None:
            return event.tokens
        return self.count(countable_text(event.content, event.tool_calls), event.model)


COUNTS = CountMemo()
"""The process's memo: every log of the process shares it (a text is a text)."""
