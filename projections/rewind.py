"""What a rewind abandoned: the one reading of `history_rewound` for readers that walk
the log forwards (a summarizer's input, a compaction's range, the views).

A rewind to message M, recorded at position R, abandons for the model every event
between M and R. A rewind that lies inside a later rewind's abandoned stretch is
abandoned with it (it happened on a branch the host left), so the log is read from
its newest event backwards, as the context reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlog.domain.events import HistoryRewound, Recorded

__all__ = ["abandoned"]


def abandoned(rows: Sequence[Recorded]) -> dict[int, int]:
    """{position: the position of the rewind that abandoned it} for the events of
    `rows` (in log order) that a rewind abandoned."""
    out: dict[int, int] = {}
    rewound_to = by = 0
    for r in reversed(rows):
        if rewound_to:
            if r.version > rewound_to:
                out[r.version] = by
                continue
            rewound_to = 0
        if isinstance(r.event, HistoryRewound):
            rewound_to, by = r.event.to_version, r.version
    return out
