"""The proxy's frame transport on a real socket pair: what reaches the SDK connection,
and what is answered on the spot."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from convlog.acp.wire import FrameTransport


async def pair(max_frame: int = 1 << 20) -> tuple[FrameTransport, asyncio.StreamReader,
                                                  asyncio.StreamWriter]:
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=ours, limit=1 << 16)
    peer_reader, peer_writer = await asyncio.open_unix_connection(sock=theirs)
    return FrameTransport(reader, writer, name="peer", max_frame=max_frame), peer_reader, \
        peer_writer


async def replies(peer: asyncio.StreamReader, count: int) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(peer.readline(), 5)) for _ in range(count)]


def test_bad_frames_are_answered_and_good_ones_delivered_in_order() -> None:
    async def main() -> None:
        transport, peer, peer_out = await pair(max_frame=100_000)
        nested = b"[" * 40_000 + b"]" * 40_000  # too deep to decode: a parse error
        peer_out.write(b"\n".join([
            b'{"jsonrpc":"2.0","id":1,"method":"a"}', b"", b"   ", nested,
            b'{"jsonrpc":"2.0","id":2,"method":"b","params":{"x":"' + b"z" * 200_000 + b'"}}',
            b"\xff\xfe not utf-8", b'{"jsonrpc":"2.0","id":"k","result":{}}',
            b'{"jsonrpc":"2.0","id":9,"result":{"x":"' + b"r" * 200_000 + b'"}}',
            b'{"jsonrpc":"2.0","method":"c"}']) + b"\n" + b'{"jsonrpc":"2.0","id":3,"method":"d"}')

        async def finish() -> None:  # the socket buffer is smaller than all this
            await peer_out.drain()
            peer_out.write_eof()

        writing = asyncio.ensure_future(finish())
        got = []
        while (message := await transport.receive()) is not None:
            got.append(message.get("method") or message.get("id"))
            if message.get("id") == 9:  # the response too long, as an error for its waiter
                assert message["error"]["code"] == -32603
        assert got == ["a", "k", 9, "c", "d"]  # the last one had no newline before EOF
        await writing
        answers = await replies(peer, 3)
        assert [a["error"]["code"] for a in answers] == [-32700, -32600, -32700]
        assert answers[1]["id"] == 2 and "over the proxy's limit" in answers[1]["error"][
            "data"]["details"]
        assert transport.rejected == 4
        await transport.close()
        with_closed = None
        try:
            await transport.send({"jsonrpc": "2.0", "method": "x"})
        except ConnectionError as exc:
            with_closed = exc
        assert with_closed is not None

    asyncio.run(main())
