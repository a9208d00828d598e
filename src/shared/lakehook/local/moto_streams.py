"""Read the table's DynamoDB stream straight from moto's memory, in the stack's own process.

The local stack runs moto in its own process, so its stream tailer does not need HTTP to read the stream: a
``GetRecords`` answer built by moto's response serializer (every attribute of every image walked through the
botocore shape, about a fifth of the stack's time under a fill) and parsed back by botocore on the same
process is the same list of records moto holds. :class:`MotoStreamReader` takes them from the table's stream
shard under the data latch of :mod:`lakehook.local.moto_locks` (so it never sees a transaction half-applied
or a record a cancelled transaction appended and took back) and turns them into the JSON an event source
mapping hands a function, exactly as :class:`HttpStreamReader` does from a ``GetRecords`` answer:
``tests/integration/test_stream_readers.py`` checks that both readers give the same records.

Reading a shard's length costs microseconds, so the tailer can look often: a record reaches its function
within about 10 ms rather than the HTTP reader's 100 ms poll.

It reads moto's internals (the table's ``stream_shard``, its ``items`` and ``starting_sequence_number``, each
``StreamRecord``'s ``to_json``): :func:`supported` is true only on the moto versions and function sources
recorded here, and the stack falls back to the HTTP reader otherwise.
"""

from __future__ import annotations

import base64
import logging
import time
from datetime import UTC, datetime
from typing import Any, Protocol

from lakehook.local import moto_dynamodb, moto_locks

log = logging.getLogger("lakehook.local.streams")
_DESCRIBE_EVERY = 1.0  # seconds between DescribeStream calls (the shard list), HTTP reader

# sha256 (first 16 hex digits) of the source of each moto function the in-process reader relies on (moto 5.2.5).
FINGERPRINTS: dict[str, str] = {
    "moto.dynamodb.models.table:StreamShard.__init__": "5b521e4bd51c467e",
    "moto.dynamodb.models.table:StreamShard.get": "fa7e9a0d7b438c2f",
    "moto.dynamodb.models.table:StreamRecord.__init__": "511904c6352cfd9a",
    "moto.dynamodb.models.table:StreamRecord.to_json": "99dcfe1e37055a23",
}


class StreamReader(Protocol):
    """Where the tailer gets the stream's new records from, in stream order."""

    poll_interval: float  # seconds between looks when the last one found nothing

    def read(self) -> list[dict[str, Any]]:
        """The records written since the last call (every shard), as a stream event's ``Records`` holds them
        (``eventSourceARN`` included)."""
        ...


def jsonable(value: Any) -> Any:
    """A record (or part of one) as JSON: times as epoch seconds, binary as base64, sets as lists."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)  # moto's clock is naive UTC
        return int(moment.timestamp())
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [jsonable(v) for v in value]
    return value


class HttpStreamReader:
    """The stream through the Streams API (DescribeStream, GetShardIterator, GetRecords), as Lambda reads it."""

    poll_interval = 0.1

    def __init__(self, streams_client: Any, stream_arn: str) -> None:
        self._client = streams_client
        self._arn = stream_arn
        self._iterators: dict[str, str | None] = {}
        self._shards: list[dict[str, Any]] = []
        self._described = -1.0  # when DescribeStream last ran (monotonic seconds)

    def read(self) -> list[dict[str, Any]]:
        if time.monotonic() - self._described >= _DESCRIBE_EVERY:  # new shards are rare: look once a second
            self._shards = self._client.describe_stream(StreamArn=self._arn)["StreamDescription"].get("Shards", [])
            self._described = time.monotonic()
        records: list[dict[str, Any]] = []
        for shard in self._shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self._client.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self._iterators[shard_id]
            if iterator is None:
                continue
            answer = self._client.get_records(ShardIterator=iterator, Limit=1000)
            self._iterators[shard_id] = answer.get("NextShardIterator")
            records += [_event_record(raw, self._arn) for raw in answer.get("Records", [])]
        return records


class MotoStreamReader:
    """The table's stream read from moto's memory (the stack's process only), from its first record on."""

    poll_interval = 0.01

    def __init__(self, stream_arn: str) -> None:
        # arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>
        _, _, _, self._region, self._account_id, resource = stream_arn.split(":", 5)
        self._table_name = resource.split("/")[1]
        self._arn = stream_arn
        self._shard: Any = None  # the shard being read; a new one (the table made again) is read from its start
        self._next = 0  # index in the shard's records of the next one to read

    def read(self, limit: int = 1000) -> list[dict[str, Any]]:
        from moto.dynamodb.models import dynamodb_backends

        with moto_locks.latch:
            table = dynamodb_backends[self._account_id][self._region].tables.get(self._table_name)
            shard = None if table is None else table.stream_shard
            if table is None or shard is None:
                return []
            if shard is not self._shard:  # the table's stream (at start, or the table made again): its ARN as moto's
                self._shard, self._next = shard, 0
                self._arn = f"{table.table_arn}/stream/{table.latest_stream_label}"
            raw = [record.to_json() for record in shard.items[self._next : self._next + limit]]
            self._next += len(raw)
        return [_event_record(record, self._arn) for record in raw]  # copies: moto's records stay moto's


def _event_record(raw: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A stream record as a DynamoDB event source mapping hands it to a function."""
    record: dict[str, Any] = jsonable(raw)
    record["eventSourceARN"] = stream_arn
    return record


def problems() -> list[str]:
    """Why moto's stream cannot be read in-process here (empty when it can)."""
    return moto_dynamodb.problems(FINGERPRINTS)


def supported() -> bool:
    found = problems()
    if found:
        log.warning("the stream is read over HTTP: %s", "; ".join(found))
    return not found
