"""The container is the one composition root: each part built once, on first use, and replaceable by its name."""

from __future__ import annotations

import threading
from typing import Any

from lakehook.container import Container, part
from lakehook.settings import Settings
from lakehook.usecases.rule_runs import EvaluateRule
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryAssetStore, InMemorySecretStore
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.fakes.memory_dispatch import InMemoryAliasStore
from tests.fakes.memory_partitions import InMemoryPartitionStore
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)


def in_memory() -> Container:
    assets, triggers = InMemoryAssetStore(), InMemoryTriggerStore()
    return Container.of(
        Settings(),
        rule_store=InMemoryRuleStore(),
        trigger_store=triggers,
        state_reader=InMemoryStateReader(assets.get_state, triggers),
        state_history=InMemoryStateHistory(),
        deferral_store=InMemoryDeferralStore(),
        asset_store=assets,
        asset_registry=InMemoryAssetRegistry(),
        coverage_store=InMemoryCoverageStore(),
        secret_store=InMemorySecretStore(),
        alias_store=InMemoryAliasStore(),
        partition_store=InMemoryPartitionStore(),
    )


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
    assert sorted(container.built) == ["evaluate_rule", "explain_rule", "resolver"]


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
