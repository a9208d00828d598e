"""The outbound URL policy at dispatch time: resolve the host, refuse it if any address is refused, and
connect to the address that was checked.

A rule's URL was checked when it was written, but a name may resolve to anything later (or to something
else on each lookup: DNS rebinding). So every new connection of an HTTP target's session resolves the
host with an injectable resolver (``socket.getaddrinfo`` by default), checks every address against the
:class:`~lakehook.domain.url_policy.UrlPolicy`, and hands urllib3 the checked address to dial, while
TLS (SNI and certificate checks) and the ``Host`` header still use the name. There is no second lookup
between the check and the connect. The session ignores proxy settings from the environment, which would
otherwise dial a proxy instead of the checked address.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from lakehook.domain.url_policy import IPAddress, UrlPolicy, UrlRefusedError, host_address

Resolver = Callable[[str, int], list[str]]
"""``(host, port) -> addresses`` as strings; raises ``socket.gaierror`` when the name does not resolve."""


class DestinationRefusedError(Exception):
    """The host resolved to an address the outbound policy refuses; nothing was sent.

    Deliberately not an OSError: urllib3 would take it for a network failure and retry it.
    """


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``getaddrinfo`` answers for a TCP connection to the host."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressGuard:
    """Resolves a host and answers the address to dial, or raises DestinationRefusedError."""

    def __init__(self, policy: UrlPolicy, resolver: Resolver = system_resolver) -> None:
        self.policy = policy
        self._resolver = resolver

    def address_for(self, host: str, port: int) -> str:
        """The first resolved address, once every resolved address is allowed (a name with one refused
        address is refused: which one a client gets is the resolver's choice, not ours)."""
        try:
            literal = host_address(host)
            if literal is None:
                self.policy.check_name(host)
        except UrlRefusedError as exc:
            raise DestinationRefusedError(f"refusing to connect to {host}: {exc}") from exc
        names = [str(literal)] if literal is not None else self._resolver(host.rstrip("."), port)
        if not names:
            raise socket.gaierror(f"{host} resolved to no address")
        addresses: list[IPAddress] = []
        for name in names:
            address = ipaddress.ip_address(name.split("%", 1)[0])
            reason = self.policy.refusal(address)
            if reason is not None:
                raise DestinationRefusedError(f"refusing to connect to {host}: it resolves to {address}, {reason}")
            addresses.append(address)
        return str(addresses[0])


def _connection_classes(guard: AddressGuard) -> tuple[type[HTTPConnection], type[HTTPSConnection]]:
    class GuardedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            name = self._dns_host
            self._dns_host = guard.address_for(name, self.port)  # urllib3 dials _dns_host; TLS uses host
            try:
                return super()._new_conn()
            finally:
                self._dns_host = name

    class GuardedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            name = self._dns_host
            self._dns_host = guard.address_for(name, self.port)
            try:
                return super()._new_conn()
            finally:
                self._dns_host = name

    return GuardedHTTPConnection, GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """A requests transport whose connections go only where the outbound policy allows."""

    def __init__(self, guard: AddressGuard, **kwargs: Any) -> None:
        self._guard = guard
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        http_connection, https_connection = _connection_classes(self._guard)

        class GuardedHTTPPool(HTTPConnectionPool):
            ConnectionCls = http_connection

        class GuardedHTTPSPool(HTTPSConnectionPool):
            ConnectionCls = https_connection

        self.poolmanager.pool_classes_by_scheme = {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        raise DestinationRefusedError("targets are dialled directly, never through a proxy")


def guard_session(
    session: requests.Session, policy: UrlPolicy, resolver: Resolver = system_resolver
) -> requests.Session:
    """Mount the guard on the session for http and https (and ignore proxy settings from the environment)."""
    adapter = GuardedAdapter(AddressGuard(policy, resolver))
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.trust_env = False
    return session
