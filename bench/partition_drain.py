"""Partition drain: every partition of a large commit runs, each resolver invocation bounded, the drain linear.

Two parts (issue 33):
- **moto, in process** (DynamoDB on lakehook's moto adapter, SQS): one rule group keyed on `dt` over orders and
  payments (both partitioned members, mapped alike; with 10 rules they share the facts). Payments has committed data
  to every day; then orders commits, and the resolver takes the commit's stream records as one batch, then the
  resolver queue's messages one an invocation (as `ResolverWorkQueue`'s `BatchSize: 1`) until it is empty. Shapes:
  one commit touching 10, 1,000 and 10,000 partitions (a commit's keys arrive 1,000 an event record), and ten pushes
  of ten events of 1,000 keys each in one batch (100 records; 10,000 distinct days, each named by ten of them).
  Counted: resolver invocations, the most write requests one invocation made (UpdateItem, PutItem, DeleteItem,
  TransactWriteItems, BatchWriteItem, SendMessageBatch), the most items it wrote (each item of a transaction or a
  batch) and of them partition facts, DynamoDB + SQS requests per partition run, and the wall time of the whole
  drain on this machine.
- **the local stack** (`LocalStack`: every function of template.yaml on moto over loopback, one rule): the same
  shapes as signed pushes of orders to days payments touched before (a commit's keys 1,000 an event, one push an
  event; the ten pushes back to back, ten events each); the time from the first push to the first run of the last
  day touched, followed on the table's stream (each claim's INSERT, read from moto's memory: following costs the
  stack nothing), and the runs then counted through `GET /triggers` once the stack is idle (in the ten pushes' shape
  a day a later event touched after its first run runs again: ALL_UPDATED).
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from moto import mock_aws
from tests.support import RequestCounter, create_table

from lakehook.adapters.dynamodb.rule_store import rule_items
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.handlers import handle_resolver_queue
from lakehook.observability import logger
from lakehook.ports.rules import StateChange
from lakehook.settings import Settings
from lakehook.usecases.ingest import IngestEvents

TABLE = "lakehook-bench"
ORDERS = "paimon://lake/ods/orders"
PAYMENTS = "paimon://lake/ods/payments"
WRITES = ("UpdateItem", "PutItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessageBatch")
STALL_SECONDS = 300  # the local wait gives up after this long without a new run


def _days(n: int) -> list[str]:
    from datetime import date, timedelta

    first = date(2000, 1, 1)
    return [f"dt={(first + timedelta(days=i)).isoformat()}" for i in range(n)]


def _rule(i: int) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": f"daily_{i:03d}",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}],
                }
            ],
        }
    )


def _records(ingest: IngestEvents, asset: str, sid: int, keys: list[str]) -> list[StateChange]:
    """A commit's stream records: its event (the first 1,000 keys) and the rest 1,000 keys a record, as slices."""
    event = AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid, partitions=keys[:1000])
    ingest.ingest(event, SourceType.PUSH)
    record = snapshot_record(event)
    changes = [StateChange(asset, snapshot=record, partitions=event.partitions)]
    for start in range(1000, len(keys), 1000):
        part = TouchedPartitions.model_validate(keys[start : start + 1000])
        changes.append(StateChange(asset, snapshot=record, partitions=part, partitions_only=True))
    return changes


