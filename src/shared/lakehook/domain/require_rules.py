"""A group's ``require`` tree checked against the group when the rule is written (:func:`check_require`): every
reference names a member, every member is named, a name names one member, the tree is at most
:data:`MAX_REQUIRE_DEPTH` deep, and the group is not of a shape that chooses every member's version in lockstep.
Each problem is a ValueError naming it, which the API answers as a 400."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakehook.domain.requirements import MAX_REQUIRE_DEPTH, depth, references

if TYPE_CHECKING:
    from lakehook.domain.rules import Group


def check_require(group: Group) -> None:
    """The group's require tree, checked (a ValueError naming the first problem)."""
    assert group.require is not None
    deep = depth(group.require)
    if deep > MAX_REQUIRE_DEPTH:
        raise ValueError(f"require nests {deep} operators deep; the limit is {MAX_REQUIRE_DEPTH}")
    _names_are_distinct(group)
    _references_name_every_member(group)
    _supported_shape(group)


def _names_are_distinct(group: Group) -> None:
    names = [m.name for m in group.members if m.name is not None]
    others = {k for m in group.members for k in (m.alias, m.asset_key) if k is not None}
    clash = next((n for n in names if names.count(n) > 1 or n in others), None)
    if clash is not None:
        raise ValueError(f"member name {clash!r} names more than one member (a name, alias or assetKey of the group)")


def _references_name_every_member(group: Group) -> None:
    assert group.require is not None
    refs = group.require_refs
    used = references(group.require)
    unknown = next((r for r in used if r not in refs), None)
    if unknown is not None:
        raise ValueError(
            f"require names {unknown!r}, which is no member of the group (a member's name, alias or assetKey)"
        )
    covered = {k for r in used for k in refs[r]}
    unused = next((i for i, m in enumerate(group.members) if m.asset_key not in covered), None)
    if unused is not None:
        raise ValueError(
            f"members.{unused} ({group.members[unused].asset_key}) is not named in require: a member the tree does "
            "not name would decide nothing; name it in require, or remove it"
        )


def _supported_shape(group: Group) -> None:
    """A schedule, a window and partitionBy choose every member's version together (per tick, per window, per
    partition): with a tree some members pin nothing, which those steps do not define."""
    shapes = (
        ("a schedule (it steps every member from the tick's cursor)", group.schedule is not None),
        ("a watermark or coverage window (it pins every member per window)", group.window is not None),
        ("partitionBy (a partition's versions are its partitioned members' commits)", group.partition_by is not None),
    )
    shape = next((why for why, present in shapes if present), None)
    if shape is not None:
        raise ValueError(f"require: a group with {shape} is not supported with a require tree")
