"""CLI pieces without a stack: how apply compares, SigV4 for a deployed API, parsing and exit codes."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from lakehook.cli import main
from lakehook.cli_commands.api import ApiClient, CliError
from lakehook.cli_commands.apply import differences, load
from lakehook.cli_commands.commands import explain
from lakehook.cli_commands.output import captured, emit_items


def test_differences_name_declared_fields_only() -> None:
    current = {"policy": {"mode": "ALL_UPDATED", "minIntervalSeconds": 0, "backfill": "TRIGGER"}, "revision": 3}
    assert differences({"policy": {"mode": "ALL_UPDATED"}}, current) == []
    assert differences({"policy": {"minIntervalSeconds": 60}}, current) == ["policy.minIntervalSeconds"]
    assert differences({"groups": [{"groupId": "a"}]}, {"groups": [{"groupId": "a"}, {"groupId": "b"}]}) == ["groups"]
    # the file may say ISO 8601 where the API answers epoch milliseconds
    assert differences({"watermarkAtLeast": "2025-06-02T00:00:00Z"}, {"watermarkAtLeast": 1748822400000}) == []
    assert differences({"watermarkAtLeast": "2025-06-02T00:00:00Z"}, {"watermarkAtLeast": 1}) == ["watermarkAtLeast"]


def test_load_accepts_lists_or_mappings_and_refuses_typos(tmp_path: Path) -> None:
    config = tmp_path / "lakehook.yaml"
    config.write_text("aliases:\n  trade: {assetKeys: [custom://a/b]}\n")
    assert load(str(config))["aliases"] == [{"name": "trade", "assetKeys": ["custom://a/b"]}]
    config.write_text("rulez: []\n")
    with pytest.raises(CliError, match="unknown section"):
        load(str(config))


def test_https_without_a_token_is_sigv4_signed_for_execute_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    url = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"
    api = ApiClient(url=url)
    assert api.uses_sigv4 and not ApiClient(url=url, admin_token="t").uses_sigv4
    assert not ApiClient(url="http://127.0.0.1:3000").uses_sigv4
    headers = api._sigv4("GET", f"{url}/triggers?ruleId=r", None, {"Accept": "application/json"})
    credential = headers["Authorization"].split("Credential=", 1)[1].split(",", 1)[0]
    assert credential.startswith("AKIDEXAMPLE/") and credential.endswith("/eu-west-1/execute-api/aws4_request")
    assert "X-Amz-Date" in headers


def test_bad_usage_and_missing_secret(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKEHOOK_PRODUCER_SECRET", raising=False)
    code = main(["--url", "http://127.0.0.1:9", "push", "--producer", "p", "--type", "TAG_CREATED"])
    assert code == 1 and "--secret" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["triggers", "--status", "DONE"])
    assert usage.value.code == 2


def test_a_trigger_says_whether_it_retries_by_itself_or_needs_someone() -> None:
    from lakehook.cli_commands.commands import verdict

    retrying = {"triggerKey": "r.g.1", "status": "FAILED", "failure": "RETRYABLE", "nextAttemptAt": "10:42"}
    assert verdict(retrying) == "FAILED, RETRYABLE: lakehook tries again by itself at 10:42"
    final = {"triggerKey": "r.g.1", "status": "FAILED", "failure": "FINAL"}
    assert verdict(final) == "FAILED, FINAL: needs you. Fix the cause, then: lakehook retry r.g.1"


def test_secret_put_on_a_deployed_stack_goes_under_its_prefix_in_the_apis_region(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import boto3

    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)
    monkeypatch.delenv("LAKEHOOK_STACK", raising=False)
    url = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"
    base = ["--url", url, "--output", "json", "secret", "put", "targets/dwd"]

    assert main([*base, "--value", "v1"]) == 1
    assert "--stack" in json.loads(capsys.readouterr().out)["error"]["message"]

    assert main([*base, "--value", "v1", "--stack", "my-stack"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made == {"secretRef": "lakehook/my-stack/targets/dwd", "created": True, "local": False}
    monkeypatch.setenv("LAKEHOOK_STACK", "my-stack")
    assert main(["--url", url, "secret", "put", "lakehook/my-stack/targets/dwd", "--value", "v2"]) == 0
    assert "updated secret lakehook/my-stack/targets/dwd" in capsys.readouterr().out
    stored = boto3.client("secretsmanager", region_name="eu-west-1").get_secret_value(
        SecretId="lakehook/my-stack/targets/dwd"
    )
    assert stored["SecretString"] == "v2"
    assert main([*base, "--value", "x", "--stack", "bad stack!"]) == 1  # not a secret name


def test_secret_put_by_arn_updates_that_secret_and_never_creates_one(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import boto3

    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)
    client = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = client.create_secret(Name="lakehook/my-stack/targets/dwd", SecretString="v1")["ARN"]
    url = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"
    base = ["--url", url, "--output", "json", "secret", "put", "--stack", "my-stack", "--value", "v2"]
    assert main([*base, arn]) == 0
    assert json.loads(capsys.readouterr().out) == {"secretRef": arn, "created": False, "local": False}
    assert client.get_secret_value(SecretId="lakehook/my-stack/targets/dwd")["SecretString"] == "v2"
    missing = arn.replace("targets/dwd", "targets/none")
    assert main([*base, missing]) == 1
    assert "does not exist; create it by its name" in json.loads(capsys.readouterr().out)["error"]["message"]
    outside = client.create_secret(Name="elsewhere/dwd", SecretString="theirs")["ARN"]
    assert main([*base, outside]) == 1
    assert "outside lakehook/my-stack/*" in json.loads(capsys.readouterr().out)["error"]["message"]
    assert client.get_secret_value(SecretId="elsewhere/dwd")["SecretString"] == "theirs"
    assert len(client.list_secrets()["SecretList"]) == 2


@pytest.mark.parametrize(
    "name",
    [
        "producers/orders-writer",  # lakehook/my-stack/producers/…: where producers registered before kept theirs
        "/producers/orders-writer",
        "Producers/orders-writer",
        "lakehook/my-stack/PRODUCERS/orders-writer",
        "lakehook/my-stack/producers/orders-writer",
    ],
)
def test_secret_put_refuses_a_producer_signing_secrets_name(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    import json

    import boto3

    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)
    client = boto3.client("secretsmanager", region_name="eu-west-1")
    client.create_secret(Name="lakehook/my-stack/producers/orders-writer", SecretString="the producer's")
    url = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"
    argv = ["--url", url, "--output", "json", "secret", "put", name, "--value", "mine", "--stack", "my-stack"]
    assert main(argv) == 1
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert "producer signing secret" in message and "lakehook producers rotate" in message
    stored = client.get_secret_value(SecretId="lakehook/my-stack/producers/orders-writer")["SecretString"]
    assert stored == "the producer's"
    assert [s["Name"] for s in client.list_secrets()["SecretList"]] == ["lakehook/my-stack/producers/orders-writer"]


def test_a_listing_is_a_table_a_sentence_when_empty_or_the_items_as_json() -> None:
    def shown(output: str, items: list[dict[str, Any]]) -> str:
        stdout, stderr = io.StringIO(), io.StringIO()
        with captured(stdout, stderr):
            emit_items(output, items, ("ALIAS", "ASSETS"), lambda a: (a["name"], len(a["assetKeys"])), "no aliases")
        return stdout.getvalue()

    items = [{"name": "trade", "assetKeys": ["custom://a/b"]}, {"name": "orders_all", "assetKeys": []}]
    assert shown("text", items).splitlines() == ["ALIAS       ASSETS", "trade       1", "orders_all  0"]
    assert shown("text", []) == "no aliases\n"
    assert json.loads(shown("json", items)) == {"items": items}
    assert json.loads(shown("json", [])) == {"items": []}


def test_explain_prints_a_window_backlog_and_the_late_versions_skipped() -> None:
    class Answers:
        def get(self, path: str, query: Any = None) -> dict[str, Any]:
            assert path == "/rules/export/explain"
            backlog = {
                "pendingWindows": 69903406,
                "next": {"start": "2025-06-16T01:00:00Z", "end": "2025-06-16T02:00:00Z"},
                "nextAt": "2025-06-15T15:07:40Z",
            }
            skip = {
                "assetKey": "hudi://lake/ods/h",
                "snapshotId": 3,
                "reason": "version 3 arrived after 5 and will not run for rule export",
            }
            group = {"groupId": "g", "status": "CATCHING_UP", "members": [], "backlog": backlog, "skipped": [skip]}
            return {"ruleId": "export", "ready": False, "evaluatedAt": "now", "groups": [group]}

    stdout, stderr = io.StringIO(), io.StringIO()
    with captured(stdout, stderr):
        explain(Answers(), argparse.Namespace(rule="export", output="text"))  # type: ignore[arg-type]
    lines = stdout.getvalue().splitlines()
    assert (
        "    backlog: 69903406 windows pending, next [2025-06-16T01:00:00Z, 2025-06-16T02:00:00Z) at "
        "2025-06-15T15:07:40Z" in lines
    )
    assert "    skipped: hudi://lake/ods/h@3: version 3 arrived after 5 and will not run for rule export" in lines


class RecordingApi(ApiClient):
    """Records each request's method and path instead of sending it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: list[tuple[str, str, dict[str, str]]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        self.sent.append((method, path, kwargs.get("headers") or {}))
        return 200, {"triggerKey": "r.g.1", "status": "SUCCEEDED", "results": []}


