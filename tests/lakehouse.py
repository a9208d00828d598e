"""Helpers for real Iceberg and Paimon tables in tests and benchmarks.

- :class:`CountingMotoServer`: a ``ThreadedMotoServer`` on 127.0.0.1 whose WSGI app counts every
  HTTP request by service and operation (S3 by method, JSON APIs by ``X-Amz-Target``), so storage
  and catalog requests are counted exactly, whichever client (boto3, pyarrow's C++ S3) made them.
- :class:`CountingFileIO`: pyiceberg's PyArrowFileIO counting the files it opens for reading
  (plug it in with the catalog property ``py-io-impl``).
- :class:`SqlStatements`: counts SQL statements every SQLAlchemy engine runs.
- commit helpers for both formats.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from moto.server import ThreadedMotoServer
from pyiceberg.io.pyarrow import PyArrowFileIO

from tests.fakes.memory import InMemoryPollStatusStore as InMemoryPollStatusStore  # its home was here

ROWS = pa.schema([("id", pa.int64()), ("amount", pa.int64())])
REGION = "us-east-1"


# --- counting ---------------------------------------------------------------------------------------


class CountingMotoServer:
    """A moto server on a free loopback port, counting the requests it serves."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.paths: Counter[str] = Counter()
        self._lock = threading.Lock()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> CountingMotoServer:
        self._server.start()
        wsgi = self._server._server
        assert wsgi is not None
        app = wsgi.app

        def counting(environ: dict[str, Any], start_response: Any) -> Any:
            auth = environ.get("HTTP_AUTHORIZATION", "")
            service = auth.split("Credential=", 1)[1].split("/")[3] if "Credential=" in auth else "?"
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            operation = target.rsplit(".", 1)[-1] if target else _s3_operation(environ)
            with self._lock:
                self.calls[(service, operation)] += 1
                if service == "s3":
                    self.paths[f"{operation} {environ.get('PATH_INFO', '')}"] += 1
            return app(environ, start_response)

        wsgi.app = counting
        return self

    def stop(self) -> None:
        self._server.stop()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.paths.clear()

    @contextmanager
    def measure(self) -> Iterator[Counter[tuple[str, str]]]:
        """The requests served inside the block."""
        with self._lock:
            before = Counter(self.calls)
        delta: Counter[tuple[str, str]] = Counter()
        yield delta
        with self._lock:
            delta.update(self.calls - before)

    def s3_properties(self, prefix: str = "s3.") -> dict[str, str]:
        return {f"{prefix}endpoint": self.endpoint, f"{prefix}region": REGION}


def _s3_operation(environ: dict[str, Any]) -> str:
    """S3's REST operation from method, path (path-style: /bucket/key) and query."""
    method = environ["REQUEST_METHOD"]
    has_key = "/" in environ.get("PATH_INFO", "").strip("/")
    query = environ.get("QUERY_STRING", "")
    if method == "GET":
        return "GetObject" if has_key and "list-type" not in query else "ListObjects"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if method == "PUT":
        return "PutObject" if has_key else "CreateBucket"
    if method == "DELETE":
        return "DeleteObject" if has_key else "DeleteBucket"
    return "DeleteObjects" if "delete" in query else method


def service_total(calls: Counter[tuple[str, str]], service: str) -> int:
    return sum(n for (svc, _), n in calls.items() if svc == service)


class CountingFileIO(PyArrowFileIO):
    """PyArrowFileIO that counts reads per location (class-wide: pyiceberg builds the instances)."""

    reads: Counter[str] = Counter()
    _lock = threading.Lock()

    def new_input(self, location: str) -> Any:
        with CountingFileIO._lock:
            CountingFileIO.reads[location] += 1
        return super().new_input(location)

    @classmethod
    def metadata_reads(cls) -> int:
        with cls._lock:
            return sum(n for path, n in cls.reads.items() if path.endswith(".metadata.json"))

    @classmethod
    def reset(cls) -> None:
        with cls._lock:
            cls.reads.clear()


class SqlStatements:
    """Counts the SQL statements SQLAlchemy engines execute while listening."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def _record(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.statements.append(statement.split(None, 1)[0].upper())

    @contextmanager
    def listening(self) -> Iterator[list[str]]:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        self.statements = []
        event.listen(Engine, "before_cursor_execute", self._record)
        try:
            yield self.statements
        finally:
            event.remove(Engine, "before_cursor_execute", self._record)


# --- writing to real tables ------------------------------------------------------------------------


def rows(*ids: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "amount": i * 10} for i in ids], schema=ROWS)


def paimon_commit(table: Any, data: pa.Table, properties: dict[str, str] | None = None) -> None:
    """One batch commit through pypaimon: one new snapshot (with ``properties`` as its snapshot properties)."""
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    commit = builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit(), snapshot_properties=properties)
    finally:
        write.close()
        commit.close()


def create_paimon_table(options: dict[str, str], name: str) -> Any:
    """A Paimon append table ``name`` (``db.table``) in the warehouse the options name."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create(options)
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(ROWS), False)
    return catalog.get_table(name)


def create_iceberg_table(catalog: Any, name: str, location: str | None = None) -> Any:
    namespace = name.split(".")[0]
    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace(namespace)
    return catalog.create_table(name, schema=ROWS, location=location)


def paimon_compact_commit(table: Any, properties: dict[str, str] | None = None) -> None:
    """A COMPACT snapshot through pypaimon's own commit path.

    pypaimon 2.1 cannot compact (its commit refuses compaction increments: Java commits them), so this
    commits what a compaction that found nothing to merge commits: a snapshot of kind COMPACT, no data change.
    """
    builder = table.new_batch_write_builder()
    commit = builder.new_commit()
    try:
        commit.file_store_commit._try_commit(
            commit_kind="COMPACT",
            commit_identifier=2**63 - 1,  # BatchWriteBuilder's identifier
            commit_entries_plan=lambda _latest: [],
            allow_empty_commit=True,
            snapshot_properties=properties,
        )
    finally:
        commit.close()


def iceberg_rewrite(table: Any, properties: dict[str, str] | None = None) -> None:
    """A real Iceberg rewrite (compaction): every data file read and written back as one, committed as ``replace``.

    pyiceberg 0.12 has no rewrite API and its summary builder refuses the REPLACE operation, so the files are
    swapped by its overwrite producer, whose summary is computed as an overwrite and then labelled REPLACE.
    """
    from pyiceberg.io.pyarrow import _dataframe_to_data_files
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    class _RewriteFiles(_OverwriteFiles):
        def _summary(self, snapshot_properties: Any = None) -> Summary:
            self._operation = Operation.OVERWRITE
            try:
                summary = super()._summary(snapshot_properties or {})
            finally:
                self._operation = Operation.REPLACE
            return Summary(Operation.REPLACE, **summary.additional_properties)

    data = table.scan().to_arrow()
    files = [task.file for task in table.scan().plan_files()]
    with (
        table.transaction() as tx,
        _RewriteFiles(
            operation=Operation.REPLACE, transaction=tx, io=table.io, snapshot_properties=properties or {}
        ) as rewrite,
    ):
        for old in files:
            rewrite.delete_data_file(old)
        for new in _dataframe_to_data_files(table_metadata=tx.table_metadata, df=data, io=table.io):
            rewrite.append_data_file(new)
