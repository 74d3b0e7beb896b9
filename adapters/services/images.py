"""An image as every reader shows it: a reference, never its bytes.

Whatever surface an image came through (an Anthropic block, an ADK blob, an ACP
content block, an OpenAI `input_image` or `image_url`), the readable message holds its
URL or file id, or for inline data the SHA-256 and size of its bytes: one reference
per image whatever carried it, so contexts, transcripts, pages and spans name the same
image the same way (tests/fidelity, `image-by-reference`). The surface's own item, bytes
and all, stays in the message's `raw` for the surface's own read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from convlog.domain.content import ImagePart


def decoded(data: str | bytes, *, urlsafe: bool = False) -> bytes | None:
    """Base64 text (standard, or URL-safe as pydantic dumps bytes) as bytes; None when
    it is not base64."""
    text = data.decode("ascii", "replace") if isinstance(data, bytes) else data
    text = text.strip().strip('"')
    if urlsafe or "-" in text or "_" in text:
        text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def inline_image(data: str | bytes, media_type: str | None) -> ImagePart | None:
    """Inline base64 data as a reference to its bytes (None: not base64)."""
    raw = decoded(data)
    if raw is None:
        return None
    return ImagePart(ref=f"sha256:{hashlib.sha256(raw).hexdigest()}", media_type=media_type,
                     size=len(raw))


def url_image(url: str, media_type: str | None = None) -> ImagePart:
    """An image by URL; a ``data:`` URL is inline data, referenced by its bytes."""
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        mime = head[5:].split(";", 1)[0] or media_type
        if head.endswith(";base64"):
            found = inline_image(data, mime)
            if found is not None:
                return found
        return ImagePart(ref=f"{head},... ({len(url):,} characters inline)", media_type=mime)
    return ImagePart(ref=url, media_type=media_type)