@pytest.mark.parametrize(
    ("url", "token", "admin_token", "path"),
    [
        # a deployed stack with IAM credentials: the route's IAM variant, the one API Gateway passes the identity
        ("https://abc123.execute-api.eu-west-1.amazonaws.com/prod", None, None, "/iam/runs/r.g.1/complete"),
        # the run's own completion token: the route without an authorizer
        ("https://abc123.execute-api.eu-west-1.amazonaws.com/prod", "tok", None, "/runs/r.g.1/complete"),
        # the local stack's admin token
        ("http://127.0.0.1:3000", None, "local-admin", "/runs/r.g.1/complete"),
    ],
)
def test_complete_sends_iam_credentials_to_the_iam_variant(
    url: str, token: str | None, admin_token: str | None, path: str
) -> None:
    from lakehook.cli_commands import manage

    api = RecordingApi(url=url, admin_token=admin_token)
    args = argparse.Namespace(key="r.g.1", status="SUCCEEDED", outlets=[], token=token, output="json")
    with captured(io.StringIO(), io.StringIO()):
        assert manage.complete(api, args) == 0
    assert [(m, p) for m, p, _ in api.sent] == [("POST", path)]


@pytest.mark.parametrize(
    ("url", "admin_token", "path"),
    [
        # GET and PUT /watermarks take a watcher's producer signature, so on AWS they have no IAM authorizer
        ("https://abc123.execute-api.eu-west-1.amazonaws.com/prod", None, "/iam/watermarks"),
        ("http://127.0.0.1:3000", "local-admin", "/watermarks"),
    ],
)
def test_watermarks_send_iam_credentials_to_the_iam_variant(url: str, admin_token: str | None, path: str) -> None:
    from lakehook.cli_commands import manage

    api = RecordingApi(url=url, admin_token=admin_token)
    where = {"namespace": "n", "asset": "custom://a/b", "key": "k", "output": "json"}
    with captured(io.StringIO(), io.StringIO()):
        assert manage.watermarks_get(api, argparse.Namespace(**where)) == 0
        assert manage.watermarks_put(api, argparse.Namespace(**where, value="1", expected_version=None)) == 0
        assert manage.watermarks_delete(api, argparse.Namespace(**where, expected_version=None)) == 0
    # DELETE takes management credentials only: its method keeps the IAM authorizer
    assert [(m, p) for m, p, _ in api.sent] == [("GET", path), ("PUT", path), ("DELETE", "/watermarks")]


