"""POST /triggers/{triggerKey}/replay on moto, a real Iceberg table (SQL catalog) and a real spool on S3."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from pyiceberg.catalog import Catalog, load_catalog

from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.api.app import build_app
from lakehook.client.spool import SpoolWriter
from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from tests.conftest import ADMIN_TOKEN, BUCKET
from tests.fakes.http_server import FakeServer, Request, Response
from tests.lakehouse import create_iceberg_table, rows
from tests.support import ROOT, FakeLambdaContext, api_event, load_handler

pytestmark = pytest.mark.integration

ORDERS = "iceberg://lake/ods/orders"
SPOOL = f"s3://{BUCKET}/spool/payments"
RUN_MANIFEST = f"s3://{BUCKET}/manifests/r.g.original.json"


class Scene:
    """An Iceberg table, a sealed spool, and a dispatched trigger that pinned both."""

    def __init__(self, container: Container, tmp_path: Path) -> None:
        properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
        self.catalog: Catalog = load_catalog("lake", **properties)
        self.orders = create_iceberg_table(self.catalog, "ods.orders")
        self.orders.append(rows(1))
        self.first = self.orders.current_snapshot().snapshot_id
        registration = {
            "assetKey": ORDERS,
            "format": "iceberg",
            "source": {"catalog": "lake", "properties": properties, "table": "ods.orders"},
        }
        container.asset_registry.put_asset(AssetRegistration.model_validate(registration), 1)
        self.s3 = boto3.client("s3", region_name="us-east-1")
        self.s3.create_bucket(Bucket=BUCKET)
        self.spool_uri = f"s3://{BUCKET}/spool/payments/run-8.manifest.json"
        fields = [{"name": "id", "type": "long", "nullable": False}]
        with SpoolWriter(self.s3, manifest_uri=self.spool_uri, asset_key=SPOOL, snapshot_id=8, fields=fields) as w:
            w.upload_bytes(b"id\n1\n2\n", f"s3://{BUCKET}/spool/payments/run-8/part-0.csv", row_count=2)
        pins = (
            PinnedInput(asset_key=ORDERS, snapshot_id=self.first, schema_id=0),
            PinnedInput(asset_key=SPOOL, snapshot_id=8, manifest_uri=self.spool_uri),
        )
        self.original = Trigger(
            trigger_key=trigger_key("r", "g", pins, None, 0),
            rule_id="r",
            group_id="g",
            status=TriggerStatus.SUCCEEDED,
            inputs=pins,
            created_at=1,
            updated_at=2,
            manifest_uri=RUN_MANIFEST,
            target_run_id="run-1",
        )
        self.triggers_table = container.table
        self.triggers = DynamoDBTriggerStore(container.table)
        assert self.triggers.put_replay(self.original)
        self.app = build_app()

    def replay(self, dry_run: bool = False, key: str | None = None, request_key: str | None = None) -> tuple[int, Any]:
        return self.replay_answer(dry_run, key, request_key)[:2]

    def replay_answer(
        self, dry_run: bool = False, key: str | None = None, request_key: str | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        path = f"/triggers/{key or self.original.trigger_key}/replay"
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        if request_key is not None:
            headers["Idempotency-Key"] = request_key
        event = api_event("POST", path, headers=headers, query={"dryRun": "true"} if dry_run else None)
        answer = self.app.resolve(event, FakeLambdaContext())
        headers = {k: v[-1] for k, v in (answer.get("multiValueHeaders") or {}).items()}
        return answer["statusCode"], json.loads(answer["body"]), {**headers, **(answer.get("headers") or {})}


@pytest.fixture
def scene(container: Container, tmp_path: Path) -> Scene:
    return Scene(container, tmp_path)


def checklist(body: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(i["check"], i["assetKey"]): i["status"] for i in body["preflight"]["items"]}


def test_a_dry_run_answers_the_checklist_item_by_item_and_claims_nothing(scene: Scene) -> None:
    status, body = scene.replay(dry_run=True)
    assert status == 200, body
    assert body["dryRun"] is True and body["replay"] is None
    assert checklist(body) == {
        ("SNAPSHOT_RETAINED", ORDERS): "PASSED",
        ("SCHEMA_COMPATIBLE", ORDERS): "PASSED",
        ("MANIFEST_SEALED", SPOOL): "PASSED",
        ("SCHEMA_COMPATIBLE", SPOOL): "SKIPPED",
    }
    assert [t.trigger_key for t in scene.triggers.list_for_rule("r").items] == [scene.original.trigger_key]


def test_a_replay_claims_the_next_epoch_with_the_same_inputs_and_run_manifest(scene: Scene) -> None:
    status, body = scene.replay()
    assert status == 201, body
    replay = body["replay"]
    assert (replay["replayOf"], replay["replayEpoch"], replay["status"]) == (
        scene.original.trigger_key,
        1,
        "TRIGGERING",
    )
    assert replay["manifestUri"] == RUN_MANIFEST and replay["triggerKey"] != scene.original.trigger_key
    stored = scene.triggers.get(replay["triggerKey"])
    assert (
        stored is not None and stored.inputs == scene.original.inputs and stored.replay_of == scene.original.trigger_key
    )
    entry = DynamoDBTriggerLedger(scene.triggers_table).get(replay["triggerKey"])  # what the dispatcher reads
    assert entry is not None and entry.replay_of == scene.original.trigger_key
    assert entry.trigger.manifest_uri == RUN_MANIFEST
    # asked again: another replay, under the next epoch; both are on the record
    status, again = scene.replay()
    assert status == 201 and again["replay"]["replayEpoch"] == 2
    assert len(scene.triggers.list_for_rule("r").items) == 3


def test_replay_is_refused_with_the_checklist_when_a_pinned_snapshot_expired(scene: Scene) -> None:
    scene.orders.append(rows(2))
    scene.orders.maintenance.expire_snapshots().by_ids([scene.first]).commit()
    status, body = scene.replay()
    assert status == 409, body
    assert body["error"] == "REPLAY_REFUSED"
    items = {(i["check"], i["assetKey"]): i for i in body["preflight"]["items"]}
    assert items[("SNAPSHOT_RETAINED", ORDERS)]["status"] == "FAILED"
    assert "has expired" in items[("SNAPSHOT_RETAINED", ORDERS)]["reason"]
    assert items[("MANIFEST_SEALED", SPOOL)]["status"] == "PASSED"  # every item is answered
    assert len(scene.triggers.list_for_rule("r").items) == 1


def test_replay_is_refused_when_a_spooled_object_was_truncated(scene: Scene) -> None:
    scene.s3.put_object(Bucket=BUCKET, Key="spool/payments/run-8/part-0.csv", Body=b"id\n1\n")
    status, body = scene.replay(dry_run=True)
    assert status == 409
    (failed,) = [i for i in body["preflight"]["items"] if i["status"] == "FAILED"]
    assert failed["check"] == "MANIFEST_SEALED" and "truncated" in failed["reason"]


def test_an_unknown_trigger_is_404(scene: Scene) -> None:
    assert scene.replay(key="r.g.000000000000000000000000")[0] == 404


def test_the_replay_function_answers_its_sample_as_written(container: Container) -> None:
    # the sample names a trigger this fresh table has never claimed: the route is wired, the answer a 404
    sample = json.loads((ROOT / "events" / "replay_api" / "replay_dry_run.json").read_text())
    sample["headers"]["Authorization"] = sample["multiValueHeaders"]["Authorization"][0] = f"Bearer {ADMIN_TOKEN}"
    answer = load_handler("replay_api")(sample, FakeLambdaContext())
    assert answer["statusCode"] == 404 and "does not exist" in json.loads(answer["body"])["message"]


# --- request keys: a replay under an Idempotency-Key happens once ----------------------------------


def test_a_replay_repeated_under_its_idempotency_key_answers_the_first_answer_and_claims_nothing(scene: Scene) -> None:
    status, first, headers = scene.replay_answer(request_key="0b7c5a52-2f1e-4a4e-9d55-3c2f7f1d9e10")
    assert status == 201 and "Idempotent-Replayed" not in headers, first
    status, again, headers = scene.replay_answer(request_key="0b7c5a52-2f1e-4a4e-9d55-3c2f7f1d9e10")
    assert (status, again, headers.get("Idempotent-Replayed")) == (201, first, "true")
    assert len(scene.triggers.list_for_rule("r").items) == 2  # the original and one replay
    # a new key is a new request: another replay, under the next epoch
    status, other = scene.replay(request_key="second-request")
    assert status == 201 and other["replay"]["replayEpoch"] == 2
    # the record is the answer and the claim it made, kept 7 days (the table's TTL)
    item = scene.triggers_table.get_item(Key={"PK": "REQUEST#second-request", "SK": "REQUEST"})["Item"]
    assert item["triggerKey"] == other["replay"]["triggerKey"]
    assert 7 * 86_400 - 60 <= int(item["expiresAt"]) - time.time() <= 7 * 86_400


def test_an_idempotency_key_used_for_another_trigger_is_refused(scene: Scene) -> None:
    other = scene.original.model_copy(update={"trigger_key": "r.g.other.000000000000000000000000"})
    assert scene.triggers.put_replay(other)
    assert scene.replay(request_key="k-1")[0] == 201
    status, body = scene.replay(key=other.trigger_key, request_key="k-1")
    assert status == 409 and body["error"] == "IDEMPOTENCY_KEY_REUSED", body
    assert "k-1" in body["message"]
    assert [t.replay_of for t in scene.triggers.list_for_rule("r").items].count(other.trigger_key) == 0


@pytest.mark.parametrize("bad", ["", "has space", "x" * 129, "ünïcode", "a/b"])
def test_a_malformed_idempotency_key_is_a_400_naming_the_header(scene: Scene, bad: str) -> None:
    status, body = scene.replay(request_key=bad)
    assert status == 400, body
    assert "Idempotency-Key" in body["message"] + body.get("field", "")
    assert len(scene.triggers.list_for_rule("r").items) == 1


def test_a_dry_run_under_a_key_records_nothing(scene: Scene) -> None:
    assert scene.replay(dry_run=True, request_key="k-dry")[0] == 200
    status, body, headers = scene.replay_answer(request_key="k-dry")
    assert status == 201 and "Idempotent-Replayed" not in headers and body["replay"]["replayEpoch"] == 1


class ApiOverHttp(FakeServer):
    """The lakehook API app (on moto) behind a real HTTP server, for the CLI to talk to."""

    def __init__(self, app: Any) -> None:
        super().__init__()
        self._app = app

    def dispatch(self, request: Request) -> Response:
        body = request.json() if request.body else None
        event = api_event(request.method, request.path, body, headers=request.headers, query=request.query or None)
        answer = self._app.resolve(event, FakeLambdaContext())
        headers = {k: v[-1] for k, v in (answer.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
        return Response(answer["statusCode"], json.loads(answer["body"]), headers)


def test_the_cli_sends_a_new_request_key_each_time_unless_told_one(
    scene: Scene, capsys: pytest.CaptureFixture[str]
) -> None:
    from lakehook.cli import main

    with ApiOverHttp(scene.app) as api:
        base = ["--url", api.base_url, "--admin-token", ADMIN_TOKEN, "--output", "json", "replay"]
        assert main([*base, scene.original.trigger_key]) == 0
        assert main([*base, scene.original.trigger_key]) == 0  # a new command: a new request, a new replay
        assert main([*base, scene.original.trigger_key, "--request-key", "ticket-4711"]) == 0
        assert main([*base, scene.original.trigger_key, "--request-key", "ticket-4711"]) == 0  # the same request
        assert main([*base, scene.original.trigger_key, "--request-key", "not a key"]) == 1
    sent = [r.headers.get("idempotency-key") for r in api.requests]
    assert all(uuid.UUID(k) for k in sent[:2]) and sent[0] != sent[1]
    assert sent[2:] == ["ticket-4711", "ticket-4711", "not a key"]
    assert "Idempotency-Key" in capsys.readouterr().err  # the malformed key: the server's 400, said
    epochs = sorted(t.replay_epoch for t in scene.triggers.list_for_rule("r").items)
    assert epochs == [0, 1, 2, 3]  # the original, two replays without a key, one under ticket-4711


def test_the_cli_sends_a_replays_choices_and_shows_them_on_the_trigger(
    scene: Scene, capsys: pytest.CaptureFixture[str]
) -> None:
    from lakehook.cli import main

    with ApiOverHttp(scene.app) as api:
        base = ["--url", api.base_url, "--admin-token", ADMIN_TOKEN]
        replay = [*base, "--output", "json", "replay", scene.original.trigger_key, "--start-from", "load_dwd"]
        assert main([*replay, "--var", "full_refresh=true", "--var", "batch=5000", "--var", "note=a=b"]) == 0
        claimed = json.loads(capsys.readouterr().out)["replay"]
        assert claimed["startFrom"] == "load_dwd"
        assert claimed["variables"] == {"full_refresh": True, "batch": 5000, "note": "a=b"}
        assert main([*base, "trigger", claimed["triggerKey"]]) == 0
        shown = capsys.readouterr().out
        assert "starts from: load_dwd" in shown and "variable: full_refresh = true" in shown
        assert 'variable: note = "a=b"' in shown
        assert main([*replay, "--var", "no-value"]) != 0  # refused before anything is sent
        assert "NAME=VALUE" in capsys.readouterr().err
        assert main([*replay, "--var", "lakehook_x=1"]) == 1  # the server's 400, said
        assert "lakehook_" in capsys.readouterr().err
    sent = [r.json() for r in api.requests if r.path.endswith("/replay")]
    assert sent[0] == {"startFrom": "load_dwd", "variables": {"full_refresh": True, "batch": 5000, "note": "a=b"}}
    assert len(sent) == 2 and len(scene.triggers.list_for_rule("r").items) == 2
