"""The local gateway frames a request body as API Gateway does: a ``Content-Length`` that is not one plain
number of bytes (``abc``, ``-5``, two headers) is a 400 answered at once, never silence or the first header. It
routes as API Gateway does (a 405 naming the methods a path is served for, else a 404) and sends a function's
proxy answer as API Gateway sends it."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.local.gateway import API_GATEWAY_MAX_BODY, ApiGateway, BadRequestError, body_length
from lakehook.local.invoker import LocalFunction
from lakehook.local.template import ApiRoute, FunctionSpec

TOKEN = "local-admin"


@pytest.fixture(scope="module")
def gateway() -> Iterator[ApiGateway]:
    server = ApiGateway([], "127.0.0.1", 0, local_info={"endpointUrl": "http://moto"}, admin_token=TOKEN)
    server.start()
    yield server
    server.stop()


def exchange(gateway: ApiGateway, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes (as a client that gets framing wrong would) and read the whole answer."""
    host, port = gateway.server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as client:
        client.sendall(head.encode("latin-1") + b"\r\n" + body)
        client.shutdown(socket.SHUT_WR)  # a server waiting for more body sees the end, and must still answer
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    headers_raw, _, payload = rest.partition(b"\r\n\r\n")
    headers = dict(line.decode().split(": ", 1) for line in headers_raw.split(b"\r\n") if line)
    return int(status_line.split()[1]), headers, payload


def request(*lengths: str, path: str = "/_local/stack") -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: x", f"Authorization: Bearer {TOKEN}", "Connection: close"]
    return "\r\n".join([*lines, *(f"Content-Length: {n}" for n in lengths)]) + "\r\n"


@pytest.mark.parametrize(
    ("lengths", "said"),
    [
        (("abc",), "Content-Length 'abc' is not a number of bytes"),
        (("-5",), "Content-Length '-5' is not a number of bytes"),
        (("+5",), "is not a number of bytes"),
        (("0x10",), "is not a number of bytes"),
        (("2", "200"), "Content-Length is given 2 times ('2', '200')"),
        (("2", "2"), "Content-Length is given 2 times"),
    ],
)
def test_a_content_length_api_gateway_refuses_is_a_400_naming_it(
    gateway: ApiGateway, lengths: tuple[str, ...], said: str
) -> None:
    status, headers, payload = exchange(gateway, request(*lengths), b"{}")
    assert status == 400
    assert headers["Connection"] == "close"
    assert said in json.loads(payload)["message"]


def test_a_plain_content_length_frames_the_body_as_before(gateway: ApiGateway) -> None:
    status, _, payload = exchange(gateway, request("2"), b"{}")
    assert status == 200 and json.loads(payload) == {"endpointUrl": "http://moto"}
    status, _, _ = exchange(gateway, request(str(11 * 1024 * 1024)))
    assert status == 413  # too long, said before reading a byte of it
    assert exchange(gateway, request("9" * 40))[0] == 413  # more digits than int() takes


HEADER_VALUES = st.one_of(
    st.integers(0, 40).map(str),
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=8),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(value=HEADER_VALUES)
def test_every_content_length_gets_an_answer_400_exactly_when_it_is_no_plain_number(
    gateway: ApiGateway, value: str
) -> None:
    length = int(value) if re.fullmatch(r"[0-9]+", value) else None
    body = b"x" * length if length is not None and length <= 40 else b""  # a longer one ends short: no route
    status, _, _ = exchange(gateway, request(value, path="/nowhere"), body)
    if length is None:
        assert status == 400
    else:
        assert status == (404 if length <= API_GATEWAY_MAX_BODY else 413)


def test_body_length_reads_no_header_as_an_empty_body() -> None:
    assert body_length([]) == 0
    assert body_length([" 12 "]) == 12
    with pytest.raises(BadRequestError):
        body_length([""])


# A function of the gateway's own: it answers what its path asks, as a proxy integration's function does.
ECHO = """
import base64, json

def handler(event, context):
    if event["path"] == "/things/binary":
        body = base64.b64encode(bytes(range(4))).decode()
        return {"statusCode": 201, "body": body, "isBase64Encoded": True, "headers": {"Content-Type": "x/bin"}}
    if event["path"] == "/things/fail":
        raise RuntimeError("boom")
    headers = {"X-One": "single", "X-Both": "single"}
    echoed = {"method": event["httpMethod"], "params": event["pathParameters"], "body": event["body"]}
    multi = {"X-Both": ["a", "b"]}
    return {"statusCode": 200, "headers": headers, "multiValueHeaders": multi, "body": json.dumps(echoed)}
"""


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiGateway]:
    code = tmp_path_factory.mktemp("echo")
    (code / "app.py").write_text(ECHO)
    routes = [ApiRoute("GET", "/things/{thingId}", "NONE"), ApiRoute("POST", "/things/{thingId}", "NONE")]
    routes += [ApiRoute("DELETE", "/things/{thingId}", "NONE"), ApiRoute("HEAD", "/things/{thingId}", "NONE")]
    function = LocalFunction(FunctionSpec("Echo", code, "app.handler", {}, timeout=10, routes=routes))
    function.start()
    server = ApiGateway([function], "127.0.0.1", 0)
    server.start()
    yield server
    server.stop()
    function.stop()


def call(gateway: ApiGateway, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n"
    return exchange(gateway, head, body)


def test_a_path_served_for_other_methods_is_a_405_naming_them_and_an_unknown_path_a_404(routed: ApiGateway) -> None:
    status, headers, payload = call(routed, "PUT", "/things/7")
    assert (status, headers["Allow"]) == (405, "DELETE, GET, HEAD, POST")
    assert json.loads(payload) == {
        "error": "METHOD_NOT_ALLOWED",
        "message": "PUT is not allowed on /things/7; use DELETE, GET, HEAD, POST",
    }
    status, _, payload = call(routed, "GET", "/nothing/here")
    assert (status, json.loads(payload)) == (404, {"error": "NOT_FOUND", "message": "no route GET /nothing/here"})


def test_the_function_s_answer_goes_out_as_api_gateway_sends_it(routed: ApiGateway) -> None:
    status, headers, payload = call(routed, "POST", "/things/7", b'{"a": 1}')
    assert status == 200
    assert json.loads(payload) == {"method": "POST", "params": {"thingId": "7"}, "body": '{"a": 1}'}
    assert headers["X-One"] == "single"  # a single-value header the multi-value ones do not name
    assert headers["Content-Length"] == str(len(payload))
    status, headers, payload = call(routed, "GET", "/things/binary")
    assert (status, headers["Content-Type"], payload) == (201, "x/bin", bytes(range(4)))  # decoded from base64
    status, headers, payload = call(routed, "HEAD", "/things/7")
    assert (status, payload) == (200, b"")  # no body to a HEAD, the length of the one a GET gets
    assert int(headers["Content-Length"]) > 0


def test_a_multi_value_header_wins_over_the_single_value_one_of_its_name(routed: ApiGateway) -> None:
    host, port = routed.server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as client:
        client.sendall(b"GET /things/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    head = answer.partition(b"\r\n\r\n")[0].decode().split("\r\n")
    assert [line for line in head if line.lower().startswith("x-both:")] == ["X-Both: a", "X-Both: b"]


def test_a_function_that_fails_is_a_502(routed: ApiGateway) -> None:
    status, _, payload = call(routed, "GET", "/things/fail")
    assert (status, json.loads(payload)) == (502, {"message": "Internal server error"})