class Stack(ApiClient):
    """Answers GETs from a dict of path → body (404 otherwise) and records every PUT."""

    def __init__(self, stored: dict[str, Any]) -> None:
        super().__init__(url="http://127.0.0.1:9", admin_token="t")
        self.stored = stored
        self.puts: list[tuple[str, Any, Any]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        if method == "GET":
            return (200, self.stored[path]) if path in self.stored else (404, None)
        self.puts.append((path, kwargs.get("query"), kwargs.get("body")))
        return 200, {}


A_KEY, B_KEY = "paimon://lake/ods/a", "paimon://lake/ods/b"
ALIAS_RULE = {
    "ruleId": "dws",
    "groups": [{"groupId": "g", "members": [{"alias": "trade", "condition": {"minSnapshotId": 5}}]}],
}


def test_apply_compares_a_rule_naming_an_alias_as_the_api_stores_it() -> None:
    from lakehook.cli_commands.apply import plan

    def stored(*keys: str) -> dict[str, Any]:
        condition = {"snapshotRequired": True, "minSnapshotId": 5}
        members = [{"assetKey": k, "alias": "trade", "condition": condition} for k in keys]
        return {"ruleId": "dws", "groups": [{"groupId": "g", "members": members}], "revision": 1}

    objects: dict[str, list[dict[str, Any]]] = {"producers": [], "assets": [], "aliases": [], "rules": [ALIAS_RULE]}
    stack = Stack({"/aliases/trade": {"name": "trade", "assetKeys": [A_KEY, B_KEY]}, "/rules/dws": stored(A_KEY)})
    (change,) = plan(stack, objects)
    assert (change.action, change.changed) == ("update", ["groups.0.members"])  # the alias gained B since
    stack.stored["/rules/dws"] = stored(A_KEY, B_KEY)
    (change,) = plan(stack, objects)
    assert change.action == "unchanged" and change.body == ALIAS_RULE  # a PUT would still name the alias


def test_apply_dry_runs_a_rule_naming_an_alias_the_file_declares_before_the_alias_exists() -> None:
    from lakehook.cli_commands.apply import plan, validate

    stack = Stack({})  # neither the alias nor the rule exists yet
    aliases = [{"name": "trade", "assetKeys": [A_KEY]}]
    changes = plan(stack, {"producers": [], "assets": [], "aliases": aliases, "rules": [ALIAS_RULE]})
    assert [c.action for c in changes] == ["create", "create"]
    assert validate(stack, changes) == []
    (_, query, checked) = stack.puts[-1]
    assert query == {"dryRun": True}
    assert checked["groups"][0]["members"] == [{"assetKey": A_KEY, "condition": {"minSnapshotId": 5}}]
    assert changes[-1].body == ALIAS_RULE


def test_explain_prints_one_line_per_partition_and_how_many_are_pending() -> None:
    class Answers:
        def get(self, path: str, query: Any = None) -> dict[str, Any]:
            waiting = "dt=2026-12-01: waiting for paimon://lake/ods/payments (no data commit has touched it yet)"
            lines = [
                {"partition": "dt=2026-12-02", "status": "READY", "reason": "dt=2026-12-02: ready"},
                {"partition": "dt=2026-12-01", "status": "WAITING_FOR_PARTITION", "reason": waiting},
            ]
            group = {"groupId": "g", "status": "READY", "members": [], "partitions": lines, "pendingPartitions": 7}
            cut = {"assetKey": "paimon://lake/ods/orders", "snapshotId": 3, "touched": 1300, "evaluated": 1000}
            group["partialCommits"] = [cut]
            return {"ruleId": "daily", "ready": True, "evaluatedAt": "now", "groups": [group]}

    stdout, stderr = io.StringIO(), io.StringIO()
    with captured(stdout, stderr):
        explain(Answers(), argparse.Namespace(rule="daily", output="text"))  # type: ignore[arg-type]
    lines = stdout.getvalue().splitlines()
    assert "    partitions: 7 pending, 2 shown" in lines
    assert (
        "      paimon://lake/ods/orders@3 touched 1300 partitions: evaluated its first 1000 here, the rest by the "
        "resolver" in lines
    )
    assert (
        "      WAITING_FOR_PARTITION  dt=2026-12-01: waiting for paimon://lake/ods/payments (no data commit has "
        "touched it yet)" in lines
    )


def test_evaluate_force_partition_sends_the_partition_and_group_of_one_manual_run() -> None:
    from lakehook.cli import build_parser
    from lakehook.cli_commands import manage

    class Sent(ApiClient):
        def __init__(self) -> None:
            super().__init__(url="http://127.0.0.1:3000", admin_token="local-admin")
            self.bodies: list[Any] = []

        def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
            self.bodies.append((method, path, kwargs.get("body")))
            return 200, {"claimed": ["daily.g.manual-1.abc"], "manual": True, "ready": False, "groups": []}

    api = Sent()
    args = build_parser().parse_args(
        ["evaluate", "daily", "--force", "--partition", "dt=2026-12-01", "--group", "g", "--output", "json"]
    )
    with captured(io.StringIO(), io.StringIO()):
        assert manage.evaluate(api, args) == 0
    plain = build_parser().parse_args(["evaluate", "daily", "--output", "json"])
    with captured(io.StringIO(), io.StringIO()):
        assert manage.evaluate(api, plain) == 0
    assert api.bodies == [
        ("POST", "/rules/daily/evaluate", {"force": True, "groupId": "g", "partition": "dt=2026-12-01"}),
        ("POST", "/rules/daily/evaluate", None),
    ]


def test_assets_events_sends_the_range_it_was_given_and_nothing_it_was_not() -> None:
    from lakehook.cli import build_parser
    from lakehook.cli_commands import manage

    class Queries(ApiClient):
        def __init__(self) -> None:
            super().__init__(url="http://127.0.0.1:3000", admin_token="local-admin")
            self.queries: list[dict[str, Any]] = []

        def get(self, path: str, query: dict[str, Any] | None = None, **_: Any) -> Any:
            self.queries.append({k: v for k, v in (query or {}).items() if v is not None})
            return {"items": [], "nextToken": None}

    asset = "paimon://lake/ods_db/orders"
    for argv, sent in (
        (["assets", "events", asset, "--from-version", "3", "--to-version", "9"], {"fromVersion": 3, "toVersion": 9}),
        (["assets", "events", asset, "--start", "2026-12-01T00:00:00Z"], {"start": "2026-12-01T00:00:00Z"}),
        (["assets", "events", asset], {}),
    ):
        api = Queries()
        args = build_parser().parse_args(argv)
        with captured(io.StringIO(), io.StringIO()):
            assert manage.assets_events(api, args) == 0
        assert api.queries == [{"assetKey": asset, "limit": 50, **sent}]
