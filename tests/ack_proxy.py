"""A TCP proxy in front of a Postgres server that can lose the answer to a ``COMMIT``.

Armed, it forwards the server's messages up to the next ``COMMIT`` CommandComplete,
swallows that one and closes both sides: the transaction committed on the server, but the
client never heard so (a network fault between the two). It reads the wire protocol in
plain text, so the URL it hands out turns off SSL and GSS encryption.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable

from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["AckProxy"]


class AckProxy:
    """Forwards ``127.0.0.1:<port>`` to the server of ``url`` (a unix socket or TCP).

    ``arm()`` makes the next ``COMMIT`` answer (of any connection) get lost; ``dropped``
    counts the ones lost so far; ``on_lose`` (if set) is called, in the proxy's thread,
    after an answer is swallowed and before its connection ends (what else the outage
    does: end another session, say). ``close()`` stops it.

    Example (not run here: it needs a server):
        with AckProxy(pg_url) as proxy: store = ...(proxy.url); proxy.arm(); store.forget(...)
    """

    def __init__(self, url: str) -> None:
        params = conninfo_to_dict(url)
        host = str(params.get("host") or "/tmp")
        port = int(params.get("port") or 5432)
        if host.startswith("/"):
            self._target: tuple[int, object] = (socket.AF_UNIX, f"{host}/.s.PGSQL.{port}")
        else:
            self._target = (socket.AF_INET, (host, port))
        self._armed = 0
        self.dropped = 0
        self.on_lose: Callable[[], object] | None = None
        self._guard = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        port = self._listener.getsockname()[1]
        self.url = make_conninfo(
            url, host="127.0.0.1", port=str(port), sslmode="disable", gssencmode="disable"
        )
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, times: int = 1) -> None:
        """Lose the answer to the next ``times`` commits."""
        with self._guard:
            self._armed += times

    def close(self) -> None:
        """Stop listening and close every forwarded connection."""
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in list(self._sockets):
            _close(sock)

    def __enter__(self) -> AckProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            family, address = self._target
            server = socket.socket(family)
            server.connect(address)
            self._sockets += [client, server]
            threading.Thread(target=self._to_server, args=(client, server), daemon=True).start()
            threading.Thread(target=self._to_client, args=(server, client), daemon=True).start()

    def _to_server(self, client: socket.socket, server: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                server.sendall(data)
        _close(client, server)

    def _to_client(self, server: socket.socket, client: socket.socket) -> None:
        """Forward whole messages; an armed ``COMMIT`` answer ends the connection instead."""
        buffer = b""
        with contextlib.suppress(OSError):
            while data := server.recv(65536):
                buffer += data
                out = b""
                while len(buffer) >= 5:
                    (length,) = struct.unpack("!i", buffer[1:5])
                    if len(buffer) < 1 + length:
                        break
                    message, buffer = buffer[: 1 + length], buffer[1 + length :]
                    if message[:1] == b"C" and message[5:].rstrip(b"\0") == b"COMMIT":
                        with self._guard:
                            lose = self._armed > 0
                            if lose:
                                self._armed -= 1
                                self.dropped += 1
                        if lose:
                            client.sendall(out)
                            if self.on_lose is not None:
                                self.on_lose()
                            raise OSError("the answer to COMMIT is lost")
                    out += message
                client.sendall(out)
        _close(server, client)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
