"""The lakehook API (``build_app`` on whatever container is current) behind a real HTTP server on 127.0.0.1, so the
standard-library clients (``lakehook.client``) and an Airflow trigger talk to it over the wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lakehook import container
from lakehook.api.app import build_app
from lakehook.domain.producers import ProducerSpec
from lakehook.settings import Settings
from tests import wiring
from tests.fakes.http_server import FakeServer, Request, Response
from tests.support import FakeLambdaContext, api_event


class ApiServer(FakeServer):
    """Every request is turned into an API Gateway proxy event and resolved by the API's own resolver."""

    def __init__(self) -> None:
        super().__init__()
        self.app = build_app()

    def dispatch(self, request: Request) -> Response:
        raw = request.body.decode() if request.body else None
        event = api_event(request.method, request.path, headers=request.headers, query=request.query or None, raw=raw)
        answer = self.app.resolve(event, FakeLambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return Response(int(answer["statusCode"]), body)


def register_producer(producer_id: str, spec: dict[str, Any]) -> str:
    """Register a producer on the current container, as ``PUT /producers/{producerId}`` does; its signing secret."""
    registration = container.current().register_producer(producer_id, ProducerSpec.model_validate(spec))
    assert registration.secret is not None
    return registration.secret


@contextmanager
def api_on_fakes(admin_token: str) -> Iterator[ApiServer]:
    """The API on a container of in-memory fakes (made current for the test), served until the block ends."""
    container.use(wiring.in_memory(Settings(admin_token=admin_token)))
    try:
        with ApiServer() as server:
            yield server
    finally:
        container.use(None)
