"""The local stack's moto answers AWS clients on this machine, never a web page: real HTTP requests to a
running stack, carrying a foreign ``Origin`` (a fetch, a form post, a CORS preflight) or a DNS-rebinding
``Host``, get a 403 without any ``Access-Control-*`` header and reach no backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from lakehook.local.moto_server import LocalMotoServer
from lakehook.local.runtime import LocalStack

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorder" / "template.yaml"
EVIL = "https://evil.example"
SECRET = "lakehook/local/a-producer"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(template=FIXTURE, port=0, poll_every=5) as running:
        secrets = boto3.client("secretsmanager", endpoint_url=running.endpoint_url, region_name="us-east-1")
        secrets.create_secret(Name=SECRET, SecretString="s3cr3t")
        yield running


def secrets_client(endpoint: str, origin: str | None) -> Any:
    client = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1")
    if origin is not None:  # as a browser adds it to a web page's cross-origin request

        def add_origin(request: Any, **_: Any) -> None:
            request.headers["Origin"] = origin

        client.meta.events.register("before-send.secrets-manager", add_origin)
    return client


def no_cors(headers: Any) -> bool:
    return not any(name.lower().startswith("access-control-") for name in headers)


def test_a_web_pages_request_for_a_secret_is_refused_without_cors_headers(stack: LocalStack) -> None:
    assert secrets_client(stack.endpoint_url, None).get_secret_value(SecretId=SECRET)["SecretString"] == "s3cr3t"
    for origin in (EVIL, "null", "http://localhost:3000", "http://127.0.0.1:8000"):
        with pytest.raises(ClientError) as refused:
            secrets_client(stack.endpoint_url, origin).get_secret_value(SecretId=SECRET)
        answer = refused.value.response["ResponseMetadata"]
        assert answer["HTTPStatusCode"] == 403, origin
        assert no_cors(answer["HTTPHeaders"]) and "s3cr3t" not in str(refused.value.response)


def test_a_preflight_from_a_foreign_origin_gets_no_allow_origin(stack: LocalStack) -> None:
    for path in ("/", "/moto-api/data.json", "/some-bucket/key"):
        answer = requests.options(
            f"{stack.endpoint_url}{path}",
            headers={
                "Origin": EVIL,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "x-amz-target,content-type,authorization",
            },
            timeout=10,
        )
        assert answer.status_code == 403 and no_cors(answer.headers), (path, answer.headers)


def test_a_form_post_from_a_web_page_does_not_reach_moto(stack: LocalStack) -> None:
    # a "simple" cross-origin request, sent by a browser without a preflight: it must not act either
    answer = requests.post(
        f"{stack.endpoint_url}/moto-api/reset",
        headers={"Origin": EVIL, "Content-Type": "text/plain"},
        timeout=10,
    )
    assert answer.status_code == 403 and no_cors(answer.headers)
    assert secrets_client(stack.endpoint_url, None).get_secret_value(SecretId=SECRET)["SecretString"] == "s3cr3t"


def test_a_dns_rebinding_host_is_refused(stack: LocalStack) -> None:
    # evil.example resolving to 127.0.0.1: the page is same-origin, the browser sends no Origin on a GET
    port = stack.endpoint_url.rsplit(":", 1)[1]
    answer = requests.get(
        f"{stack.endpoint_url}/moto-api/data.json", headers={"Host": f"evil.example:{port}"}, timeout=10
    )
    assert answer.status_code == 403 and "s3cr3t" not in answer.text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert requests.get(f"{stack.endpoint_url}/moto-api/data.json", headers={"Host": host}, timeout=10).ok


def test_moto_answers_no_cors_header_even_to_its_own_origin(stack: LocalStack) -> None:
    # moto's dashboard (same origin) still works; flask-cors' '*' never comes back
    answer = requests.get(
        f"{stack.endpoint_url}/moto-api/data.json", headers={"Origin": stack.endpoint_url}, timeout=10
    )
    assert answer.ok and no_cors(answer.headers)


def test_stock_moto_would_have_answered_the_foreign_origin() -> None:
    """What the guard is for: moto's own server allows every origin (flask-cors)."""
    from moto.server import ThreadedMotoServer

    stock = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    stock.start()
    try:
        host, port = stock.get_host_and_port()
        answer = requests.options(
            f"http://{host}:{port}/",
            headers={"Origin": EVIL, "Access-Control-Request-Method": "POST"},
            timeout=10,
        )
        assert answer.headers.get("Access-Control-Allow-Origin") in ("*", EVIL)
    finally:
        stock.stop()


def test_the_guarded_server_says_why_it_cannot_start() -> None:
    first = LocalMotoServer(port=0)
    first.start()
    try:
        taken = first.get_host_and_port()[1]
        with pytest.raises(OSError):
            LocalMotoServer(port=taken).start()
    finally:
        first.stop()
