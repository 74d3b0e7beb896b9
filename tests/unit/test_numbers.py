"""THE whole-number reader (convlog.domain.numbers) and the surfaces that wrote it by
hand (issue 46): each refuses what is not ASCII digits with its own typed error."""

from __future__ import annotations

import pytest

from convlog.domain.numbers import INT64_MAX, whole_number


@pytest.mark.parametrize("text", ["", " 1", "1 ", "-1", "+1", "1.0", "1e3", "0x10",
                                  "\u00b2", "\u0663", "\uff11", "1_000"])
def test_only_ascii_digits_are_a_number(text: str) -> None:
    assert whole_number(text) is None


def test_bounds() -> None:
    assert whole_number("0") == 0
    assert whole_number("007") == 7
    assert whole_number("0", minimum=1) is None
    assert whole_number("65535", maximum=65535) == 65535
    assert whole_number("65536", maximum=65535) is None
    assert whole_number(str(INT64_MAX)) == INT64_MAX
    assert whole_number(str(INT64_MAX + 1)) is None
    assert whole_number("0" * 40 + "5") == 5  # leading zeros are not "too long"


def test_a_huge_number_is_not_parsed() -> None:
    """int() of 5,000 digits raises ValueError (Python's digit limit): never reached."""
    assert whole_number("9" * 5000) is None
    assert whole_number("9" * 5000, maximum=None) == INT64_MAX


@pytest.mark.parametrize("raw", ["many", "\u00b2", "-1", "9" * 5000])
def test_a_memory_setting_from_the_environment_is_read_as_a_number(
        raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """"²".isdigit() is true: int() then raised a bare ValueError (issue 46)."""
    from convlog import InvalidInput
    from convlog.services.options import memory_policy

    monkeypatch.setenv("CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY", raw)
    with pytest.raises(InvalidInput) as raised:
        memory_policy()
    assert raised.value.field == "CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY"
