"""The ECS task target on in-process moto (Fargate, which needs no container instance): one task per key,
clientToken from the key, the key and payload as the container's environment overrides, and the task looked up by
its key-derived startedBy before any retry.

moto starts a new task for a repeated clientToken (ECS answers the first task), so here a re-send is kept from
starting a second task by the dispatcher's look-up before it, which is what the crash test proves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lakehook.adapters.targets.aws_runs import KEY_VARIABLE, PAYLOAD_VARIABLE, client_token, run_name
from lakehook.adapters.targets.ecs import EcsTargetClient, run_task_request
from lakehook.domain.dispatch import OutcomeKind
from lakehook.domain.targets import EcsTaskTarget, validate_target
from lakehook.domain.triggers import TriggerStatus
from lakehook.receiver import from_environment
from lakehook.usecases.dispatch import DispatchStatus
from tests.aws_dispatch import MotoDispatch
from tests.input_details import assert_details, detailed
from tests.integration.test_targets_aws import REGION, T0, claim, invocation

CLUSTER = "lakehook-etl"
FAMILY = "lakehook-dwd"
NETWORK = {"subnets": ["subnet-0123456789abcdef0"], "securityGroups": ["sg-0123456789abcdef0"]}
TARGET: dict[str, Any] = {  # and the network moto made (the fixture)
    "type": "ecs",
    "cluster": CLUSTER,
    "taskDefinition": FAMILY,
    "containerName": "dwd",
    "launchType": "FARGATE",
}


@pytest.fixture
def ecs() -> Iterator[Any]:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # a task's interface has a DNS name
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="lakehook-dwd", Description="dwd", VpcId=vpc)["GroupId"]
        TARGET["networkConfiguration"] = {"awsvpcConfiguration": {"subnets": [subnet], "securityGroups": [group]}}
        client = boto3.client("ecs", region_name=REGION)
        client.create_cluster(clusterName=CLUSTER)
        client.register_task_definition(
            family=FAMILY,
            requiresCompatibilities=["FARGATE"],
            networkMode="awsvpc",
            cpu="256",
            memory="512",
            containerDefinitions=[{"name": "dwd", "image": "dwd:1", "essential": True, "cpu": 256, "memory": 512}],
        )
        yield client


def config(**change: Any) -> EcsTaskTarget:
    target = validate_target({**TARGET, **change})
    assert isinstance(target, EcsTaskTarget)
    return target


def test_ecs_runs_one_task_with_the_key_token_and_the_payload_in_its_environment(ecs: Any) -> None:
    plugin = EcsTargetClient(ecs)
    trigger = claim()
    assert plugin.find_run(trigger.trigger_key, config(), T0) is None
    started = plugin.start(invocation(trigger), config())
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    [task] = ecs.describe_tasks(cluster=CLUSTER, tasks=[started.run_id])["tasks"]
    assert task["startedBy"] == run_name(trigger.trigger_key)
    [override] = task["overrides"]["containerOverrides"]
    environment = {e["name"]: e["value"] for e in override["environment"]}
    assert override["name"] == "dwd" and environment[KEY_VARIABLE] == trigger.trigger_key
    assert json.loads(environment[PAYLOAD_VARIABLE]) == invocation(trigger).payload()
    assert from_environment(environment).trigger_key == trigger.trigger_key
    assert plugin.find_run(trigger.trigger_key, config(), T0) == started.run_id
    assert plugin.find_run(claim(snapshot=1002).trigger_key, config(), T0) is None


def test_every_attempt_sends_the_same_client_token_and_network() -> None:
    trigger = claim()
    network = {"networkConfiguration": {"awsvpcConfiguration": NETWORK}}
    first, second = (run_task_request(invocation(trigger, attempt=n), config(**network)) for n in (1, 2))
    assert first["clientToken"] == second["clientToken"] == client_token(trigger.trigger_key)
    assert first["networkConfiguration"] == {"awsvpcConfiguration": {**NETWORK, "assignPublicIp": "DISABLED"}}
    assert run_task_request(invocation(claim(snapshot=1002)), config())["clientToken"] != first["clientToken"]


def test_ecs_run_status_frees_the_slot_once_the_task_stopped_and_a_stopped_task_is_still_found(ecs: Any) -> None:
    plugin = EcsTargetClient(ecs)
    trigger = claim()
    run_id = plugin.start(invocation(trigger), config()).run_id
    assert run_id is not None
    running = plugin.run_state(run_id, config())
    assert running is not None and running.waiting and running.detail is not None
    ecs.stop_task(cluster=CLUSTER, task=run_id, reason="done")
    stopped = plugin.run_state(run_id, config())
    assert stopped is not None and (stopped.state, stopped.waiting) == ("stopped", False)
    assert plugin.find_run(trigger.trigger_key, config(), T0) == run_id
    missing = run_id.rsplit("/", 1)[0] + "/00000000000000000000000000000000"
    assert plugin.run_state(missing, config()) is None


def test_ecs_a_missing_cluster_or_task_definition_is_fatal(ecs: Any) -> None:
    plugin = EcsTargetClient(ecs)
    for bad in ({"cluster": "lakehook-none"}, {"taskDefinition": "lakehook-none"}):
        refused = plugin.start(invocation(claim()), config(**bad))
        assert refused.kind is OutcomeKind.FATAL and refused.code is not None and refused.code.startswith("aws_"), bad


def test_dispatch_on_ecs_confirms_a_task_started_before_a_crash(ecs: Any) -> None:
    on_ecs = MotoDispatch(claim(), TARGET, REGION, [T0])
    started, _ = on_ecs.crash_after_start()
    assert started.kind is OutcomeKind.STARTED
    result = on_ecs.redrive_after_the_lease()
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == started.run_id
    assert len(ecs.list_tasks(cluster=CLUSTER)["taskArns"]) == 1
    stored = on_ecs.claims.get(on_ecs.trigger.trigger_key)
    assert stored is not None and stored.status is TriggerStatus.SUCCEEDED and stored.target_run_id == started.run_id


def test_ecs_receives_the_inputs_details_in_its_environment(ecs: Any) -> None:
    plugin = EcsTargetClient(ecs)
    started = plugin.start(detailed(claim(), limit=plugin.payload_limit), config())
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    [task] = ecs.describe_tasks(cluster=CLUSTER, tasks=[started.run_id])["tasks"]
    [override] = task["overrides"]["containerOverrides"]
    assert_details(from_environment({e["name"]: e["value"] for e in override["environment"]}))
