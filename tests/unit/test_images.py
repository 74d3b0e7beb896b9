"""One image, one reference (convlog.services.images): the same bytes are named the same
way whichever surface carried them, and never stored as text."""

from __future__ import annotations

import base64
import hashlib

import msgspec

from convlog.services.anthropic_blocks import Source, image
from convlog.services.images import inline_image, url_image

PNG = bytes(range(250, 256)) * 40
REF = f"sha256:{hashlib.sha256(PNG).hexdigest()}"


def test_inline_bytes_are_named_by_their_digest_on_every_surface() -> None:
    standard = base64.b64encode(PNG).decode()
    urlsafe = base64.urlsafe_b64encode(PNG).decode()  # pydantic's dump of ADK's bytes
    assert standard != urlsafe
    found = {
        inline_image(standard, "image/png"),
        inline_image(urlsafe, "image/png"),
        url_image(f"data:image/png;base64,{standard}"),
        image(Source(type="base64", media_type="image/png",
                     data=msgspec.Raw(f'"{standard}"'.encode()))),
    }
    assert {(i.ref, i.media_type, i.size) for i in found if i is not None} == {
        (REF, "image/png", len(PNG))}
    assert None not in found


def test_a_url_is_its_own_reference_and_bad_data_is_no_bytes() -> None:
    assert url_image("https://example.com/a.png").ref == "https://example.com/a.png"
    assert inline_image("not base64!", "image/png") is None
    odd = url_image("data:image/png;base64,not base64!")
    assert odd.ref.startswith("data:image/png;base64,...") and "not base64" not in odd.ref
    assert url_image("data:text/plain,hello").ref.startswith("data:text/plain,...")
