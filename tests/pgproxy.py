"""A TCP proxy between convlog and a real PostgreSQL server, for faults on the wire.

Real bytes of the real protocol pass through it unchanged; a test can slow down what
the client sends (to make any wait between a client's messages visible on the
server) or cut a connection right after the server answered a chosen statement (a
commit whose acknowledgement never reaches the client).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class WireProxy:
    """Listens on 127.0.0.1:`port` and forwards every connection to `upstream`."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.client_delay = 0.0
        """Seconds each chunk a client sends waits before it is forwarded."""
        self.cut_reply_to: bytes | None = None
        """When a client's chunk contains these bytes, the server's answer to it is
        dropped and the connection closed (once; then this is reset to None)."""
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._closing = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            self._sockets += [client, server]
            cut = threading.Event()
            threading.Thread(target=self._upstream, args=(client, server, cut),
                             daemon=True).start()
            threading.Thread(target=self._downstream, args=(server, client, cut),
                             daemon=True).start()

    def _upstream(self, client: socket.socket, server: socket.socket,
                  cut: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if self.client_delay:
                    time.sleep(self.client_delay)
                if self.cut_reply_to is not None and self.cut_reply_to in data:
                    self.cut_reply_to = None
                    cut.set()
                server.sendall(data)
        self._close(client, server)

    def _downstream(self, server: socket.socket, client: socket.socket,
                    cut: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := server.recv(65536):
                if cut.is_set():  # the answer to the marked statement: lost
                    self.cuts += 1
                    break
                client.sendall(data)
        self._close(client, server)

    @staticmethod
    def _close(*sockets: socket.socket) -> None:
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._closing = True
        self._listener.close()
        self._close(*self._sockets)
