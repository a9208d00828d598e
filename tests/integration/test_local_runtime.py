"""The local runtime drives functions from a template: streams with FilterCriteria, batches and
partial failures, schedules at an overridden rate, SQS queues, and S3 bucket notifications."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.local.filters import matches, matches_any
from lakehook.local.runtime import LocalStack
from lakehook.local.template import ApiRoute, Template, rate_seconds
from tests.waiting import wait_until

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorder" / "template.yaml"


def _calls(path: Path, function: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["event"] for r in rows if r["function"] == function]


def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    wait_until("condition not met", predicate, timeout)


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[LocalStack, Path]]:
    out = tmp_path / "calls.jsonl"
    with LocalStack(template=FIXTURE, port=0, poll_every=0.3, extra_env={"RECORDER_FILE": str(out)}) as stack:
        yield stack, out


def test_stream_records_are_filtered_batched_and_redelivered_from_the_failed_record(
    recorder: tuple[LocalStack, Path],
) -> None:
    stack, out = recorder
    table = boto3.resource("dynamodb", endpoint_url=stack.endpoint_url, region_name="us-east-1").Table(stack.table_name)
    table.put_item(Item={"PK": "a", "SK": "EVENT#1"})  # filtered out: not a state item
    table.put_item(Item={"PK": "a", "SK": "STATE", "n": 1})
    table.put_item(Item={"PK": "b", "SK": "STATE", "n": 2, "fail": True, "failTimes": 1})
    table.put_item(Item={"PK": "c", "SK": "STATE", "n": 3})
    assert stack.wait_idle(30)
    batches = _calls(out, "StreamConsumer")
    keys = [[r["dynamodb"]["Keys"]["PK"]["S"] for r in b["Records"]] for b in batches]
    assert all(len(k) <= 2 for k in keys)  # BatchSize 2
    assert "EVENT#1" not in json.dumps(batches)
    # a succeeded; b failed once and was redelivered (with what follows it), never a again
    flat = [k for batch in keys for k in batch]
    assert flat.count("a") == 1 and flat.count("b") == 2 and flat.count("c") >= 1
    assert flat.index("a") < flat.index("b") < len(flat) - 1 - flat[::-1].index("c")


def test_a_record_failing_past_the_retry_limit_goes_to_the_failure_destination(
    recorder: tuple[LocalStack, Path],
) -> None:
    stack, out = recorder
    table = boto3.resource("dynamodb", endpoint_url=stack.endpoint_url, region_name="us-east-1").Table(stack.table_name)
    table.put_item(Item={"PK": "poison", "SK": "STATE", "fail": True, "failTimes": 99})
    table.put_item(Item={"PK": "after", "SK": "STATE"})
    assert stack.wait_idle(30)
    flat = [r["dynamodb"]["Keys"]["PK"]["S"] for b in _calls(out, "StreamConsumer") for r in b["Records"]]
    assert flat.count("poison") == 3  # first delivery + MaximumRetryAttempts 2
    assert "after" in flat  # the shard moved on


def test_a_parallelization_factor_runs_lanes_concurrently_keeping_each_item_in_order(tmp_path: Path) -> None:
    """ParallelizationFactor 4: batches of different items run at once (in several execution environments),
    while each item's records arrive in order and never in two batches at the same time."""
    code = tmp_path / "fn"
    code.mkdir()
    (code / "app.py").write_text((FIXTURE.parent / "app.py").read_text())
    template = FIXTURE.read_text().replace("BatchSize: 2\n", "BatchSize: 2\n            ParallelizationFactor: 4\n", 1)
    assert "ParallelizationFactor: 4" in template
    (code / "template.yaml").write_text(template)
    out = tmp_path / "calls.jsonl"
    env = {"RECORDER_FILE": str(out), "RECORDER_SLEEP_SECONDS": "0.2"}
    with LocalStack(template=code / "template.yaml", port=0, extra_env=env) as stack:
        [consumer] = [f for f in stack.functions if f.spec.name == "StreamConsumer"]
        assert consumer.spec.streams[0].parallelization_factor == 4
        table = boto3.resource("dynamodb", endpoint_url=stack.endpoint_url, region_name="us-east-1").Table(
            stack.table_name
        )
        items, versions = 12, 4
        for version in range(versions):
            for item in range(items):
                table.put_item(Item={"PK": f"i{item}", "SK": "STATE", "n": version})
        assert stack.wait_idle(60)
    rows = [json.loads(line) for line in out.read_text().splitlines() if '"StreamConsumer"' in line]
    seen: dict[str, list[int]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        for record in row["event"]["Records"]:
            key = record["dynamodb"]["Keys"]["PK"]["S"]
            seen.setdefault(key, []).append(int(record["dynamodb"]["NewImage"]["n"]["N"]))
            spans.setdefault(key, []).append((row["began"], row["ended"]))
    assert seen == {f"i{item}": list(range(versions)) for item in range(items)}  # each once, in order
    for key, periods in spans.items():  # an item's batches one after the other, never two at once
        ordered = sorted(set(periods))
        assert all(a_end <= b_began for (_, a_end), (b_began, _) in itertools.pairwise(ordered)), key
    overlapping = [
        (a, b) for a in rows for b in rows if a is not b and a["began"] < b["ended"] and b["began"] < a["ended"]
    ]
    assert overlapping, "no two batches ran at the same time"
    assert len({row["pid"] for row in rows}) > 1  # concurrent batches run in environments of their own


def test_the_template_s_stream_mappings_declare_their_parallelization() -> None:
    specs = {
        spec.name: spec for spec in Template.load(Path(__file__).resolve().parents[2] / "template.yaml").functions()
    }
    assert specs["DispatcherFunction"].streams[0].parallelization_factor == 10
    assert specs["ResolverFunction"].streams[0].parallelization_factor == 1


def test_one_function_s_schedule_takes_its_own_rate(tmp_path: Path) -> None:
    out = tmp_path / "calls.jsonl"
    with LocalStack(
        template=FIXTURE, port=0, schedule_rates={"Ticker": 0.2}, extra_env={"RECORDER_FILE": str(out)}
    ) as stack:
        _wait_for(lambda: sum(1 for e in _calls(out, "Ticker") if e.get("detail-type") == "Scheduled Event") >= 3)
        assert stack.schedule_rates == {"Ticker": 0.2}  # the template says every 5 minutes
    with pytest.raises(ValueError, match="no scheduled function named"):
        LocalStack(template=FIXTURE, port=0, schedule_rates={"Nobody": 1.0}).start()


def test_schedules_fire_at_the_overridden_rate_and_queues_drain(recorder: tuple[LocalStack, Path]) -> None:
    stack, out = recorder
    _wait_for(lambda: sum(1 for e in _calls(out, "Ticker") if e.get("detail-type") == "Scheduled Event") >= 2)
    sqs = boto3.client("sqs", endpoint_url=stack.endpoint_url, region_name="us-east-1")
    url = stack.names["Work"]
    sqs.send_message(QueueUrl=url, MessageBody="job-1")
    _wait_for(lambda: any(r.get("body") == "job-1" for e in _calls(out, "Ticker") for r in e.get("Records", [])))
    _wait_for(
        lambda: (
            int(
                sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"][
                    "ApproximateNumberOfMessages"
                ]
            )
            == 0
        )
    )


