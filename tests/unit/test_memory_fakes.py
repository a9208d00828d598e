"""The in-memory fakes live with the tests (``tests/fakes/memory*.py``): no Lambda layer ships them, nothing the
package or a function imports reaches them; and they keep the promises they make: thread-safe, as the adapters
they stand for."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest

from lakehook.domain.completion import CompletionRecord, RecordOutcome
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, trigger_key
from tests.fakes.memory_dispatch import InMemoryTriggerLedger
from tests.fakes.memory_rules import InMemoryTriggerStore

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_fakes_are_outside_the_package_and_no_deployed_module_imports_the_tests() -> None:
    package = ROOT / "src" / "shared" / "lakehook"
    assert sorted((ROOT / "tests" / "fakes").glob("memory*.py"))  # the fakes this test guards are there
    assert [p.name for p in package.rglob("memory*.py")] == []
    deployed = [*package.rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
    offenders = {
        str(p.relative_to(ROOT)) for p in deployed if any(m == "tests" or m.startswith("tests.") for m in _imports(p))
    }
    assert offenders == set()


def _classes(path: Path) -> set[str]:
    return {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)}


def test_the_layer_build_has_no_fake(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "src" / "shared"), "build-SharedLayer", f"ARTIFACTS_DIR={tmp_path}"],
        check=True,
    )
    built = tmp_path / "python"
    assert sorted(p.name for p in built.iterdir()) == ["lakehook"]
    assert (built / "lakehook" / "adapters" / "dynamodb").is_dir()
    fakes = set().union(*(_classes(p) for p in (ROOT / "tests" / "fakes").glob("memory*.py")))
    assert "InMemoryTriggerLedger" in fakes
    shipped = {str(p.relative_to(built)): _classes(p) & fakes for p in built.rglob("*.py")}
    assert {path: found for path, found in shipped.items() if found} == {}


# --- the fakes keep their promises under threads --------------------------------------------------------------

T0 = 1_750_000_000_000
RACERS = 8
ROUNDS = 30  # races per test: one interleaving that breaks a promise is enough, and a few are rare


@pytest.fixture
def tight_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter can, so a read and its write get interleaved if they can be."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def claimed(store: InMemoryTriggerStore, snapshot: int) -> str:
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=snapshot),)
    key = trigger_key("dwd", "g", pins, None, 0)
    claim = Trigger(trigger_key=key, rule_id="dwd", group_id="g", inputs=pins, created_at=T0, updated_at=T0)
    cursor = store.get_cursors([("dwd", "g")]).get(("dwd", "g"))
    base = cursor or GroupCursor.initial("dwd", "g")
    assert store.claim(claim, base.after(claim, {}), cursor).outcome.value == "CLAIMED"
    return key


def race(calls: list[Callable[[], T]]) -> list[T]:
    """Run every call on its own thread, all released at once; answer their results."""
    barrier = threading.Barrier(len(calls))
    results: list[T] = []

    def run(call: Callable[[], T]) -> None:
        barrier.wait()
        results.append(call())

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.parametrize("ledgers", ["one ledger", "a ledger per dispatcher"])
@pytest.mark.usefixtures("tight_switching")
def test_dispatchers_racing_for_one_claim_lease_it_exactly_once(ledgers: str) -> None:
    # GIVEN claims the resolver made, and dispatchers that each hold a ledger over the same claims (as every
    # dispatcher process holds a DynamoDB ledger over the same table), or share one
    store = InMemoryTriggerStore()
    shared = InMemoryTriggerLedger(store)
    mine = [shared if ledgers == "one ledger" else InMemoryTriggerLedger(store) for _ in range(RACERS)]
    for snapshot in range(1, ROUNDS + 1):
        key = claimed(store, snapshot)
        # WHEN they all begin an attempt on a claim at once
        attempts = race(
            [partial(ledger.begin_attempt, key, f"dispatcher-{i}", T0, 300_000) for i, ledger in enumerate(mine)]
        )
        # THEN exactly one holds the lease, and the claim counts one attempt
        assert len([a for a in attempts if a is not None]) == 1, f"round {snapshot}"
        assert store.triggers[key].attempts == 1


@pytest.mark.usefixtures("tight_switching")
def test_runs_reporting_different_completions_at_once_record_only_the_first() -> None:
    # GIVEN claims, and one API instance per report, each with its ledger over the same claims
    store = InMemoryTriggerStore()
    reports = [CompletionRecord.of("SUCCEEDED" if i % 2 else "FAILED", [], T0 + i) for i in range(RACERS)]
    for snapshot in range(1, ROUNDS + 1):
        key = claimed(store, snapshot)
        # WHEN each reports its completion of a claim at once
        answers = race([partial(InMemoryTriggerLedger(store).record_completion, key, r) for r in reports])
        # THEN the first terminal status wins: one RECORDED, every other report is told of a conflict or the same
        outcomes = [outcome for outcome, _ in answers]
        assert outcomes.count(RecordOutcome.RECORDED) == 1, f"round {snapshot}"
        assert set(outcomes) <= {RecordOutcome.RECORDED, RecordOutcome.CONFLICT, RecordOutcome.SAME}
