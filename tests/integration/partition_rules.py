"""What the partition-rule tests on real tables share: the poller, the resolver and the API on moto, and a model of
when a partitioned group runs.

:class:`Rig` polls real tables (any format) through :class:`PollAsset` into the DynamoDB table (moto), feeds the
table's own stream to the resolver through the FilterCriteria it ships with, and reads the runs back through
``GET /triggers``. :func:`fresh_rig` builds one on its own moto (a hypothesis example each). :class:`Model` is the
documented rule (docs/partitions.md, "When a partition runs") written over what each library says its commits
touched, not over what lakehook recorded: the tests compare the two.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from moto import mock_aws

from lakehook import container as container_module
from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.handlers import handle_stream_batch
from lakehook.settings import Settings
from lakehook.usecases.poll import PollAsset
from tests.conftest import BUCKET, TABLE
from tests.integration.test_resolver_on_moto import Stream, call
from tests.support import create_table

Run = tuple[str, dict[str, int]]  # a run: its partition and the snapshot each member pinned


class Rig:
    """The poller, the resolver and the API on one moto table."""

    def __init__(self, container: Container, ddb_client: Any) -> None:
        from lakehook.api.app import build_app

        self.container = container
        self.app = build_app()
        self.stream = Stream(ddb_client)
        self.poller = PollAsset(container.snapshot_sources, container.watermark_store, container.ingest)

    def poll(self, *assets: AssetRegistration) -> None:
        for asset in assets:
            self.poller(asset)

    def put(self, rule_id: str, members: list[dict[str, Any]], mode: str = "ANY_UPDATED", by: str = "dt") -> None:
        status, body = call(
            self.app,
            "PUT",
            f"/rules/{rule_id}",
            {
                "groups": [{"groupId": "g", "partitionBy": [by], "members": members}],
                "policy": {"mode": mode},
                "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            },
        )
        assert status == 201, body

    def settle(self) -> None:
        """Hand the stream's new records to the resolver, as its event source mapping would, until it is quiet."""
        while batch := self.stream.batch()["Records"]:
            assert handle_stream_batch({"Records": batch}, self.container) == {"batchItemFailures": []}

    def runs(self, rule_id: str) -> list[Run]:
        """Every run of the rule, oldest first: its partition and what each member pinned."""
        status, body = call(self.app, "GET", "/triggers", query={"ruleId": rule_id, "limit": "100"})
        assert status == 200, body
        return [
            (t["partition"], {i["assetKey"]: i["snapshotId"] for i in t["inputs"]}) for t in reversed(body["items"])
        ]

    def explain(self, rule_id: str) -> dict[str, Any]:
        status, body = call(self.app, "GET", f"/rules/{rule_id}/explain")
        assert status == 200, body
        return body  # type: ignore[no-any-return]


@contextmanager
def fresh_rig() -> Iterator[Rig]:
    """A :class:`Rig` on its own in-process moto: one per hypothesis example, nothing shared between them."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        wired = Container(Settings(table_name=TABLE, bucket_name=BUCKET, admin_token="test-admin-token"))
        wired.overrides["table"] = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        container_module.use(wired)
        try:
            yield Rig(wired, client)
        finally:
            container_module.use(None)


@dataclass
class Model:
    """When a partitioned group runs, as docs/partitions.md states it, over the commits the libraries report.

    ``facts[member][partition]`` is the newest data commit of the member touching the partition (its order and
    snapshot id); ``ran[partition]`` what the partition's last run pinned. A stream batch whose commits touched ``p``
    runs ``p`` when every member has a fact for it and the mode holds: ``ANY_UPDATED`` one fact newer than its pin
    (facts only move forward, so none is older), ``ALL_UPDATED`` every one. Feed it the commits of one batch with
    :meth:`commit`, then :meth:`settle`.
    """

    members: tuple[str, ...]
    mode: str = "ANY_UPDATED"
    facts: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    ran: dict[str, dict[str, int]] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)

    def commit(self, member: str, order: int, snapshot_id: int, partitions: set[str], data: bool = True) -> None:
        """A commit of ``member``; ``partitions`` in the group's keys. A commit that changed no data touches none."""
        if not data:
            return
        facts = self.facts.setdefault(member, {})
        for p in partitions:
            if p not in facts or facts[p][0] < order:
                facts[p] = (order, snapshot_id)
        self.touched |= partitions

    def settle(self) -> None:
        """The resolver's evaluation of one stream batch: each partition its commits touched, once."""
        for p in sorted(self.touched):
            self._evaluate(p)
        self.touched.clear()

    def _evaluate(self, p: str) -> None:
        if any(p not in self.facts.get(m, {}) for m in self.members):
            return
        pins = {m: self.facts[m][p][1] for m in self.members}
        before = self.ran.get(p)
        newer = [before is None or pins[m] != before[m] for m in self.members]
        if any(newer) if self.mode == "ANY_UPDATED" else all(newer):
            self.ran[p] = pins
            self.runs.append((p, pins))


def by_partition(runs: list[Run]) -> Mapping[str, list[dict[str, int]]]:
    """The runs of each partition, oldest first (the order across partitions of one batch is not promised)."""
    out: dict[str, list[dict[str, int]]] = {}
    for partition, pins in runs:
        out.setdefault(partition, []).append(pins)
    return out