def test_secrets_are_created_with_a_generated_value_and_passed_by_arn(recorder: tuple[LocalStack, Path]) -> None:
    stack, _ = recorder
    arn = stack.names["Key"]
    assert arn.startswith("arn:aws:secretsmanager:") and ":secret:internal/lakehook-local/key" in arn
    secrets = boto3.client("secretsmanager", endpoint_url=stack.endpoint_url, region_name="us-east-1")
    value = secrets.get_secret_value(SecretId=arn)["SecretString"]
    assert len(value) == 48 and value.isalnum()  # GenerateSecretString's options, honoured
    [ticker] = [f for f in stack.functions if f.spec.name == "Ticker"]
    assert ticker.spec.environment["KEY_SECRET"] == arn


def test_bucket_notifications_deliver_matching_new_objects_in_s3s_shape(recorder: tuple[LocalStack, Path]) -> None:
    stack, out = recorder
    bucket = "lakehook-local-drop-123456789012"  # the template's BucketName, resolved
    assert stack.names["Drop"] == bucket
    s3 = boto3.client("s3", endpoint_url=stack.endpoint_url, region_name="us-east-1")
    for key in ("in/a.json", "in/b.txt", "out/c.json", "in/with space.json"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"{}")

    def keys() -> list[str]:
        return [r["s3"]["object"]["key"] for e in _calls(out, "Watcher") for r in e["Records"]]

    _wait_for(lambda: len(keys()) >= 2)
    [watcher] = stack.watchers
    looked = watcher.looks
    _wait_for(lambda: watcher.looks >= looked + 2)  # two more complete looks: nothing is delivered twice
    assert sorted(keys()) == ["in/a.json", "in/with+space.json"]
    record = _calls(out, "Watcher")[0]["Records"][0]
    assert (record["eventSource"], record["eventName"]) == ("aws:s3", "ObjectCreated:Put")
    assert record["s3"]["bucket"]["name"] == bucket and record["s3"]["object"]["size"] == 2
    s3.put_object(Bucket=bucket, Key="in/a.json", Body=b'{"v": 2}')  # rewritten: a new ObjectCreated
    _wait_for(lambda: keys().count("in/a.json") == 2)


