import socket

import pytest


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Unit tests run with outgoing connections blocked: nothing here may need a network."""

    def refuse(self, address):
        if self.family == socket.AF_UNIX:
            return original(self, address)
        raise RuntimeError(f"network access in a unit test: {address!r}")

    original = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect", refuse)
