"""The unit tier's socket guard (tests/unit/conftest.py) is in force: each way out of the process fails, naming
the address, and a socket that goes nowhere (a pair within the process) still works. It reaches a module fixture's
setup too, and a unit test that escapes it (a same-named fixture of its own) stops the session before any test runs."""

from __future__ import annotations

import socket
import textwrap
import urllib.request
from pathlib import Path

import pytest
import requests

from tests.unit import conftest as guard
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


def _unit_tier(pytester: pytest.Pytester, **modules: str) -> None:
    """A tests/unit of its own under ``pytester`` (no packages: run in this process, its modules must not shadow
    ours), with this tier's conftest and ``modules`` beside it."""
    unit = pytester.path / "tests" / "unit"
    unit.mkdir(parents=True)
    (unit / "conftest.py").write_text(Path(guard.__file__).read_text(encoding="utf-8"), encoding="utf-8")
    for name, source in modules.items():
        (unit / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def _run(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "--import-mode=importlib", "tests/unit")


def test_a_module_fixture_that_binds_a_port_is_refused_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(socket.socket, "bind")  # this test's own guard lifted: only the inner session's may refuse
    _unit_tier(
        pytester,
        test_server="""
            import socket
            import pytest

            @pytest.fixture(scope="module")
            def server():
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", 0))
                    yield sock

            def test_uses_it(server):
                pass
        """,
    )
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SocketInUnitTest: a unit test tried to bind*"])


def test_a_unit_test_that_replaces_the_guard_stops_the_session_naming_it(pytester: pytest.Pytester) -> None:
    _unit_tier(
        pytester,
        test_escapes="""
            import pytest

            @pytest.fixture(scope="module")
            def no_network():
                yield

            def test_would_connect():
                pass
        """,
        test_guarded="def test_fine():\n    pass\n",
    )
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*1 unit tests run without the socket guard*", "*test_escapes.py::test_would_connect*"]
    )


def test_every_unit_test_collected_here_runs_under_the_guard(request: pytest.FixtureRequest) -> None:
    assert guard.unguarded(request.session.items) == []