class _Items:
    """The items a client's write requests write (a transaction's or a batch's each count), and of them the partition
    facts (``PFACT#`` items), as the requests are built."""

    def __init__(self) -> None:
        self.written = 0
        self.facts = 0

    def attach(self, client: Any) -> _Items:
        client.meta.events.register("before-parameter-build.dynamodb.*", self._count)
        return self

    def _count(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            items = [next(iter(a.values())) for a in params.get("TransactItems", [])]
        elif model.name == "BatchWriteItem":
            items = [next(iter(r.values())) for rs in params.get("RequestItems", {}).values() for r in rs]
        elif model.name in ("PutItem", "UpdateItem", "DeleteItem"):
            items = [params]
        else:
            return
        self.written += len(items)
        self.facts += sum(1 for i in items if _sort_key(i.get("Item") or i.get("Key") or {}).startswith("PFACT#"))


def _sort_key(item: dict[str, Any]) -> str:
    sk = item.get("SK", "")
    return str(sk.get("S", "") if isinstance(sk, dict) else sk)


class _Drain:
    """The resolver of a container on moto, its stream batch and its queue's messages, counted per invocation."""

    def __init__(self, container: Container, queue_url: str, counter: RequestCounter) -> None:
        self._container = container
        self._sqs = boto3.client("sqs", region_name="us-east-1")
        self._url = queue_url
        self._counter = counter
        self._items = _Items().attach(container.table.meta.client)
        self.invocations = 0
        self.most_writes = 0
        self.most_items = 0
        self.most_facts = 0

    def _counted(self, call: Any) -> None:
        before = dict(self._counter.calls)
        written, facts = self._items.written, self._items.facts
        call()
        after = dict(self._counter.calls)
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        self.invocations += 1
        self.most_writes = max(self.most_writes, sum(delta.get(k, 0) for k in WRITES))
        self.most_items = max(self.most_items, self._items.written - written)
        self.most_facts = max(self.most_facts, self._items.facts - facts)

    def __call__(self, batch: list[StateChange]) -> None:
        self._counted(lambda: self._container.resolver(batch))
        while True:
            got = self._sqs.receive_message(QueueUrl=self._url, MaxNumberOfMessages=1).get("Messages", [])
            if not got:
                return
            message = got[0]
            record = {"messageId": message["MessageId"], "body": message["Body"], "eventSource": "aws:sqs"}
            self._counted(lambda r=record: handle_resolver_queue({"Records": [r]}, self._container))
            self._sqs.delete_message(QueueUrl=self._url, ReceiptHandle=message["ReceiptHandle"])


def _scenario(name: str, rules: int, commits: list[list[str]]) -> dict[str, Any]:
    from lakehook.local import moto_dynamodb

    with mock_aws(), moto_dynamodb.adapted(True):
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue_url = sqs.create_queue(QueueName="resolver-work")["QueueUrl"]
        with table.batch_writer() as batch:
            for i in range(rules):
                meta, index = rule_items(_rule(i), 1, 0, 0)
                for item in (meta, *index):
                    batch.put_item(Item=item)
        container = Container(Settings(table_name=TABLE, region="us-east-1", resolver_queue_url=queue_url))
        container.overrides["table"] = table
        ingest = IngestEvents(container.asset_store)
        every = sorted({k for keys in commits for k in keys})
        counter = RequestCounter().attach(table.meta.client)
        queue = container.resolver_queue
        counter.attach(queue._client)  # type: ignore[union-attr] # the function's own sends, not the service's polls
        drain = _Drain(container, queue_url, counter)
        drain(_records(ingest, PAYMENTS, 1, every))  # not measured: payments touched every day before
        drain.invocations = drain.most_writes = drain.most_items = drain.most_facts = 0
        batch = [c for n, keys in enumerate(commits) for c in _records(ingest, ORDERS, 1 + n, keys)]
        before = dict(counter.calls)
        began = time.perf_counter()
        drain(batch)
        seconds = time.perf_counter() - began
        requests = sum(counter.calls.values()) - sum(before.values())
        runs = sum(
            len(container.trigger_store.list_for_rule(_rule(i).rule_id, limit=100_000).items) for i in range(rules)
        )
        return {
            "shape": name,
            "rules": rules,
            "partition runs": f"{runs:,}",
            "resolver invocations": drain.invocations,
            "most write requests in one invocation": drain.most_writes,
            "most items written in one invocation": drain.most_items,
            "most facts written in one invocation": drain.most_facts,
            "requests per partition run": round(requests / max(runs, 1), 2),
            "seconds (moto, in process)": round(seconds, 1),
        }


class _Claims:
    """The partition runs claimed, as the table's stream shows them (each claim's INSERT), read from moto's memory in
    the stack's process: following the drain costs the stack nothing (a listing through the API at every look, as
    this bench did before, kept moto busy with its own queries all along the drain). ``first`` holds when each
    partition's first run was seen: the time to the last partition's run is its latest."""

    def __init__(self, stack: Any, rule_id: str) -> None:
        from lakehook.local.moto_streams import MotoStreamReader

        arn = stack._client("dynamodb").describe_table(TableName=stack.table_name)["Table"]["LatestStreamArn"]
        self._reader = MotoStreamReader(arn)
        self._rule = rule_id
        self.at: list[float] = []  # when each claim was seen (time.monotonic)
        self.first: dict[str, float] = {}  # per partition, when its first run was seen
        self.read()  # what came before is not this drain's
        self.at.clear()
        self.first.clear()

    def read(self) -> int:
        """Take the new records: how many partitions have run so far in this drain."""
        for record in self._reader.read(limit=100_000):
            image = record.get("dynamodb", {}).get("NewImage", {})
            kind, rule = image.get("itemType", {}).get("S"), image.get("ruleId", {}).get("S")
            if record.get("eventName") == "INSERT" and kind == "TRIGGER" and rule == self._rule:
                seen = time.monotonic()
                self.at.append(seen)
                self.first.setdefault(image.get("partition", {}).get("S", ""), seen)
        return len(self.first)


def _listed(url: str, admin: dict[str, str]) -> int:
    """The rule's runs, counted through the API (``GET /triggers``, every page)."""
    import requests

    count, token = 0, None
    while True:
        params: dict[str, Any] = {"ruleId": "daily", "limit": 500, **({"nextToken": token} if token else {})}
        answer = requests.get(f"{url}/triggers", headers=admin, params=params, timeout=120)
        if answer.status_code != 200:
            raise SystemExit(f"GET /triggers answered {answer.status_code}: {answer.text}")
        page = answer.json()
        count += len(page["items"])
        token = page.get("nextToken")
        if not token:
            return count


Push = list[list[str]]
"""one signed push (one HTTP request to the API): its events, each a commit of orders naming its keys (<= 1,000)"""


def _one_push_each(days: list[str]) -> list[Push]:
    """A commit touching ``days``: its keys 1,000 an event (a snapshot each), one push each."""
    return [[days[start : start + 1000]] for start in range(0, len(days), 1000)]


def _local(name: str, pushes: list[Push]) -> dict[str, Any]:
    """The time from the first of ``pushes`` of orders (sent back to back) to the first run of the last of the days
    they touched, on the local stack, payments having touched every day before; the runs are then counted through
    ``GET /triggers`` once the stack is idle (a day a later commit touched after its first run runs again)."""
    import requests

    from bench.push_clients import push
    from lakehook.local.runtime import LocalStack

    admin = {"Authorization": "Bearer bench-admin"}
    days = sorted({d for p in pushes for keys in p for d in keys})
    with LocalStack(
        port=0,
        admin_token="bench-admin",
        extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"},
    ) as stack:
        url = stack.api_url
        secret = requests.put(
            f"{url}/producers/bench", headers=admin, timeout=30, json={"assetKeyPrefixes": ["paimon://lake/ods/"]}
        ).json()["secret"]
        rule = {k: v for k, v in json_form(_rule(0)).items() if k != "ruleId"}
        rule["target"] = {"type": "eventbridge", "eventBusName": "default"}
        answer = requests.put(f"{url}/rules/daily", headers=admin, json=rule, timeout=30)
        if answer.status_code >= 400:
            raise SystemExit(f"PUT /rules/daily answered {answer.status_code}: {answer.text}")

        def send(asset: str, commits: list[Push]) -> None:
            sid = 1
            with requests.Session() as session:
                for events in commits:
                    body = []
                    for keys in events:
                        body.append({"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid})
                        body[-1]["partitions"] = keys
                        sid += 1
                    push(session, url, secret, body)

        send(PAYMENTS, _one_push_each(days))
        stack.wait_idle(timeout=600)
        claims = _Claims(stack, "daily")
        began = time.monotonic()
        send(ORDERS, pushes)
        pushed = time.monotonic() - began
        last_change = time.monotonic()
        while claims.read() < len(days):
            if claims.at and claims.at[-1] > last_change:
                last_change = claims.at[-1]
            elif time.monotonic() - last_change > STALL_SECONDS:
                raise SystemExit(f"local drain stalled: {len(claims.first)} of {len(days)} partitions ran")
            time.sleep(0.1)
        firsts = sorted(claims.first.values())
        stack.wait_idle(timeout=STALL_SECONDS)
        listed = _listed(url, admin)
        if listed < len(days):
            raise SystemExit(f"GET /triggers lists {listed} runs of {len(days)} partitions")
        step = max(1, len(days) // 6)
        marks = [(round(firsts[n - 1] - began, 1), n) for n in range(step, len(days) + 1, step)]
        return {
            "shape": f"{name} (local stack)",
            "partition runs": f"{listed:,}",
            "seconds from the push to the last partition's run": round(firsts[-1] - began, 1),
            "seconds the pushes took": round(pushed, 1),
            "partitions run by then (s: partitions)": ", ".join(f"{t}: {n}" for t, n in marks),
        }


def run() -> list[dict[str, Any]]:
    level = logger.log_level
    logger.setLevel("WARNING")  # one log line per claim
    try:
        tens = _days(10_000)
        rows = [_scenario(f"one commit touching {n:,}", 1, [_days(n)]) for n in (10, 1000, 10_000)]
        rows += [_scenario(f"one commit touching {n:,}", 10, [_days(n)]) for n in (10, 100)]
        pushes = [tens[(n % 10) * 1000 : (n % 10) * 1000 + 1000] for n in range(100)]
        rows.append(_scenario("10 pushes of 10 events x 1,000 keys, one batch", 1, pushes))
        if os.environ.get("LAKEHOOK_BENCH_DRAIN_LOCAL", "1") != "0":
            rows += [_local(f"one commit touching {n:,}", _one_push_each(_days(n))) for n in (10, 1000, 10_000)]
            ten = [pushes[n : n + 10] for n in range(0, 100, 10)]  # the same 100 events, ten to a push
            rows.append(_local("10 pushes of 10 events x 1,000 keys", ten))
        return rows
    finally:
        logger.setLevel(level)


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
