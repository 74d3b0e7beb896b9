"""The handshake that lets a cancelled caller abandon a worker-thread write only if
it has not started (convlog.integrations.settled)."""

from __future__ import annotations

import threading

import pytest

from convlog.integrations.settled import _Handshake


def test_a_write_abandoned_before_it_started_never_runs() -> None:
    handshake, ran = _Handshake(), list[int]()
    assert handshake.abandon() is True
    with pytest.raises(RuntimeError, match="abandoned"):
        handshake.run(ran.append, 1)
    assert ran == []


def test_a_started_write_cannot_be_abandoned_and_says_when_it_ends() -> None:
    handshake, release = _Handshake(), threading.Event()
    worker = threading.Thread(target=handshake.run, args=(release.wait,))
    worker.start()
    while not handshake._started:  # the write is under way in its thread
        pass
    assert handshake.abandon() is False
    assert not handshake.finished.is_set()
    release.set()
    worker.join()
    assert handshake.finished.is_set()
