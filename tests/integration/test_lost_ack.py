"""A commit whose acknowledgement is lost (issue 33): the server stored the batch, then
the connection broke before the client heard so. The write is retried; the retry must
find the batch stored by this very call and report it as `appended`, not as ids
"already recorded" (`appended=[]` told a host its turn was somebody else's)."""

from __future__ import annotations

from pathlib import Path

import convlog
from tests.pgproxy import WireProxy


def test_a_turn_whose_commit_ack_was_lost_is_reported_appended(pg_url: str,
                                                                tmp_path: Path) -> None:
    proxy = WireProxy(5432)  # real bytes, but it can drop the answer to one statement
    try:
        url = pg_url.replace(":5432/", f":{proxy.port}/")
        with convlog.open(url, views=str(tmp_path / "v.duckdb")) as log:
            log.append_turn("s", [convlog.user("first", id="m0")])
            # the insert carrying this id is committed; its answer never arrives
            proxy.cut_reply_to = b"lost-ack-turn"
            result = log.append_turn("s", [convlog.user("second", id="lost-ack-turn"),
                                           convlog.assistant("reply", id="lost-ack-reply")])
            assert proxy.cuts == 1  # the fault did happen
            assert result.appended == ["lost-ack-turn", "lost-ack-reply"]
            assert result.skipped == []
            assert [m.message_id for m in log.messages("s")] == [
                "m0", "lost-ack-turn", "lost-ack-reply"]
            again = log.append_turn("s", [convlog.user("second", id="lost-ack-turn")])
            assert again.appended == [] and again.skipped == ["lost-ack-turn"]
    finally:
        proxy.close()