def test_project_template_routes_match_like_api_gateway() -> None:
    template = Template.load(Path(__file__).resolve().parents[2] / "template.yaml")
    routes = [r for f in template.functions() for r in f.routes]
    assert ApiRoute("PUT", "/producers/{producerId}", "AWS_IAM").match("PUT", "/producers/w-1") == {"producerId": "w-1"}
    assert ApiRoute("PUT", "/producers/{producerId}", "AWS_IAM").match("GET", "/producers/w-1") is None
    assert ApiRoute("GET", "/files/{proxy+}", "NONE").match("GET", "/files/a/b") == {"proxy": "a/b"}
    assert any(r.path == "/asset-events" and r.auth == "NONE" for r in routes)
    (verifier,) = [f for f in template.functions() if f.name == "SpoolVerifierFunction"]
    assert [(b.bucket, b.prefix, b.suffix) for b in verifier.buckets] == [
        ("ManifestBucket", "spool/", ".manifest.json")
    ]
    assert rate_seconds("rate(1 minute)") == 60 and rate_seconds("rate(5 minutes)") == 300
    with pytest.raises(ValueError, match="rate"):
        rate_seconds("cron(0 * * * ? *)")


@pytest.mark.parametrize(
    ("record", "pattern", "expected"),
    [
        ({"a": {"b": "x"}}, {"a": {"b": ["x", "y"]}}, True),
        ({"a": {"b": "z"}}, {"a": {"b": ["x", "y"]}}, False),
        ({"a": "STATE#1"}, {"a": [{"prefix": "STATE"}]}, True),
        ({"a": 1}, {"b": [{"exists": False}]}, True),
        ({"a": 1}, {"a": [{"exists": False}]}, False),
        ({"a": "x"}, {"a": [{"anything-but": ["x"]}]}, False),
        ({"a": "5"}, {"a": [{"numeric": [">", 1, "<=", 5]}]}, True),
        ({"eventName": "REMOVE"}, {"eventName": ["INSERT", "MODIFY"]}, False),
    ],
)
def test_filter_patterns(record: dict[str, Any], pattern: dict[str, Any], expected: bool) -> None:
    assert matches(record, pattern) is expected
    assert matches_any(record, []) is True
