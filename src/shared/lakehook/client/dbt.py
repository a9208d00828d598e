"""dbt test results as quality verdicts: one QUALITY_CHECK_PASSED / _FAILED per tested model.

dbt writes ``target/run_results.json`` after ``dbt test`` / ``dbt build`` (schema ``run-results/v4`` to ``v6``:
``results[]`` with ``unique_id``, ``status`` — ``pass``, ``fail``, ``warn``, ``error``, ``skipped`` — and
``failures``) and ``target/manifest.json`` (``nodes``: each test names the model it tests in ``attached_node``,
dbt 1.5 on, or ``depends_on.nodes``; each model its ``relation_name``, ``database``, ``schema`` and ``alias``).

A model passes when every test of it in the results passed (``pass``, or ``warn``: a test at ``warn`` severity does
not fail the build either); any ``fail``, ``error`` or ``skipped`` test fails it, named in the verdict's
``payload.dbt``. A model reaches a lakehook asset through the asset map, keyed by the model's ``unique_id``, its
``name`` or its relation (``database.schema.alias``, quotes dropped); the value is the asset key, or
``{"assetKey": ..., "snapshotId": ..., "sequenceNumber": ...}`` pinning the snapshot the tests read. A snapshot
can also be given per asset key (``snapshots``) or read from the table by ``snapshot_of`` (e.g.
``lambda key: snapshot_event_from_iceberg(catalog.load_table(...))``). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

RUN_RESULTS_SCHEMA = re.compile(r"^https://schemas\.getdbt\.com/dbt/run-results/v(\d+)\.json$")
SUPPORTED_RUN_RESULTS = (4, 5, 6)
_PASSING = ("pass", "warn")
_STATUSES = ("pass", "warn", "fail", "error", "skipped")
_TESTED_KINDS = ("model.", "snapshot.", "seed.", "source.")  # a source's tests judge the raw table
_PIN_FIELDS = ("snapshotId", "sequenceNumber", "commitTime")
_METADATA = (("invocationId", "invocation_id"), ("dbtVersion", "dbt_version"), ("generatedAt", "generated_at"))

SnapshotOf = Callable[[str], Mapping[str, Any]]


class DbtResultsError(ValueError):
    """dbt's files are not what this reads, or a tested model cannot be pinned; the message says which."""


@dataclass(frozen=True)
class ModelTests:
    """The tests of one model in one dbt invocation, by outcome."""

    model: str  # the model's unique_id
    tests: dict[str, str] = field(default_factory=dict)  # test name -> status

    @property
    def passed(self) -> bool:
        return all(status in _PASSING for status in self.tests.values())

    def named(self, *statuses: str) -> list[str]:
        return sorted(name for name, status in self.tests.items() if status in statuses)


@dataclass(frozen=True)
class DbtVerdicts:
    """The verdict events to push, and the tested models the asset map does not name (not pushed)."""

    events: list[dict[str, Any]]
    unmapped: list[str]


def model_tests(run_results: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, ModelTests]:
    """Each tested model's tests and their statuses, from dbt's two files."""
    _check_schema(run_results)
    nodes = manifest.get("nodes")
    if not isinstance(nodes, Mapping):
        raise DbtResultsError("manifest.json has no nodes object: is it dbt's target/manifest.json?")
    results = run_results.get("results")
    if not isinstance(results, list):
        raise DbtResultsError("run_results.json has no results list")
    found: dict[str, ModelTests] = {}
    for index, result in enumerate(results):
        if not isinstance(result, Mapping) or not str(result.get("unique_id", "")).startswith("test."):
            continue  # a model's own run, a seed load...: not a test
        status = result.get("status")
        if status not in _STATUSES:
            raise DbtResultsError(f"results[{index}].status {status!r} is not one of {', '.join(_STATUSES)}")
        test = nodes.get(result["unique_id"])
        if not isinstance(test, Mapping):
            raise DbtResultsError(f"test {result['unique_id']} of run_results.json is not in manifest.json")
        for model in _tested_models(test):
            found.setdefault(model, ModelTests(model)).tests[str(test.get("name") or result["unique_id"])] = status
    return found


