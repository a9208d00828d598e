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


@pytest.fixture(autouse=True, scope="module")
def no_network() -> Iterator[None]:
    """Connecting, binding, sending to an address or resolving a name raises :class:`SocketInUnitTest`.

    Module-scoped and autouse, so it is the first fixture of its module set up: a module fixture's setup (a server
    started once for the module) is refused too, not only the tests' own bodies. The root conftest refuses to run a
    unit test this guard does not reach (:func:`unguarded`)."""
    with pytest.MonkeyPatch.context() as patch:
        for method, action in GUARDED.items():
            patch.setattr(socket.socket, method, _refuse(action))
        patch.setattr(socket, "getaddrinfo", _refuse("resolve"))
        patch.setattr(socket, "gethostbyname", _refuse("resolve"))
        yield


def _is_the_guard(fixture: Any) -> bool:
    func = getattr(fixture, "func", None)
    return getattr(func, "__module__", None) == __name__ and getattr(func, "__qualname__", None) == "no_network"


def unguarded(items: list[pytest.Item]) -> list[str]:
    """The unit tests (under tests/unit) that :func:`no_network` does not guard: a test whose module or class
    defines a fixture of the same name replaces the guard, and a test collected some other way lacks it."""
    found = []
    for item in items:
        if "/tests/unit/" not in item.path.as_posix():
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.get("no_network", ()) if info is not None else ()
        if not defs or not _is_the_guard(defs[-1]):
            found.append(item.nodeid)
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """No unit test runs without the socket guard: one that escapes it stops the session before any test runs."""
    escaped = unguarded(items)
    if escaped:
        shown = "\n  ".join(escaped[:20])
        raise pytest.UsageError(f"{len(escaped)} unit tests run without the socket guard (no_network):\n  {shown}")
