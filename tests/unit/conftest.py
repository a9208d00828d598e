"""The unit tier opens no socket: every unit test runs with :func:`no_network` in force.

A unit test reaches the outside world only through in-memory fakes of our ports or in-process moto (which patches
botocore and opens no socket). A test that connects, binds or resolves a name fails at once, naming the address,
instead of depending on what the machine it runs on can reach; a test that needs a server belongs in
tests/integration.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest


class SocketInUnitTest(AssertionError):
    """A unit test tried to use the network."""


def _refuse(action: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        # a bound method's first argument is the socket; the address is the next one
        address = next((a for a in args if not isinstance(a, socket.socket)), kwargs)
        raise SocketInUnitTest(
            f"a unit test tried to {action} {address!r}: the unit tier opens no socket "
            "(use a fake of the port, or move the test to tests/integration)"
        )

    return refused


GUARDED = {"connect": "connect to", "connect_ex": "connect to", "bind": "bind", "sendto": "send to"}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Connecting, binding, sending to an address or resolving a name raises :class:`SocketInUnitTest`."""
    for method, action in GUARDED.items():
        monkeypatch.setattr(socket.socket, method, _refuse(action))
    monkeypatch.setattr(socket, "getaddrinfo", _refuse("resolve"))
    monkeypatch.setattr(socket, "gethostbyname", _refuse("resolve"))
    yield
