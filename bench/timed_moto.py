"""Benches on a fresh moto server on loopback that counts the requests it serves and the time moto spends on them.

The benches compare what a lakehook path costs with what moto costs it: moto's share is the wall time of
moto's own WSGI application (routing, the backend's work, the response), summed over the requests it served;
what is left of the caller's wall time is boto3, HTTP on loopback and lakehook (requests served in parallel
add up, so their sum can exceed the caller's wall time). The server is a thread of the
benching process, so its CPU also shows in ``time.process_time``; ``time.thread_time`` of the calling thread
does not include it. ``fresh_lakehook`` points the process's container at such a server, as a function's
environment would; ``StreamReader`` and ``deliver`` hand stream records to a function as the local runtime does.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import requests
from tests.lakehouse import CountingMotoServer
from tests.support import ROOT, create_table

from lakehook import container
from lakehook.container import Container
from lakehook.local import moto_dynamodb
from lakehook.local.filters import matches_any
from lakehook.local.moto_streams import HttpStreamReader
from lakehook.local.template import Template
from lakehook.settings import Settings, get_settings


@dataclass
class Served:
    """What the server served inside a ``TimedMotoServer.measure`` block (filled when the block ends)."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    seconds: float = 0.0

    def by_service(self, service: str) -> dict[str, int]:
        return {op: n for (svc, op), n in sorted(self.calls.items()) if svc == service}


class TimedMotoServer(CountingMotoServer):
    """``CountingMotoServer`` that also adds up the wall time spent inside moto's application; it starts empty."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._time_lock = threading.Lock()

    def start(self) -> TimedMotoServer:
        super().start()
        # moto's backends are per process, shared by every server in it: start from nothing, as a fresh one
        requests.post(f"{self.endpoint}/moto-api/reset", timeout=30).raise_for_status()
        wsgi = self._server._server
        assert wsgi is not None
        counted = wsgi.app

        def timed(environ: dict[str, Any], start_response: Any) -> Any:
            began = time.perf_counter()
            try:
                return list(counted(environ, start_response))  # moto builds the whole body here
            finally:
                with self._time_lock:
                    self.seconds += time.perf_counter() - began

        wsgi.app = timed
        return self

    @contextmanager
    def served(self) -> Iterator[Served]:
        """Requests and seconds inside moto for the block (every client's, every thread's)."""
        with self._time_lock:
            seconds = self.seconds
        served = Served()
        with self.measure() as calls:
            yield served
        with self._time_lock:
            served.seconds = self.seconds - seconds
        served.calls = calls


TABLE = "lakehook-bench"
BUCKET = "lakehook-bench-manifests"
ADMIN = "bench-admin"


@contextmanager
def fresh_lakehook(**environment: str) -> Iterator[tuple[TimedMotoServer, Container]]:
    """A fresh ``TimedMotoServer`` with lakehook's table (as template.yaml declares it) and manifest bucket, and
    the process's container pointed at it through the environment, as a function's would be (local mode:
    admin by bearer token, loopback targets allowed), its DynamoDB adapted as the local stack's is (a cancelled
    transaction rolls back in place; stock moto swaps in a copy of the table and orphans the open stream readers).
    Everything is put back afterwards."""
    with moto_dynamodb.adapted():
        yield from _fresh_lakehook(environment)


def _fresh_lakehook(environment: dict[str, str]) -> Iterator[tuple[TimedMotoServer, Container]]:
    server = TimedMotoServer().start()
    env = {
        "LAKEHOOK_TABLE_NAME": TABLE,
        "LAKEHOOK_BUCKET_NAME": BUCKET,
        "LAKEHOOK_ENDPOINT_URL": server.endpoint,
        "LAKEHOOK_ADMIN_TOKEN": ADMIN,
        "LAKEHOOK_ALLOW_INSECURE_LOOPBACK_TARGETS": "true",
        **environment,
    }
    saved = {name: os.environ.get(name) for name in env}
    try:
        os.environ.update(env)
        get_settings.cache_clear()
        settings = Settings()
        create_table(boto3.client("dynamodb", endpoint_url=server.endpoint, region_name=settings.region), TABLE)
        boto3.client("s3", endpoint_url=server.endpoint, region_name=settings.region).create_bucket(Bucket=BUCKET)
        wired = Container(settings)
        container.use(wired)
        yield server, wired
    finally:
        container.use(None)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        get_settings.cache_clear()
        server.stop()


class StreamReader:
    """The table's DynamoDB stream on the server, read as the local runtime's tailer reads it over HTTP."""

    def __init__(self, endpoint: str, region: str = "us-east-1") -> None:
        client = boto3.client("dynamodbstreams", endpoint_url=endpoint, region_name=region)
        ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name=region)
        self._reader = HttpStreamReader(client, ddb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"])

    def read(self) -> list[dict[str, Any]]:
        """Every record written since the last read, in the form Lambda's event source mapping delivers."""
        out: list[dict[str, Any]] = []
        while records := self._reader.read():
            out += records
        return out


def stream_filters(function: str) -> list[dict[str, Any]]:
    """The FilterCriteria of the function's stream subscription in template.yaml."""
    (spec,) = [f for f in Template.load(ROOT / "template.yaml").functions() if f.name == function]
    return [pattern for subscription in spec.streams for pattern in subscription.filters]


def deliver(records: list[dict[str, Any]], function: str) -> list[dict[str, Any]]:
    """The records the function's subscription lets through (Lambda drops the others)."""
    filters = stream_filters(function)
    return [r for r in records if matches_any(r, filters)]


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Powertools prints metrics (EMF) on stdout, as in Lambda: its cost stays measured, its lines unprinted."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield
