"""The dispatcher on moto for one rule's target: DynamoDB claims and ledger, S3 manifests, every target plug-in
built from boto3 clients, and a way to play a dispatcher that started the run and died before recording it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3

from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.adapters.targets import TargetDeps, build_target_clients
from lakehook.domain.dispatch import Invocation, Outcome, RunManifest
from lakehook.domain.rules import Rule
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.dispatch import TargetClient
from lakehook.usecases.dispatch import DispatchPolicy, DispatchResult, RedriveTriggers
from tests.fakes.memory import InMemorySecretStore
from tests.support import create_table
from tests.wiring import dispatch_trigger

BUCKET = "lakehook-manifests"
LEASE_MS = 300_000
AFTER_THE_LEASE_MS = 601_000


@dataclass
class MotoDispatch:
    """One claimed trigger of a rule with ``target``, and the dispatcher that owes it a run (inside ``mock_aws``)."""

    trigger: Trigger
    target: dict[str, Any]
    region: str
    now: list[int]

    def __post_init__(self) -> None:
        s3 = boto3.client("s3", region_name=self.region)
        if BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
            s3.create_bucket(Bucket=BUCKET)
        create_table(boto3.client("dynamodb", region_name=self.region), "lakehook-dispatch")
        table = boto3.resource("dynamodb", region_name=self.region).Table("lakehook-dispatch")
        self.claims = DynamoDBTriggerStore(table)
        cursor = GroupCursor.initial(self.trigger.rule_id, self.trigger.group_id).after(self.trigger, {})
        assert self.claims.claim(self.trigger, cursor, None).outcome.value == "CLAIMED"
        rule = {
            "ruleId": self.trigger.rule_id,
            "groups": [{"groupId": self.trigger.group_id, "members": [{"assetKey": "paimon://lake/ods/orders"}]}],
            "target": self.target,
        }
        rules = DynamoDBRuleStore(table)
        rules.put_rule(Rule.model_validate(rule), self.now[0])
        self.ledger = DynamoDBTriggerLedger(table)
        self.manifests = S3ManifestStore(s3, BUCKET)
        session: Any = boto3.session.Session(region_name=self.region)
        self.targets: dict[str, TargetClient] = build_target_clients(
            TargetDeps(secrets=InMemorySecretStore(), aws=session.client)
        )
        self.dispatch = dispatch_trigger(
            self.ledger,
            rules,
            self.manifests,
            self.targets,
            DispatchPolicy(),
            clock=lambda: self.now[0],
            sleep=lambda s: None,
            metrics=None,
        )

    def crash_after_start(self) -> tuple[Outcome, str]:
        """A first dispatcher takes the claim, writes the manifest, starts the run, and dies: its outcome and the
        manifest's URI."""
        key = self.trigger.trigger_key
        assert self.ledger.begin_attempt(key, "dead", self.now[0], LEASE_MS) is not None
        uri = self.manifests.put_if_absent(key, RunManifest.for_trigger(self.trigger))
        invocation = Invocation.of(self.trigger, RunManifest.for_trigger(self.trigger), uri, 1)
        return self.targets[self.target["type"]].start(invocation, validate_target(self.target)), uri

    def redrive_after_the_lease(self) -> DispatchResult:
        """The re-drive once the dead dispatcher's lease has run out: its one result."""
        self.now[0] += AFTER_THE_LEASE_MS
        [result] = RedriveTriggers(self.ledger, self.dispatch, clock=lambda: self.now[0])().results
        return result
