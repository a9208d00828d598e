"""A REST catalog's server sets properties of its own (``GET /v1/config``: ``defaults`` and ``overrides``,
which pyiceberg merges over the source's, ``uri`` and ``s3.endpoint`` included): what it sets is checked
with the outbound URL policy before the catalog is used, like what the source says. Real pyiceberg, a
stand-in REST server on loopback; nothing is sent to the refused addresses."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.iceberg import IcebergSnapshotSource
from lakehook.domain.assets import AssetSource
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.lakehouse import SourceAccessError, TableNotFoundError
from tests.fakes.memory import InMemorySecretStore


class RestCatalogServer:
    """Answers ``GET /v1/config`` with the given overrides, every other request with Iceberg's 404."""

    def __init__(self) -> None:
        self.overrides: dict[str, str] = {}
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.paths.append(self.path.split("?", 1)[0])
                if self.path.startswith("/v1/config"):
                    self._answer(200, {"defaults": {}, "overrides": outer.overrides})
                else:
                    error = {"message": "Table does not exist", "type": "NoSuchTableException", "code": 404}
                    self._answer(404, {"error": error})

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RestCatalogServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def server() -> Iterator[RestCatalogServer]:
    with RestCatalogServer() as running:
        yield running


def poll(server: RestCatalogServer) -> str:
    resolver = CredentialResolver(InMemorySecretStore(), policy=UrlPolicy(local_mode=True))
    source = AssetSource(catalog="rest", table="ods_db.orders", properties={"type": "rest", "uri": server.uri})
    return IcebergSnapshotSource(resolver).pointer(source)


@pytest.mark.parametrize(
    "overrides",
    [
        {"uri": "http://169.254.169.254/latest/meta-data/"},
        {"s3.endpoint": "https://[::ffff:a9fe:a9fe]"},
        {"oauth2-server-uri": "https://[fd00:ec2::254]/token"},
        {"s3.endpoint": "169.254.169.254:80"},
    ],
)
def test_an_endpoint_the_catalogs_server_sets_is_checked_before_the_catalog_is_used(
    server: RestCatalogServer, overrides: dict[str, str]
) -> None:
    server.overrides = overrides
    with pytest.raises(SourceAccessError, match="as the catalog's server configured it") as refused:
        poll(server)
    assert repr(next(iter(overrides))) in str(refused.value)
    assert server.paths == ["/v1/config"]  # the table was never asked for


def test_a_catalog_whose_server_sets_nothing_refused_is_used(server: RestCatalogServer) -> None:
    server.overrides = {"s3.endpoint": "http://127.0.0.1:9000", "uri": server.uri}  # loopback: local mode
    with pytest.raises(TableNotFoundError):
        poll(server)
    assert server.paths == ["/v1/config", "/v1/namespaces/ods_db/tables/orders"]
