"""The gather is one path for every group (issue 33, "The design step"): one loop over the work gives each group
its own inputs (:class:`lakehook.usecases.resolve_group_reads.GroupInputs`, one mapping the plan reads), and the
kind of group only decides which reads it makes (an unpartitioned group's coverage, a partitioned group's
partitions), in one place. On the in-memory fakes of our own ports."""

from __future__ import annotations

import ast
import inspect
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.rules import Rule
from lakehook.usecases import resolve_gather
from lakehook.usecases.resolve import ResolverLimits, ResolverStores
from lakehook.usecases.resolve_gather import Batch, Gathered, GatherInputs
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily

DAYS = ["2026-12-01", "2026-12-02", "2026-12-03"]


def whole(rule_id: str, mode: str = "ALL_UPDATED") -> Rule:
    """An unpartitioned rule over the same two tables."""
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": mode},
            "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}, {"assetKey": PAYMENTS}]}],
        }
    )


def _gathered(lake: Lake, partition_store: bool = True) -> Gathered:
    """What the resolver gathers for a PUT-like evaluation of every rule of the lake (every group woken)."""
    stores = ResolverStores(
        lake.rules,
        lake.reader,
        lake.triggers,
        lake.history,
        lake.deferrals,
        partitions=lake.partitions if partition_store else None,
    )
    gather = GatherInputs(stores, ResolverLimits(), lambda exc: isinstance(exc, ValueError))
    found = gather.rules([ORDERS, PAYMENTS], ())
    return gather(found.work, Batch.empty(), lake.now)


def _lake(kinds: list[tuple[str, bool, str]], days: list[str]) -> Lake:
    rules = [daily(rule_id=rule_id, mode=mode) if split else whole(rule_id, mode) for rule_id, split, mode in kinds]
    lake = Lake(*rules)
    for sid, asset in enumerate([ORDERS, PAYMENTS], start=1):
        lake.commit(asset, sid, *days)
        lake.now += 1_000
    return lake


def test_each_group_of_the_work_has_its_inputs_in_one_mapping_and_its_kind_only_decides_its_reads() -> None:
    lake = _lake([("daily", True, "ALL_UPDATED"), ("whole", False, "ALL_UPDATED")], DAYS[:2])

    gathered = _gathered(lake)

    assert list(gathered.groups) == [(rule.rule_id, group.group_id) for rule, group in gathered.work]
    partitioned, unpartitioned = gathered.group(("daily", "g")), gathered.group(("whole", "g"))
    assert partitioned.partitions is not None and partitioned.error is None
    assert sorted(partitioned.partitions.partitions) == [f"dt={d}" for d in DAYS[:2]]
    assert unpartitioned.partitions is None and unpartitioned.error is None and unpartitioned.coverage is None
    assert gathered.group(("gone", "g")).partitions is None  # a group not read: nothing of its own


def test_a_partitioned_group_with_no_partition_store_gets_the_error_its_plan_raises_and_others_read_on() -> None:
    lake = _lake([("daily", True, "ALL_UPDATED"), ("whole", False, "ALL_UPDATED")], DAYS[:1])

    gathered = _gathered(lake, partition_store=False)

    error = gathered.group(("daily", "g")).error
    assert isinstance(error, ValueError) and "partition store" in str(error)
    assert gathered.group(("daily", "g")).partitions is None
    assert gathered.group(("whole", "g")).error is None


kinds = st.lists(
    st.tuples(st.booleans(), st.sampled_from(["ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION"])), min_size=1, max_size=4
)


@settings(max_examples=examples(30), deadline=None)
@given(kinds=kinds, days=st.lists(st.sampled_from(DAYS), min_size=1, max_size=3, unique=True))
def test_any_mix_of_groups_is_gathered_on_one_path_each_read_as_its_kind(
    kinds: list[tuple[bool, str]], days: list[str]
) -> None:
    named = [(f"r{i}", split, mode) for i, (split, mode) in enumerate(kinds)]
    lake = _lake(named, days)

    gathered = _gathered(lake)

    assert list(gathered.groups) == [(rule.rule_id, group.group_id) for rule, group in gathered.work]
    assert {ref[0] for ref in gathered.groups} == {rule_id for rule_id, _, _ in named}
    stepping = any(mode == "EACH_VERSION" and not split for _, split, mode in named)
    for rule_id, split, mode in named:
        own = gathered.group((rule_id, "g"))
        assert own.error is None
        assert (own.partitions is not None) is split, rule_id
        if own.partitions is not None:
            assert sorted(own.partitions.partitions) == sorted(f"dt={d}" for d in days)
            # EACH_VERSION per partition: the batch's versions of its own members' keys, handed to the group
            brought = own.partitions.batch_versions
            assert bool(brought) is (mode == "EACH_VERSION") and {k[0] for k in brought} <= {ORDERS, PAYMENTS}
        # the whole-table version reads are made once per asset; each group gets those of its own members
        assert set(own.versions.logs) == ({ORDERS, PAYMENTS} if stepping else set()), rule_id


def _reads_partition_by(function: Any) -> bool:
    """Whether ``function`` reads ``group.partition_by`` (a fork on the kind of group)."""
    tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(function)))
    return any(isinstance(node, ast.Attribute) and node.attr == "partition_by" for node in ast.walk(tree))


def test_the_gather_chooses_the_kind_of_group_in_one_place_and_its_call_does_not_fork_on_it() -> None:
    """Only one function of the gather looks at ``partitionBy``: which reads a group makes (``_groups``); whether
    carried-over partition work still has a partitioned group is the partitioned reads' question
    (``resolve_partition_reads.carried_groups``), and EACH_VERSION's version reads are each kind's
    (``resolve_whole_versions``, ``resolve_partition_reads``)."""
    forking = sorted(
        name
        for name, function in [
            *inspect.getmembers(GatherInputs, inspect.isfunction),
            *inspect.getmembers(resolve_gather, inspect.isfunction),
        ]
        if function.__module__ == resolve_gather.__name__ and _reads_partition_by(function)
    )
    assert forking == ["_groups"]
    assert not _reads_partition_by(GatherInputs.__call__)


def _lines_naming(source: str, names: set[str]) -> set[int]:
    """The lines of ``source`` whose code names one of ``names`` (an attribute, ``x.partition_by``, or a name)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        named = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if named in names:
            found.add(node.lineno)
    return found


def test_the_gather_names_the_kind_of_group_on_one_line_and_no_mode() -> None:
    """issue 33: the version reads of EACH_VERSION are each kind of group's, so the gather's module names
    ``partition_by`` on the one line that picks a group's kind of reads, and no mode (``Mode.EACH_VERSION``) at all."""
    source = inspect.getsource(resolve_gather)
    picking = _lines_naming(source, {"partition_by"})
    assert len(picking) == 1, sorted(picking)
    lines, first = inspect.getsourcelines(GatherInputs._groups)
    assert first <= picking.pop() < first + len(lines)  # in the one loop over the work
    assert not _lines_naming(source, {"Mode", "EACH_VERSION"})


def test_a_line_naming_the_kind_or_a_mode_is_found() -> None:
    """The check above finds what it looks for (attributes and names), and nothing in comments or strings."""
    source = "if group.partition_by is None:\n    x = Mode.EACH_VERSION\n# partition_by\ny = 'EACH_VERSION'\n"
    assert _lines_naming(source, {"partition_by"}) == {1}
    assert _lines_naming(source, {"Mode", "EACH_VERSION"}) == {2}
