"""Racing threads against a moto server that applies one DynamoDB request at a time, as DynamoDB does.

DynamoDB applies each request atomically (a transaction is serializable, a conditional write is
checked and applied as one step). moto does not: its TransactWriteItems checks, writes, and on a
failed condition restores a deep copy of the whole table taken before, erasing what other threads
committed meanwhile. So the server here applies one DynamoDB request at a time, which is the
guarantee the real service gives; the interleaving of requests stays as random as the threads make it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto.dynamodb.responses import DynamoHandler
from moto.server import ThreadedMotoServer

from tests.support import create_table


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def atomic_dynamodb_server(table: str) -> Iterator[str]:
    """A ThreadedMotoServer on 127.0.0.1 with ``table`` created; answers its URL."""
    patch = pytest.MonkeyPatch()
    one_at_a_time = threading.RLock()
    call_action = DynamoHandler.call_action

    def atomic(self: DynamoHandler) -> Any:
        with one_at_a_time:
            return call_action(self)

    patch.setattr(DynamoHandler, "call_action", atomic)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        create_table(boto3.client("dynamodb", region_name="us-east-1", endpoint_url=url), table)
        yield url
        # moto's backends are process-wide: what this server made (the table, queues) would be there for the next
        # server of the same process, so a second module racing on a table of the same name starts from nothing
        boto3.client("dynamodb", region_name="us-east-1", endpoint_url=url).delete_table(TableName=table)
    finally:
        server.stop()
        patch.undo()


@contextmanager
def first_transaction_waits_for_a_rival(
    holds: Callable[[list[str | None]], bool] = lambda keys: True, give_up_seconds: float = 60
) -> Iterator[None]:
    """Make transactions on the local DynamoDB (lakehook.local.moto_locks) meet, instead of hoping they do.

    The first transaction whose item lock keys ``holds`` accepts keeps its items, once taken, until another
    transaction has been cancelled with TransactionConflict (the conflict count moves): a wait on progress, so
    the verdict does not depend on how the machine schedules threads. It gives up after ``give_up_seconds`` only
    so that code that never meets fails its test instead of hanging it.
    """
    from lakehook.local import moto_locks

    original = moto_locks._holding_all
    start = moto_locks.conflicts
    turn = threading.Lock()
    armed = [True]

    @contextmanager
    def holding(keys: list[str | None]) -> Iterator[None]:
        with original(keys):
            with turn:
                first = armed[0] and holds(keys)
                armed[0] = armed[0] and not first
            deadline = time.monotonic() + give_up_seconds
            while first and moto_locks.conflicts == start and time.monotonic() < deadline:
                time.sleep(0.01)
            yield

    moto_locks._holding_all = holding
    try:
        yield
    finally:
        moto_locks._holding_all = original


def table_at(url: str, table: str) -> Any:
    """A Table resource of its own (its own session), as a separate Lambda invocation would have."""
    return boto3.session.Session(region_name="us-east-1").resource("dynamodb", endpoint_url=url).Table(table)


def race(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` on ``count`` threads released together; answer their results."""
    start = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return results


def drain_queue(endpoint: str, url: str, resolver: Any, redeliver: float, seed: int) -> int:
    """Hand the resolver queue's messages at ``url`` to ``resolver`` (as its SQS event source does, one a
    invocation) until the queue is empty, racing whoever else drains it; a share ``redeliver`` of the messages is
    not deleted, so SQS gives it again after its visibility timeout. How many it handled. The wait follows progress:
    it gives up only after two minutes without a message, naming how many are left."""
    import random
    import time

    from lakehook.handlers import handle_resolver_queue

    client = boto3.session.Session(region_name="us-east-1").client("sqs", endpoint_url=endpoint)
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]

    def left() -> int:
        found = client.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(found.get(name, 0)) for name in names)

    wired = type("Wired", (), {"resolver": resolver})()
    chooser = random.Random(seed)
    handled, progress = 0, time.monotonic()
    while True:
        got = client.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
        if not got:
            if left() == 0:
                return handled
            assert time.monotonic() - progress < 120, f"the queue stopped draining: {left()} messages left"
            time.sleep(0.1)
            continue
        record = {"messageId": got[0]["MessageId"], "body": got[0]["Body"], "eventSource": "aws:sqs"}
        assert handle_resolver_queue({"Records": [record]}, wired) == {"batchItemFailures": []}
        if chooser.random() >= redeliver:
            client.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
        handled, progress = handled + 1, time.monotonic()
