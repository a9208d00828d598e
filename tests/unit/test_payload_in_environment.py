"""ECS and Batch carry the invocation payload as an environment variable's value, a string inside their request's
JSON, and their limits count that JSON (ECS: "A total of 8192 characters are allowed for overrides. This limit
includes the JSON formatting characters of the override structure"; Batch: a SubmitJob payload of at most 30 KiB).
Details that fit the payload's own size can pass that limit once its quotes are escaped: the fit counts them."""

from __future__ import annotations

import json

import boto3
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.targets.aws_runs import run_environment
from lakehook.adapters.targets.batch import BatchTargetClient
from lakehook.adapters.targets.databricks import KEY_PARAMETER, PAYLOAD_PARAMETER, DatabricksTargetClient
from lakehook.adapters.targets.ecs import EcsTargetClient, run_task_request
from lakehook.domain.dispatch import Invocation, RunManifest
from lakehook.domain.input_details import InputDetails
from lakehook.domain.targets import EcsTaskTarget, validate_target
from lakehook.domain.triggers import PinnedInput, Trigger, trigger_key
from tests.hypothesis_profiles import examples

T0 = 1_750_000_000_000
ECS_OVERRIDES = 8192
BATCH_REQUEST = 30 * 1024
ECS = validate_target({"type": "ecs", "cluster": "etl", "taskDefinition": "dwd", "containerName": "c" * 255})
ON_ECS = EcsTargetClient(boto3.client("ecs", region_name="us-east-1"))  # a client object: nothing is sent
ON_BATCH = BatchTargetClient(boto3.client("batch", region_name="us-east-1"))
ON_DATABRICKS = DatabricksTargetClient.__new__(DatabricksTargetClient)  # only its fit is used: nothing is sent
DATABRICKS_PARAMETERS = 10_000
TEXTS = st.sampled_from(["x", '"', "\\", "é", "😀", 'a"b'])


def invocation(sizes: list[int], text: str) -> Invocation:
    inputs = tuple(PinnedInput(asset_key=f"paimon://lake/ods/orders_{n}", snapshot_id=n) for n in range(len(sizes)))
    key = trigger_key("dwd", "g", inputs, None, 0)
    trigger = Trigger(trigger_key=key, rule_id="dwd", group_id="g", inputs=inputs, created_at=T0, updated_at=T0)
    details = [InputDetails(commit_kind="APPEND", payload={"text": text * size}) for size in sizes]
    manifest = RunManifest.for_trigger(trigger, details=details)
    return Invocation.of(trigger, manifest, f"s3://m/manifests/{key}.json", 10**9 - 1, completion_token="t" * 64)


def test_details_whose_quotes_would_push_ecs_overrides_past_8192_characters_go_to_the_manifest() -> None:
    """A payload of 7160 bytes fits ECS's 7 KiB unquoted; quoted, its overrides were 9368 characters (RunTask's
    InvalidParameterException: the run failed instead of starting with its details in the manifest)."""
    fitted = ON_ECS.fit(invocation([3000], '"'))
    assert isinstance(ECS, EcsTaskTarget)
    assert len(json.dumps(run_task_request(fitted, ECS)["overrides"], separators=(",", ":"))) <= ECS_OVERRIDES
    assert fitted.details_in_manifest


@settings(max_examples=examples(150), deadline=None)
@given(sizes=st.lists(st.integers(0, 9000), min_size=1, max_size=4), text=TEXTS)
def test_what_ecs_and_batch_are_sent_fits_their_request_limits(sizes: list[int], text: str) -> None:
    assert isinstance(ECS, EcsTaskTarget)
    ecs = ON_ECS.fit(invocation(sizes, text))
    if not ecs.details_in_manifest:
        overrides = run_task_request(ecs, ECS)["overrides"]
        assert len(json.dumps(overrides)) <= ECS_OVERRIDES
    batch = ON_BATCH.fit(invocation(sizes, text))
    if not batch.details_in_manifest:  # SubmitJob with a job name of 128 characters, queue and definition ARNs
        request = {"jobName": "j" * 128, "jobQueue": "q" * 256, "jobDefinition": "d" * 256}
        request["containerOverrides"] = {"environment": run_environment(batch)}
        assert len(json.dumps(request)) <= BATCH_REQUEST


@settings(max_examples=examples(150), deadline=None)
@given(sizes=st.lists(st.integers(0, 9000), min_size=1, max_size=4), text=TEXTS)
def test_what_databricks_run_now_is_sent_fits_its_parameters_bound(sizes: list[int], text: str) -> None:
    """run-now's job_parameters carry the payload as a JSON string: with its quotes escaped they stay within the
    Jobs API's 10,000 bytes, or the details go to the manifest."""
    fitted = ON_DATABRICKS.fit(invocation(sizes, text))
    if not fitted.details_in_manifest:
        payload = json.dumps(fitted.payload(), separators=(",", ":"), sort_keys=True)
        parameters = {KEY_PARAMETER: fitted.trigger_key, PAYLOAD_PARAMETER: payload}
        assert len(json.dumps(parameters).encode()) <= DATABRICKS_PARAMETERS
