"""template.yaml as operators rely on it: timeouts below the dispatch lease, a dashboard of metrics the code
really emits, a log group with a retention per function, a concurrency reservation per family, a dead-letter
queue for every asynchronously invoked function, and a reason for every security-scan exception."""

from __future__ import annotations

import ast
import inspect
import json
import re
from typing import Any

from lakehook.domain.targets import MAX_TIMEOUT_SECONDS
from lakehook.observability import NAMESPACE
from lakehook.settings import Settings
from lakehook.usecases.dispatch import RedriveTriggers
from tests.support import ROOT, TEMPLATE

FUNCTIONS = TEMPLATE.of_type("AWS::Serverless::Function")
GLOBALS = TEMPLATE.document["Globals"]["Function"]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text()


def timeout_of(name: str) -> int:
    return int(FUNCTIONS[name]["Properties"].get("Timeout", GLOBALS.get("Timeout", 3)))


def environment_of(name: str) -> dict[str, Any]:
    own = FUNCTIONS[name]["Properties"].get("Environment", {}).get("Variables", {})
    return {**GLOBALS["Environment"]["Variables"], **own}


def lease_seconds(name: str) -> int:
    """The lease the function runs with: its LAKEHOOK_DISPATCH_LEASE_SECONDS, else the settings' default."""
    default = Settings.model_fields["dispatch_lease_seconds"].default
    return int(environment_of(name).get("LAKEHOOK_DISPATCH_LEASE_SECONDS", default))


# --- the dispatch lease -----------------------------------------------------------------------------------


def test_every_function_that_takes_a_dispatch_lease_times_out_before_the_lease_ends() -> None:
    # usecases/dispatch.py: the lease must outlast the function's timeout, so it only expires once its
    # holder is surely dead (else a second dispatcher could start a run the first is still starting).
    for name in ("DispatcherFunction", "TriggerRedriveFunction"):
        assert timeout_of(name) < lease_seconds(name), name


def test_a_redrive_pass_stops_starting_redrives_in_time_for_the_last_one_to_finish() -> None:
    budget_s = inspect.signature(RedriveTriggers).parameters["budget_ms"].default / 1000
    # The last re-drive started asks the target whether the run exists, starts it and reads it back: about
    # three target calls, each bounded by a target's longest timeout, must fit after the budget.
    assert budget_s + 3 * MAX_TIMEOUT_SECONDS < timeout_of("TriggerRedriveFunction")


# --- the dashboard ----------------------------------------------------------------------------------------


METRIC = r"lakehouse_[a-z_]+"


def metric_names_in_code() -> set[str]:
    """Every metric name the code spells (string literals ``lakehouse_*`` in src/shared/lakehook)."""
    names: set[str] = set()
    for path in (ROOT / "src" / "shared" / "lakehook").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(METRIC, node.value):
                names.add(node.value)
    return names


def dashboard() -> dict[str, Any]:
    (resource,) = TEMPLATE.of_type("AWS::CloudWatch::Dashboard").values()
    body = resource["Properties"]["DashboardBody"]["Fn::Sub"]
    return json.loads(re.sub(r"\$\{[^}]+\}", "resolved", body))  # type: ignore[no-any-return]


QUERY = re.compile(r"^SELECT (?:SUM|AVG|MAX|MIN|COUNT)\((\w+)\) FROM (\w+)(?: GROUP BY \w+)?$")


def queried_metrics(expressions: list[str]) -> set[tuple[str, str]]:
    found = set()
    for expression in expressions:
        match = QUERY.match(expression)
        assert match, f"not a Metrics Insights query this test reads: {expression}"
        found.add((match.group(2), match.group(1)))
    return found