def dbt_verdicts(
    run_results: Mapping[str, Any],
    manifest: Mapping[str, Any],
    asset_map: Mapping[str, Any],
    *,
    snapshots: Mapping[str, Mapping[str, Any]] | None = None,
    snapshot_of: SnapshotOf | None = None,
) -> DbtVerdicts:
    """One verdict event per tested model the asset map names, pinned to its snapshot (the map's own pin, else
    ``snapshots[assetKey]``, else ``snapshot_of(assetKey)``); raises DbtResultsError when one has no snapshot."""
    nodes = {**_object(manifest.get("sources")), **_object(manifest.get("nodes"))}
    metadata = _object(run_results.get("metadata"))
    events: list[dict[str, Any]] = []
    unmapped: list[str] = []
    for model, tests in sorted(model_tests(run_results, manifest).items()):
        target = _mapped(asset_map, model, nodes.get(model, {}))
        if target is None:
            unmapped.append(model)
            continue
        pin = _pin(target, snapshots or {}, snapshot_of)
        events.append(_verdict(target["assetKey"], pin, tests, metadata))
    return DbtVerdicts(events, unmapped)


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def relation_of(node: Mapping[str, Any]) -> str | None:
    """A model's relation as ``database.schema.alias`` (dbt's ``relation_name`` without its quotes)."""
    relation = node.get("relation_name")
    if isinstance(relation, str) and relation:
        return re.sub(r"[\"`\[\]]", "", relation)
    parts = [node.get("database"), node.get("schema"), node.get("alias") or node.get("name")]
    return ".".join(p for p in parts if isinstance(p, str) and p) or None


def _check_schema(run_results: Mapping[str, Any]) -> None:
    metadata = run_results.get("metadata")
    schema = metadata.get("dbt_schema_version") if isinstance(metadata, Mapping) else None
    match = RUN_RESULTS_SCHEMA.fullmatch(schema) if isinstance(schema, str) else None
    if match is None or int(match.group(1)) not in SUPPORTED_RUN_RESULTS:
        supported = ", ".join(f"v{v}" for v in SUPPORTED_RUN_RESULTS)
        raise DbtResultsError(
            f"run_results.json's metadata.dbt_schema_version {schema!r} is not run-results {supported}"
        )


def _tested_models(test: Mapping[str, Any]) -> list[str]:
    attached = test.get("attached_node")
    if isinstance(attached, str) and attached:
        return [attached]
    depends = test.get("depends_on")
    named = depends.get("nodes") if isinstance(depends, Mapping) else None
    return sorted({n for n in named or [] if isinstance(n, str) and n.startswith(_TESTED_KINDS)})


def _mapped(asset_map: Mapping[str, Any], model: str, node: Mapping[str, Any]) -> dict[str, Any] | None:
    for key in (model, node.get("name"), relation_of(node)):
        if isinstance(key, str) and key in asset_map:
            value = asset_map[key]
            target = {"assetKey": value} if isinstance(value, str) else dict(value)
            if not isinstance(target.get("assetKey"), str):
                raise DbtResultsError(f"asset map entry {key!r} names no assetKey")
            return target
    return None


def _pin(
    target: Mapping[str, Any], snapshots: Mapping[str, Mapping[str, Any]], of: SnapshotOf | None
) -> dict[str, Any]:
    key = target["assetKey"]
    if target.get("snapshotId") is not None:
        source: Mapping[str, Any] = target
    elif key in snapshots:
        source = snapshots[key]
    elif of is not None:
        source = of(key)
    else:
        raise DbtResultsError(
            f"no snapshot for {key}: give it in the asset map, as --snapshot {key}=<snapshotId>, or read it"
        )
    pin = {name: source[name] for name in _PIN_FIELDS if source.get(name) is not None}
    if "snapshotId" not in pin:
        raise DbtResultsError(f"the snapshot given for {key} has no snapshotId")
    return pin


def _verdict(key: str, pin: dict[str, Any], tests: ModelTests, metadata: Mapping[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"model": tests.model, "tests": len(tests.tests)}
    for label, statuses in (("failedTests", ("fail",)), ("erroredTests", ("error",)), ("skippedTests", ("skipped",))):
        if names := tests.named(*statuses):
            details[label] = names
    if warned := tests.named("warn"):
        details["warnedTests"] = warned
    for name, source in (
        ("invocationId", "invocation_id"),
        ("dbtVersion", "dbt_version"),
        ("generatedAt", "generated_at"),
    ):
        if isinstance(metadata.get(source), str):
            details[name] = metadata[source]
    event_type = "QUALITY_CHECK_PASSED" if tests.passed else "QUALITY_CHECK_FAILED"
    return {"eventType": event_type, "assetKey": key, **pin, "payload": {"dbt": details}}
