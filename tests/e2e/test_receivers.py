"""Each receiver example in docs/examples/receivers/ against the real dispatch path of a local stack.

The secret is made with ``lakehook secret put``, the rule with ``lakehook apply``; events are pushed; the
dispatcher (webhook, Step Functions on moto, Airflow's REST API as a fake that answers as Airflow 3 does)
starts the run; the example reads the pinned snapshots and reports completion with its outlet, which the
stack records (the trigger's ``runStatus``, the outlet asset's state).
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from socketserver import ThreadingMixIn
from types import ModuleType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import boto3
import pytest
import yaml

from lakehook.client import PushClient
from lakehook.local.runtime import LocalStack
from lakehook.receiver import sign
from tests.e2e.cli_support import ROOT, cli_stack, run_cli, wait_for
from tests.fakes.airflow import FakeAirflow

EXAMPLES = ROOT / "docs" / "examples" / "receivers"


def inputs(rule_id: str) -> tuple[str, str]:
    """Each test's own two input tables, so a push for one test wakes no other test's rule."""
    return f"paimon://lake/ods_db/{rule_id}_orders", f"paimon://lake/ods_db/{rule_id}_payments"


def commit(producer: PushClient, rule_id: str, orders: int, payments: int) -> None:
    first, second = inputs(rule_id)
    producer.send(
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": first, "snapshotId": orders},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": second, "snapshotId": payments},
    )


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"receiver_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with cli_stack() as running:
        yield running


@pytest.fixture(scope="module")
def producer(stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> PushClient:
    config = tmp_path_factory.mktemp("producer") / "producer.yaml"
    config.write_text(yaml.safe_dump({"producers": [{"producerId": "ods", "assetKeyPrefixes": ["paimon://lake/"]}]}))
    applied = run_cli(["--output", "json", "apply", "-f", str(config)])
    assert applied.code == 0, applied.err
    secret = applied.json()["changes"][0]["secret"]
    return PushClient(stack.api_url, "ods", secret)


def put_secret(name: str, *value: str) -> dict[str, Any]:
    ran = run_cli(["--output", "json", "secret", "put", name, *(value or ("--generate",))])
    assert ran.code == 0, ran.out + ran.err
    data: dict[str, Any] = ran.json()
    return data


def apply_rule(tmp_path: Path, rule_id: str, target: dict[str, Any], outlet: str) -> None:
    rule = {
        "ruleId": rule_id,
        "groups": [{"groupId": "g", "members": [{"assetKey": key} for key in inputs(rule_id)]}],
        "target": target,
        "outlets": [outlet],
    }
    config = tmp_path / f"{rule_id}.yaml"
    config.write_text(yaml.safe_dump({"rules": [rule]}))
    applied = run_cli(["apply", "-f", str(config)])
    assert applied.code == 0, applied.err


def settled_trigger(rule_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        items = run_cli(["--output", "json", "triggers", "--rule", rule_id]).json()["items"]
        found = items[0] if items else {}
        return found if found.get("runStatus") and found.get("status") in ("SUCCEEDED", "FAILED") else None

    trigger = wait_for(done, seconds=30)
    assert trigger, run_cli(["triggers", "--rule", rule_id]).out
    return dict(trigger)


def latest_snapshot(asset: str) -> int | None:
    ran = run_cli(["--output", "json", "state", asset])
    return ran.json().get("latestSnapshotId") if ran.code == 0 else None


def test_the_wsgi_example_starts_once_and_reports_its_outlet_even_when_the_key_arrives_twice(
    stack: LocalStack, producer: PushClient, tmp_path: Path
) -> None:
    # GIVEN the WSGI example behind a first delivery that takes longer than the target's timeout
    module = example("wsgi_receiver")
    secret = put_secret("hooks/wsgi")
    first_delivery_may_finish = threading.Event()
    jobs: list[Any] = []

    def job(invocation: Any) -> int:
        jobs.append(invocation)
        return int(module.build_table(invocation))

    app, worker = module.make_app(secret["value"], stack.api_url, job)
    worker.start()
    deliveries: list[int] = []

    def slow_first(environ: dict[str, Any], start_response: Any) -> Any:
        deliveries.append(1)
        if len(deliveries) == 1:
            first_delivery_may_finish.wait(10)  # lakehook gives up after timeoutSeconds and sends the key again
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, slow_first, server_class=_ThreadingWSGIServer, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hooks/dwd"
        target = {"type": "webhook", "url": url, "secretRef": secret["secretRef"], "timeoutSeconds": 1}
        apply_rule(tmp_path, "wsgi_example", target, module.OUTLET)

        # WHEN both inputs commit
        commit(producer, "wsgi_example", 11, 31)
        assert wait_for(lambda: len(deliveries) >= 2, seconds=30), "lakehook did not deliver the key again"
        first_delivery_may_finish.set()

        # THEN the job ran once, on the pinned snapshots, and its outlet was recorded through its completion
        trigger = settled_trigger("wsgi_example")
    finally:
        first_delivery_may_finish.set()
        server.shutdown()
    assert trigger["status"] == "SUCCEEDED" and trigger["runStatus"] == "SUCCEEDED"
    assert trigger["attempts"] >= 2
    assert len(jobs) == 1
    (invocation,) = jobs
    orders, payments = inputs("wsgi_example")
    assert {p.asset_key: p.snapshot_id for p in invocation.inputs} == {orders: 11, payments: 31}
    assert invocation.trigger_key == trigger["triggerKey"] and invocation.manifest_uri == trigger["manifestUri"]
    assert wait_for(lambda: latest_snapshot(module.OUTLET) == 42)


def test_the_flask_example_deduplicates_through_dynamodb(
    stack: LocalStack, producer: PushClient, tmp_path: Path
) -> None:
    module = example("flask_receiver")
    from werkzeug.serving import make_server as werkzeug_server

    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=stack.endpoint_url,
        region_name=stack.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    dynamodb.create_table(
        TableName="receiver-dedup",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    store = module.DynamoDBDedupStore(dynamodb, "receiver-dedup")
    runs: list[Any] = []

    def run(invocation: Any) -> int:
        runs.append(invocation)
        return 7

    secret = put_secret("hooks/flask")
    app = module.create_app(secret["value"], stack.api_url, store, run)
    server = werkzeug_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hooks/gmv"
        apply_rule(
            tmp_path, "flask_example", {"type": "webhook", "url": url, "secretRef": secret["secretRef"]}, module.OUTLET
        )
        commit(producer, "flask_example", 12, 32)
        trigger = settled_trigger("flask_example")
        assert trigger["runStatus"] == "SUCCEEDED" and trigger["targetRunId"] == f"flask-{trigger['triggerKey']}"
        assert wait_for(lambda: latest_snapshot(module.OUTLET) == 7)

        # a second process with the same table: the key is known, the run is not started again
        again = module.create_app(
            secret["value"], stack.api_url, module.DynamoDBDedupStore(dynamodb, "receiver-dedup"), run
        )
        body = json.dumps(runs[0].raw, sort_keys=True, separators=(",", ":")).encode()
        headers = {
            "X-Lakehook-Signature": sign(secret["value"], body, int(time.time())),
            "Content-Type": "application/json",
        }
        answer = again.test_client().post("/hooks/gmv", data=body, headers=headers)
        assert answer.status_code == 200 and answer.get_json()["runId"] == f"flask-{trigger['triggerKey']}"
        assert len(runs) == 1
    finally:
        server.shutdown()


def test_the_airflow_example_reads_conf(stack: LocalStack, producer: PushClient, tmp_path: Path) -> None:
    module = example("airflow_dag")
    assert module.DAG is None  # Airflow is not installed here: the DAG part is skipped, the callable is plain
    credentials = put_secret("airflow/dwd", "--value", json.dumps({"username": "lakehook", "password": "pw"}))
    with FakeAirflow(users={"lakehook": "pw"}, dags={"dwd_trade_event_fact"}, slow_seconds=0.1) as airflow:
        target = {
            "type": "airflow",
            "baseUrl": airflow.base_url,
            "dagId": "dwd_trade_event_fact",
            "credentialsRef": credentials["secretRef"],
        }
        apply_rule(tmp_path, "airflow_example", target, module.OUTLET)
        commit(producer, "airflow_example", 13, 33)
        (run,) = wait_for(lambda: [r for (dag, _), r in airflow.dag_runs.items() if dag == "dwd_trade_event_fact"])
    completion = module.build_from_conf(run["conf"], stack.api_url)
    assert completion.status == "SUCCEEDED" and not completion.repeated
    trigger = settled_trigger("airflow_example")
    assert run["dag_run_id"] == f"lakehook__{trigger['triggerKey']}"
    assert trigger["runStatus"] == "SUCCEEDED"
    assert wait_for(lambda: latest_snapshot(module.OUTLET) == 46)
    # the same completion again is recorded once (first terminal status wins)
    assert module.build_from_conf(run["conf"], stack.api_url).repeated


def test_the_step_functions_example_reads_its_execution_input(
    stack: LocalStack, producer: PushClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = example("stepfunctions_task")
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=stack.region
    )
    iam = session.client("iam", endpoint_url=stack.endpoint_url)
    role = iam.create_role(RoleName="lakehook-dwd-sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    sfn = session.client("stepfunctions", endpoint_url=stack.endpoint_url)
    definition = (EXAMPLES / "stepfunctions_state_machine.json").read_text()
    arn = sfn.create_state_machine(name="lakehook-dwd", definition=definition, roleArn=role, type="STANDARD")[
        "stateMachineArn"
    ]
    apply_rule(tmp_path, "sfn_example", {"type": "stepfunctions", "stateMachineArn": arn}, module.OUTLET)
    commit(producer, "sfn_example", 14, 34)
    (execution,) = wait_for(lambda: sfn.list_executions(stateMachineArn=arn)["executions"])
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    monkeypatch.setenv("LAKEHOOK_URL", stack.api_url)
    answer = module.handler(json.loads(described["input"]))
    trigger = settled_trigger("sfn_example")
    assert answer == {"triggerKey": trigger["triggerKey"], "status": "SUCCEEDED", "outletSnapshotId": 48}
    assert trigger["targetRunId"] == execution["executionArn"]
    assert wait_for(lambda: latest_snapshot(module.OUTLET) == 48)
