"""The configuration the RFC (seed 000, section 4.5.6) asks for as template parameters: the compensation interval,
the batch sizes (stream and poll queue batches, the poll's bounds) and the push receiver on or off, each reaching
what it configures (a schedule, an event source, an environment variable the settings read) and listed in
docs/deploy.md with its default."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.local.template import FunctionSpec, Template
from lakehook.settings import ENV_PREFIX, Settings
from tests.support import ROOT

PATH = ROOT / "template.yaml"
LOADED = Template.load(PATH)
DEPLOY = (ROOT / "docs" / "deploy.md").read_text()
PARAMETERS = LOADED.document["Parameters"]
NEW = (
    "CompensationIntervalMinutes",
    "PollSnapshotLimit",
    "PollTablesPerMessage",
    "PollWorkerBatchSize",
    "ResolverBatchSize",
    "DispatcherBatchSize",
    "PushReceiver",
)
# the parameters that become a setting: parameter -> the Settings field its environment variable sets
AS_SETTINGS = {"PollSnapshotLimit": "poll_snapshot_limit", "PollTablesPerMessage": "poll_tables_per_message"}


def functions(parameters: dict[str, str]) -> dict[str, FunctionSpec]:
    template = Template(PATH, LOADED.document, parameters=parameters)
    return {spec.name: spec for spec in template.functions()}


def settings_of(spec: FunctionSpec) -> Settings:
    ours = {k.removeprefix(ENV_PREFIX).lower(): v for k, v in spec.environment.items() if k.startswith(ENV_PREFIX)}
    return Settings(**ours)


def bounded(name: str) -> st.SearchStrategy[int]:
    spec = PARAMETERS[name]
    return st.integers(int(spec["MinValue"]), int(spec["MaxValue"]))


@settings(max_examples=20, deadline=None)
@given(
    minutes=bounded("CompensationIntervalMinutes"),
    snapshots=bounded("PollSnapshotLimit"),
    tables=bounded("PollTablesPerMessage"),
    poll_batch=bounded("PollWorkerBatchSize"),
    resolver_batch=bounded("ResolverBatchSize"),
    dispatcher_batch=bounded("DispatcherBatchSize"),
    push=st.sampled_from(["Enabled", "Disabled"]),
)
def test_each_configuration_parameter_reaches_what_it_configures(
    minutes: int, snapshots: int, tables: int, poll_batch: int, resolver_batch: int, dispatcher_batch: int, push: str
) -> None:
    found = functions(
        {
            "CompensationIntervalMinutes": str(minutes),
            "PollSnapshotLimit": str(snapshots),
            "PollTablesPerMessage": str(tables),
            "PollWorkerBatchSize": str(poll_batch),
            "ResolverBatchSize": str(resolver_batch),
            "DispatcherBatchSize": str(dispatcher_batch),
            "PushReceiver": push,
        }
    )
    schedules = {s.input: s.rate_seconds for s in found["PollPlannerFunction"].schedules}
    assert schedules['{"mode": "compensate"}'] == minutes * 60
    assert schedules['{"mode": "poll"}'] == 60  # the tick; each table's own interval decides which it polls
    assert found["PollWorkerFunction"].queues == [("PollQueue", poll_batch)]
    assert [s.batch_size for s in found["ResolverFunction"].streams] == [resolver_batch]
    assert [s.batch_size for s in found["DispatcherFunction"].streams] == [dispatcher_batch]
    for spec in found.values():  # every function reads the same settings
        configured = settings_of(spec)
        assert (configured.poll_snapshot_limit, configured.poll_tables_per_message) == (snapshots, tables)
        assert configured.push_enabled is (push == "Enabled")


def test_the_defaults_are_what_the_stack_had_before_they_were_parameters() -> None:
    found = functions({})
    schedules = {s.input: s.rate_seconds for s in found["PollPlannerFunction"].schedules}
    assert schedules['{"mode": "compensate"}'] == 15 * 60
    assert found["PollWorkerFunction"].queues == [("PollQueue", 5)]
    assert [s.batch_size for s in found["ResolverFunction"].streams] == [100]
    assert [s.batch_size for s in found["DispatcherFunction"].streams] == [10]
    configured = settings_of(found["PollWorkerFunction"])
    assert (configured.poll_snapshot_limit, configured.poll_tables_per_message, configured.push_enabled) == (
        500,
        10,
        True,
    )
    assert configured.poll_snapshot_limit == Settings.model_fields["poll_snapshot_limit"].default


@pytest.mark.parametrize(("parameter", "field"), sorted(AS_SETTINGS.items()))
def test_a_parameters_bounds_are_those_the_settings_take(parameter: str, field: str) -> None:
    """A value the stack accepts is one the functions start with, and the reverse."""
    spec: dict[str, Any] = PARAMETERS[parameter]
    metadata = {type(m).__name__: m for m in Settings.model_fields[field].metadata}
    assert (int(spec["MinValue"]), int(spec["MaxValue"])) == (metadata["Ge"].ge, metadata["Le"].le)
    assert int(spec["Default"]) == Settings.model_fields[field].default


@pytest.mark.parametrize("parameter", NEW)
def test_docs_list_each_configuration_parameter_with_its_default(parameter: str) -> None:
    default = PARAMETERS[parameter]["Default"]
    assert f"| `{parameter}` | `{default}` |" in DEPLOY, f"docs/deploy.md's Parameters table lacks {parameter}"
