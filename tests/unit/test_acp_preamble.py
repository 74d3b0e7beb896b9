"""The preamble rule of `convlog acp` on its own: which blocks of a prompt are the
host's system prompt (forwarded, recorded as the preamble, never as dialogue)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("acp")

from convlog.acp.preamble import fingerprint, forwarded, is_marked, split


def t(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def m(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "annotations": {"audience": ["assistant"]}}


IMAGE = {"type": "image", "data": "xx", "mimeType": "image/png"}
META = {"type": "text", "text": "sys", "_meta": {"convlog/preamble": True}}


@pytest.mark.parametrize(("prompt", "preamble", "user"), [
    ([t("sys"), t("hi")], [t("sys")], [t("hi")]),
    ([t("sys"), t("pasted"), t("hi")], [t("sys")], [t("pasted"), t("hi")]),  # one block
    ([t("hi")], [], [t("hi")]),  # one text block: all the user's
    ([IMAGE, t("hi")], [], [IMAGE, t("hi")]),  # the first block must be text
    ([t("sys"), IMAGE, t("look")], [t("sys")], [IMAGE, t("look")]),
    ([t("sys"), IMAGE], [], [t("sys"), IMAGE]),  # no other text block: no guess
    ([], [], []),
])
def test_the_guess_takes_at_most_the_first_block(prompt: list[Any], preamble: list[Any],
                                                 user: list[Any]) -> None:
    found = split(prompt, "first-blocks")
    assert (found.preamble, found.user) == (preamble, user)
    assert found.how == ("guessed" if preamble else None)


def test_the_guess_is_only_for_the_first_prompt_after_opening() -> None:
    assert split([t("a"), t("b")], "first-blocks", opened=False).preamble == []


@pytest.mark.parametrize("mode", ["first-blocks", "none"])
def test_marked_blocks_are_the_preamble_in_any_prompt_and_stop_the_guess(mode: str) -> None:
    found = split([t("pasted"), m("sys"), t("hi"), META], mode, opened=False)
    assert (found.preamble, found.user, found.how) == ([m("sys"), META],
                                                       [t("pasted"), t("hi")], "marked")
    assert found.first_user == 0
    assert not is_marked({"type": "text", "text": "x",
                          "annotations": {"audience": ["user", "assistant"]}})
    assert not is_marked({"type": "text", "text": "x", "_meta": {"convlog/preamble": "yes"}})


def test_none_keeps_every_unmarked_block_for_the_user() -> None:
    found = split([t("sys"), t("hi")], "none")
    assert (found.preamble, found.user, found.how) == ([], [t("sys"), t("hi")], None)


def test_history_goes_after_the_preamble_and_before_the_users_blocks() -> None:
    h = t("<conversation_history/>")
    cut = split([m("sys"), t("hi")], "none")
    assert forwarded([m("sys"), t("hi")], cut, "<conversation_history/>", None) == (
        [m("sys"), h, t("hi")], [m("sys")], "marked")
    cut = split([t("hi")], "first-blocks")  # none this time: the last one is sent again
    assert forwarded([t("hi")], cut, "<conversation_history/>", [m("sys")]) == (
        [m("sys"), h, t("hi")], [m("sys")], "resent")
    assert forwarded([t("hi")], cut, None, [m("sys")]) == ([t("hi")], [], None)


def test_the_fingerprint_says_how_long_never_what() -> None:
    found = fingerprint([t("secret system prompt")])
    assert found["chars"] == 20 and found["blocks"] == 1 and len(found["sha256"]) == 64
    assert "secret" not in str(found)
