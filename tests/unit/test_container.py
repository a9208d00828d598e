"""The container is the one composition root: each part built once, on first use, and replaceable by its name."""

from __future__ import annotations

import inspect
import threading
from typing import Any

import pytest

from lakehook.adapters import aws
from lakehook.container import Container, part
from lakehook.settings import Settings
from lakehook.usecases.rule_runs import EvaluateRule
from tests import wiring


def in_memory() -> Container:
    return wiring.in_memory(Settings())


def test_nothing_is_built_before_it_is_asked_for() -> None:
    assert Container(Settings()).built == {}


def test_a_part_is_built_once_and_on_the_overrides_it_needs() -> None:
    container = in_memory()
    evaluate = container.evaluate_rule
    assert isinstance(evaluate, EvaluateRule)
    assert container.evaluate_rule is evaluate
    assert evaluate._explainer is container.explain_rule  # it answers with the explain route's own use case
    assert container.resolver is evaluate._resolver is container.explain_rule._resolver  # both decide with it
    # every adapter they used was an override
    assert sorted(container.built) == ["evaluate_rule", "explain_rule", "resolver", "slot_gate"]  # explain shows slots


def test_an_override_wins_whenever_it_is_set_and_the_built_part_returns_when_it_is_dropped() -> None:
    container = in_memory()
    built = container.sweeper
    replacement: Any = object()
    container.overrides["sweeper"] = replacement
    assert container.sweeper is replacement
    del container.overrides["sweeper"]
    assert container.sweeper is built


def test_threads_racing_on_a_first_use_all_get_the_same_part() -> None:
    class Slow(Container):
        @part
        def slow(self) -> object:
            threading.Event().wait(0.01)  # long enough for every thread to start building
            return object()

    container = Slow(Settings())
    barrier = threading.Barrier(8)
    got: list[object] = []

    def ask() -> None:
        barrier.wait()
        got.append(container.slow)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len({id(g) for g in got}) == 1


# --- every function family on fakes alone -------------------------------------------------------------------------

PARTS = sorted(name for name, value in vars(Container).items() if isinstance(value, part))
ADAPTERS = sorted(wiring.fakes())  # the parts that talk to AWS: each has a fake
USE_CASES = [name for name in PARTS if name not in ADAPTERS]


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any boto3 client or table the container would make fails the test."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"AWS was reached: {args}")

    monkeypatch.setattr(aws, "client", refused)
    monkeypatch.setattr(aws, "dynamodb_table", refused)


def test_every_adapter_part_has_a_fake_and_every_fake_names_a_part() -> None:
    assert set(ADAPTERS) <= set(PARTS), set(ADAPTERS) - set(PARTS)
    assert USE_CASES, "no use case parts found"
    for name in USE_CASES:  # a new adapter part (one that builds an AWS client or reads the table) needs a fake
        source = inspect.getsource(getattr(Container, name).build)
        assert "aws." not in source and "self.table" not in source, f"{name} talks to AWS: add its fake to tests/wiring"


@pytest.mark.parametrize("name", USE_CASES)
def test_every_use_case_part_builds_on_fakes_alone(no_aws: None, name: str) -> None:
    settings = Settings(poll_queue_url="https://sqs.example/q", completion_key_secret="lakehook/completion")
    container = wiring.in_memory(settings)

    built = getattr(container, name)

    assert built is not None and getattr(container, name) is built
    assert set(container.built) <= set(USE_CASES)  # nothing it used was an adapter built for real


def test_each_function_familys_entry_points_build_on_fakes_alone(no_aws: None) -> None:
    """What each function of template.yaml asks its container for, on one container of fakes."""
    container = wiring.in_memory(Settings(poll_queue_url="https://sqs.example/q"))
    families = {
        "ingest": [container.ingest, container.push_authenticator, container.ingest_bus_events],
        "spool": [container.record_manifest_verification],
        "polling": [container.run_poll_work, container.plan_polls, container.plan_notified_polls],
        "rules": [
            container.resolver,
            container.sweeper,
            container.check_freshness,
            container.put_rule,
            container.read_rules,
            container.delete_rule,
            container.explain_rule,
            container.evaluate_rule,
        ],
        "dispatch": [container.dispatcher, container.redriver, container.retry_trigger, container.complete_run],
        "replay": [container.replay_trigger],
    }
    assert all(all(p is not None for p in parts) for parts in families.values())