def test_every_metric_the_dashboard_names_is_one_the_code_emits_in_its_namespace() -> None:
    expressions, namespaced = [], []
    for widget in dashboard()["widgets"]:
        for row in widget["properties"]["metrics"]:
            if isinstance(row[0], dict):
                expressions.append(row[0]["expression"])
            else:
                namespaced.append(row)
    queried = queried_metrics(expressions)
    assert {namespace for namespace, _ in queried} == {NAMESPACE}
    assert {name for _, name in queried} <= metric_names_in_code()
    # The functions publish under the namespace the dashboard reads.
    assert GLOBALS["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == NAMESPACE
    # Rows that are not queries are AWS's own metrics.
    assert {row[0] for row in namespaced} <= {"AWS/Lambda", "AWS/SQS"}
    assert len(queried) >= 12


def test_the_dashboard_shows_what_the_issue_asks_for() -> None:
    titles = " | ".join(w["properties"]["title"] for w in dashboard()["widgets"]).lower()
    for topic in ("events in by status", "poll errors", "triggers by status", "dispatch latency",
                  "resolver errors", "rules waiting", "queue depths"):  # fmt: skip
        assert topic in titles, topic
    queued = {row[3] for w in dashboard()["widgets"] for row in w["properties"]["metrics"] if row[0] == "AWS/SQS"}
    assert len(queued) == 1  # every queue name was a ${...} reference, resolved above
    depth_rows = next(w for w in dashboard()["widgets"] if w["properties"]["title"] == "Queue depths")
    assert {row[4]["label"] for row in depth_rows["properties"]["metrics"][:-1]} == set(TEMPLATE.queues())


def test_every_alarm_on_a_lakehook_metric_reads_one_the_code_emits() -> None:
    expressions = [
        m["Expression"]
        for alarm in TEMPLATE.of_type("AWS::CloudWatch::Alarm").values()
        for m in alarm["Properties"].get("Metrics", [])
        if "Expression" in m
    ]
    queried = queried_metrics(expressions)
    assert queried and {name for _, name in queried} <= metric_names_in_code()
    assert {namespace for namespace, _ in queried} == {NAMESPACE}


# --- logs, concurrency, failures ---------------------------------------------------------------------------


def test_every_function_has_its_own_log_group_with_the_retention_parameter() -> None:
    groups = {
        json.dumps(g["Properties"]["LogGroupName"]): g["Properties"]
        for g in TEMPLATE.of_type("AWS::Logs::LogGroup").values()
    }
    for name in FUNCTIONS:
        properties = groups[json.dumps({"Fn::Sub": f"/aws/lambda/${{{name}}}"})]
        assert properties["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert all(g["RetentionInDays"] == {"Ref": "LogRetentionDays"} for g in groups.values())


def test_every_function_reserves_concurrency_from_its_familys_parameter() -> None:
    families = {}
    for name, resource in FUNCTIONS.items():
        condition, value, otherwise = resource["Properties"]["ReservedConcurrentExecutions"]["Fn::If"]
        parameter = value["Ref"]
        assert TEMPLATE.document["Conditions"][condition] == {"Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, 0]}]}
        assert otherwise == {"Ref": "AWS::NoValue"}
        families.setdefault(parameter, []).append(name)
    assert set(families) == {
        "ApiReservedConcurrency",
        "StreamReservedConcurrency",
        "QueueReservedConcurrency",
        "ScheduledReservedConcurrency",
    }
    assert sorted(families["StreamReservedConcurrency"]) == ["DispatcherFunction", "ResolverFunction"]


def test_every_asynchronously_invoked_function_has_a_dead_letter_queue() -> None:
    asynchronous = [
        name
        for name, resource in FUNCTIONS.items()
        if any(
            e["Type"] in ("Schedule", "ScheduleV2", "S3", "EventBridgeRule")
            for e in resource["Properties"].get("Events", {}).values()
        )
    ]
    assert sorted(asynchronous) == [
        "BusIngestFunction",
        "DeferralSweepFunction",
        "PollPlannerFunction",
        "SpoolVerifierFunction",
        "TriggerRedriveFunction",
    ]
    for name in asynchronous:
        queue = FUNCTIONS[name]["Properties"]["DeadLetterQueue"]
        assert queue["Type"] == "SQS" and queue["TargetArn"]["Fn::GetAtt"][0] in TEMPLATE.queues()


def test_every_queue_is_encrypted_with_kms_and_the_optional_customer_key() -> None:
    for name in TEMPLATE.queues():
        key = TEMPLATE.resources[name]["Properties"]["KmsMasterKeyId"]
        assert key == {"Fn::If": ["UseCustomerKey", {"Ref": "KmsKeyArn"}, "alias/aws/sqs"]}, name


def scan_skips() -> list[str]:
    """Every check a resource of the template skips, once per resource (as Checkov counts them)."""
    return [
        skip["id"]
        for resource in TEMPLATE.resources.values()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]


def test_every_security_scan_exception_says_why() -> None:
    skipped = 0
    for name, resource in TEMPLATE.resources.items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert re.fullmatch(r"CKV_AWS_\d+", skip["id"]), (name, skip)
            assert len(skip.get("comment", "").split()) >= 5, f"{name} skips {skip['id']} without a reason"
            skipped += 1
    assert skipped > 0


def test_the_deploy_guide_states_the_scans_skips_as_the_template_has_them() -> None:
    """docs/deploy.md's count of skipped checks and its table of them are the template's, so they cannot drift
    (the passed count depends on Checkov's catalogue: the guide leaves it to `make scan`)."""
    security = DEPLOY.split("## Security scan", 1)[1].split("\n## ", 1)[0]
    counts = re.findall(r"After: 0 failed, and (\d+) skipped with a reason", security)
    assert counts == [str(len(scan_skips()))], counts
    tabled = set(re.findall(r"^\| `(CKV_AWS_\d+)`", security, re.MULTILINE))
    assert tabled == set(scan_skips())
    assert not re.search(r"After:[^.]*\d+ passed", security)  # no hard-coded figure of Checkov's own


# --- the RFC's alarms (seed 000 section 6.3) ---------------------------------------------------------------

OPERATIONS = (ROOT / "docs" / "operations.md").read_text()
# alarm: (statistic, the RFC's metric, the RFC's threshold, the period it counts over, the threshold's parameter)
RFC_ALARMS = {
    "StateLagAlarm": ("MAX", "lakehouse_asset_state_lag_seconds", 3600, 300, "StateLagAlarmSeconds"),
    "WatermarkLagAlarm": ("MAX", "lakehouse_asset_watermark_lag_seconds", 600, 300, "WatermarkLagAlarmSeconds"),
    "DispatchFailureAlarm": ("SUM", "lakehouse_asset_trigger_failed_total", 3, 300, None),
    "QualityBlockedAlarm": (
        "MAX",
        "lakehouse_asset_dependency_blocked_by_quality_seconds",
        1800,
        300,
        "QualityBlockedAlarmSeconds",
    ),
    "CompensationMissedAlarm": (
        "SUM",
        "lakehouse_asset_compensation_missed_events",
        10,
        3600,
        "CompensationMissedAlarmPerHour",
    ),
}


def threshold_of(properties: dict[str, Any]) -> tuple[float, str | None]:
    """The alarm's threshold (a parameter's default) and the parameter it comes from, if any."""
    threshold = properties["Threshold"]
    if isinstance(threshold, dict):
        parameter = threshold["Ref"]
        return float(TEMPLATE.document["Parameters"][parameter]["Default"]), parameter
    return float(threshold), None


def test_every_alarm_the_rfc_lists_reads_its_metric_with_its_threshold() -> None:
    from lakehook.observability import MetricName
    from lakehook.usecases.dispatch import FAILED_METRIC
    from lakehook.usecases.poll import MetricName as PollMetric

    emitted = {MetricName.STATE_LAG, MetricName.WATERMARK_LAG, MetricName.BLOCKED_BY_QUALITY}
    emitted |= {FAILED_METRIC, PollMetric.COMPENSATION_MISSED}
    alarms = TEMPLATE.of_type("AWS::CloudWatch::Alarm")
    for name, (statistic, metric, threshold, period, parameter) in RFC_ALARMS.items():
        properties = alarms[name]["Properties"]
        (query,) = properties["Metrics"]
        assert query["Expression"] == f"SELECT {statistic}({metric}) FROM {NAMESPACE}", name
        assert query["Period"] == period and properties["EvaluationPeriods"] == 1, name
        assert properties["ComparisonOperator"] == "GreaterThanThreshold", name
        assert properties["TreatMissingData"] == "notBreaching", name
        assert threshold_of(properties) == (threshold, parameter), name
        assert metric in emitted, f"{name} reads {metric}, which the code does not emit under that name"


def test_docs_list_every_alarm_and_the_rfcs_signals_with_the_templates_metric_and_threshold() -> None:
    listed = set(re.findall(r"^\| `(\w+Alarm)` \|", OPERATIONS, re.MULTILINE))
    assert listed == set(TEMPLATE.of_type("AWS::CloudWatch::Alarm"))
    alarms = TEMPLATE.of_type("AWS::CloudWatch::Alarm")
    for name, (_, metric, _, _, parameter) in RFC_ALARMS.items():
        threshold, _ = threshold_of(alarms[name]["Properties"])
        (row,) = [
            line
            for line in OPERATIONS.splitlines()
            if line.startswith("|") and f"`{name}`" in line and "|---" not in line and line.count("|") == 8
        ]
        cells = [c.strip() for c in row.strip("|").split("|")]
        signal, documented_metric, unit, dimensions, alarm, documented_threshold, action = cells
        assert f"`{metric}`" in documented_metric and f"`{name}`" in alarm, row
        assert unit == ("Seconds" if metric.endswith("_seconds") else "Count"), row
        assert "`service`" in dimensions and "asset_key" not in dimensions, row
        assert f"{threshold:g}" in documented_threshold, row
        assert parameter is None or f"`{parameter}`" in documented_threshold, row
        assert signal and action, row


def test_the_dashboard_shows_the_glue_quality_verdicts_not_recorded() -> None:
    """A Glue Data Quality verdict for no registered table (UNMATCHED) or no snapshot (NOT_PINNED) is only logged and
    counted: its counter is on the dashboard beside the commit notices ignored, where an operator looks."""
    expressions = [
        row[0]["expression"]
        for widget in dashboard()["widgets"]
        for row in widget["properties"]["metrics"]
        if isinstance(row[0], dict)
    ]
    assert (NAMESPACE, "lakehouse_quality_verdict_unrecorded_total") in queried_metrics(expressions)
