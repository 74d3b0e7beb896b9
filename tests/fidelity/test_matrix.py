"""The fidelity matrix (issue 41): every writer x every reader.

Each writer (tests/fidelity/writers.py) writes the one conversation (tests/fidelity/
conversation.py) once per session; each reader (tests/fidelity/readers.py) reads it
back; a cell passes when the reader gives back what the writer sent, less exactly
what the rules (tests/fidelity/rules.py) take away. A cell a known loss breaks is
`XFAIL` below, strict, naming the loss. tests/fidelity/test_coverage.py makes sure
every surface has its row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import convlog
from tests.fidelity.readers import LOG_READERS, READERS
from tests.fidelity.rules import expected, repairs_after_calls
from tests.fidelity.writers import WRITERS, Written

XFAIL: dict[tuple[str, str], str] = {}
SLOW = {"acp"}
"""Rows whose writer runs many processes (the ACP row: three hosts, proxies and agents,
~10-30 s on 2 cores); `-m "not slow"` leaves them out of a quick run."""
"""(writer, reader): the loss a cell shows today, named precisely."""

_written: dict[str, Written] = {}


@pytest.fixture(scope="session")
def fidelity_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fidelity")


def written(writer: str, root: Path) -> Written:
    """Each writer writes once per session, whatever the cells ask."""
    if writer not in _written:
        tmp = root / writer
        tmp.mkdir()
        _written[writer] = WRITERS[writer](tmp)
    return _written[writer]


@pytest.fixture(scope="session")
def logs() -> Iterator[dict[str, convlog.ConversationLog]]:
    opened: dict[str, convlog.ConversationLog] = {}
    yield opened
    for log in opened.values():
        log.close()


def cells() -> Iterator[object]:
    for writer in WRITERS:
        for reader in READERS:
            # a row on one xdist worker (loadgroup): its writer writes once
            marks = [pytest.mark.xdist_group(f"fidelity-{writer}")]
            if writer in SLOW:
                marks.append(pytest.mark.slow)
            if (writer, reader) in XFAIL:
                marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[writer, reader]))
            yield pytest.param(writer, reader, id=f"{writer}-{reader}", marks=marks)


@pytest.mark.parametrize(("writer", "reader"), list(cells()))
def test_what_a_writer_sent_a_reader_gives_back(
        writer: str, reader: str, fidelity_dir: Path,
        logs: dict[str, convlog.ConversationLog]) -> None:
    w = written(writer, fidelity_dir)
    if reader == "native":
        got = w.native
    else:
        if writer not in logs:
            logs[writer] = convlog.open(w.url, views=w.workdir / "views.duckdb")
        log = logs[writer]
        read = LOG_READERS[reader]
        got = read(log, w.key, w.workdir) if reader == "otel" else read(log, w.key)
    want, applied = expected(writer, reader, w.sent)
    assert {"user", "assistant", "call", "result"} <= {f.kind for f in want.dialogue}, (
        "the rules left nothing of the dialogue to compare")
    got = got.sorted()
    got.dialogue, want.dialogue = (repairs_after_calls(got.dialogue),
                                   repairs_after_calls(want.dialogue))
    assert got.dialogue == want.dialogue, f"rules applied: {applied}"
    assert got.meta == want.meta, f"rules applied: {applied}"
