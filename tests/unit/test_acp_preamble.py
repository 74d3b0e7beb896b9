"""The preamble rule of `convlog acp` on its own: which blocks of a session's first
prompt are the host's system prompt (forwarded, never recorded)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("acp")

from convlog.acp.preamble import fingerprint, split


def t(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


IMAGE = {"type": "image", "data": "xx", "mimeType": "image/png"}


@pytest.mark.parametrize(("prompt", "preamble", "user"), [
    ([t("sys"), t("hi")], [t("sys")], [t("hi")]),
    ([t("sys 1"), t("sys 2"), t("hi")], [t("sys 1"), t("sys 2")], [t("hi")]),
    ([t("hi")], [], [t("hi")]),  # one text block: all the user's
    ([IMAGE, t("hi")], [], [IMAGE, t("hi")]),  # the leading run must be text
    ([t("sys"), IMAGE, t("look")], [t("sys")], [IMAGE, t("look")]),
    ([t("sys"), t("hi"), IMAGE], [t("sys")], [t("hi"), IMAGE]),
    ([], [], []),
])
def test_first_blocks_takes_the_leading_text_blocks_before_the_last_one(
        prompt: list[Any], preamble: list[Any], user: list[Any]) -> None:
    assert split(prompt, "first-blocks") == (preamble, user)


def test_none_keeps_every_block_for_the_user() -> None:
    assert split([t("sys"), t("hi")], "none") == ([], [t("sys"), t("hi")])


def test_the_fingerprint_says_how_long_never_what() -> None:
    found = fingerprint([t("secret system prompt")])
    assert found["chars"] == 20 and found["blocks"] == 1 and len(found["sha256"]) == 64
    assert "secret" not in str(found)
