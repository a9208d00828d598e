"""The unit tier's socket guard (tests/unit/conftest.py) is in force: each way out of the process fails, naming
the address, and a socket that goes nowhere (a pair within the process) still works."""

from __future__ import annotations

import socket
import urllib.request

import pytest
import requests

from tests.unit.conftest import SocketInUnitTest


def test_a_tcp_connect_fails_naming_the_address() -> None:
    with socket.socket() as sock, pytest.raises(SocketInUnitTest, match=r"connect to \('127\.0\.0\.1', 9\)"):
        sock.connect(("127.0.0.1", 9))


@pytest.mark.parametrize("address", [("127.0.0.1", 0), ("0.0.0.0", 0)])
def test_binding_a_port_fails_even_on_loopback(address: tuple[str, int]) -> None:
    with socket.socket() as sock, pytest.raises(SocketInUnitTest, match="bind"):
        sock.bind(address)


def test_connect_ex_and_udp_sends_fail() -> None:
    with socket.socket() as sock, pytest.raises(SocketInUnitTest):
        sock.connect_ex(("10.0.0.1", 80))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, pytest.raises(SocketInUnitTest, match="send to"):
        udp.sendto(b"x", ("10.0.0.1", 53))


def test_a_name_lookup_fails() -> None:
    with pytest.raises(SocketInUnitTest, match="resolve"):
        socket.getaddrinfo("example.com", 443)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/", "https://example.com/"])
def test_http_clients_fail_before_any_byte_leaves(url: str) -> None:
    with pytest.raises(SocketInUnitTest):
        requests.get(url, timeout=1)
    with pytest.raises(SocketInUnitTest):
        urllib.request.urlopen(url, timeout=1)


def test_a_socket_pair_inside_the_process_still_works() -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"ping")
        assert right.recv(4) == b"ping"
