"""The id a message gets when the host names none: a random UUID (version 4, RFC 4122
variant) as 32 lowercase hex digits, the form ids have always had in stored logs."""

from __future__ import annotations

import re
import uuid

import convlog
from convlog.domain.messages import new_message_id


def test_a_made_up_id_is_a_uuid4_in_hex() -> None:
    ids = [new_message_id() for _ in range(5_000)]
    assert len(set(ids)) == len(ids)
    for made in ids:
        assert re.fullmatch(r"[0-9a-f]{32}", made), made
        parsed = uuid.UUID(hex=made)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122, made
        assert parsed.hex == made
    # every one of the 122 random bits takes both values across the ids
    ored = anded = int(ids[0], 16)
    for made in ids[1:]:
        ored, anded = ored | int(made, 16), anded & int(made, 16)
    fixed = 0xF000 << 64 | 0xC000 << 48
    assert (ored ^ anded) | fixed == (1 << 128) - 1


def test_a_message_without_an_id_gets_one() -> None:
    first, second = convlog.user("a"), convlog.user("a")
    assert first.id != second.id and uuid.UUID(hex=first.id).version == 4
