"""Bounded work per resolver invocation, and the work carried over to the next ones through the resolver's queue.

Whatever arrives at once (a stream batch of 100 records, each naming up to the touched keys of a commit), one
invocation writes at most ``max_facts`` partition facts, makes at most ``max_claims_per_group`` claims per group and
reads one page of a group's pending partitions. What lies past that bound is neither dropped nor left to the deferral
sweep's rate; it is sent, before anything is written, to the resolver's work queue (SQS, ``ResolverWorkQueue``),
which hands the resolver one message per invocation (``BatchSize: 1``):

- a **slice** of a commit's partitions (``kind: "partitions"``): the asset, the snapshot record and at most what one
  invocation may write of its keys; it wakes only the partitioned groups mapping the asset, for those keys;
- a group's **continuation** (``kind: "group"``): ready partitions past its claims (at most one invocation's claims per
  message), or the next page of its pending partitions (below a key).

An evaluation no stream batch brought (a PUT of the rule, evaluate now) is bounded alike (:func:`evaluation_batch`):
it takes at most ``max_facts`` facts' worth of the partitions its members' newest commits touched, and sends the
rest, and those commits' part items, as slices.

Each message is bounded, each partition is read once per continuation (the drain is linear in reads), and a message
whose invocation fails (a timeout included) is received again, then kept in the queue's dead-letter queue
(``ResolverWorkDeadLetterQueue``, alarmed); nothing is stranded. Without a queue (a unit test's resolver), the group
defers itself instead, and the rest of a batch past the bound is resolved in the same invocation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from lakehook.domain.commit_pieces import sub_start
from lakehook.domain.evaluation import PartialCommit
from lakehook.domain.limits import MAX_TOUCHED_PARTITION_BYTES, MAX_TOUCHED_PARTITIONS
from lakehook.domain.partition_evaluation import mapping_of
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Rule
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.rules import PartitionWork, StateChange
from lakehook.usecases.resolve_gather import Batch, origin_key

SLICE = "partitions"
CONTINUE = "group"


class SliceMessage(BaseModel):
    """A slice of one commit's partitions, past what the invocation that read it could write."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: Literal["partitions"]
    asset_key: str = Field(alias="assetKey", min_length=1)
    snapshot: SnapshotRecord
    partitions: list[str] = Field(min_length=1, max_length=MAX_TOUCHED_PARTITIONS)
    # where its keys start among the commit's sorted keys, and how many the commit touched (absent: not known, as in
    # a slice of an older release: it covers nothing of its commit, which then settles as before)
    offset: int | None = Field(default=None, ge=0)
    total: int | None = Field(default=None, ge=0)


class GroupMessage(BaseModel):
    """A partitioned group's partitions to evaluate, or the page of its pending partitions below ``after``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: Literal["group"]
    rule_id: str = Field(alias="ruleId", min_length=1)
    group_id: str = Field(alias="groupId", min_length=1)
    partitions: list[str] = Field(default_factory=list)
    after: str | None = None


_MESSAGE: TypeAdapter[SliceMessage | GroupMessage] = TypeAdapter(
    Annotated[SliceMessage | GroupMessage, Field(discriminator="kind")]
)


def work_of(body: Mapping[str, Any]) -> StateChange | PartitionWork:
    """The resolver's input a queue message carries (a ValueError when it is none)."""
    message = _MESSAGE.validate_python(body)
    if isinstance(message, SliceMessage):
        parts = TouchedPartitions.model_validate(message.partitions)
        return StateChange(
            message.asset_key,
            snapshot=message.snapshot,
            partitions=parts,
            partitions_only=True,
            offset=message.offset,
            total=message.total,
        )
    if not message.partitions and message.after is None:
        raise ValueError("a group message names partitions or a key to continue after")
    return PartitionWork(message.rule_id, message.group_id, tuple(message.partitions), message.after)


def slice_message(change: StateChange) -> dict[str, Any]:
    assert change.snapshot is not None and change.partitions is not None
    message: dict[str, Any] = {
        "kind": SLICE,
        "assetKey": change.asset_key,
        "snapshot": change.snapshot.model_dump(by_alias=True, exclude_none=True),
        "partitions": list(change.partitions.keys),
    }
    if change.offset is not None:
        message["offset"] = change.offset
    if change.total is not None:
        message["total"] = change.total
    return message


def group_messages(rule_id: str, group_id: str, partitions: Sequence[str], per_message: int) -> list[dict[str, Any]]:
    """The ready partitions of a group past its claims, at most ``per_message`` (one invocation's claims) and 64 KiB
    of keys a message (1000 keys of 512 characters would be past SQS's 256 KiB)."""
    return [
        {"kind": CONTINUE, "ruleId": rule_id, "groupId": group_id, "partitions": chunk}
        for chunk in _chunks(partitions, max(1, per_message))
    ]


def next_page_message(rule_id: str, group_id: str, after: str) -> dict[str, Any]:
    return {"kind": CONTINUE, "ruleId": rule_id, "groupId": group_id, "after": after}


def weights(work: Sequence[tuple[Rule, Group]]) -> dict[str, int]:
    """Per asset, what one touched key of it may cost the groups of ``work``: per distinct mapping of the
    partitioned members naming it (rules mapping an asset alike share its facts), one fact, or for a fan-out the
    partitions that fact names in a group (a day's 24 hours, a month's 31 days at most, a year's 12 months, a year's
    366 days fanned out to days, the product over several fanned-out fields: at most 1000), each
    read and evaluated as a partition is."""
    mappings: dict[str, dict[str, int]] = {}
    for _, group in work:
        for member in group.partitioned_members:
            assert member.partition is not None and group.partition_by is not None
            found = mappings.setdefault(member.asset_key, {})
            mapping = mapping_of(group, member)
            found[mapping] = max(found.get(mapping, 1), member.partition.fan_out(group.partition_by))
    return {asset: sum(found.values()) for asset, found in mappings.items()}


def split_batch(batch: Batch, work: Sequence[tuple[Rule, Group]], budget: int) -> tuple[Batch, list[StateChange]]:
    """The batch trimmed to at most ``budget`` partition facts (weighted: a fan-out key counts the partitions it
    names), and the slices of the commits' keys past it (each at most ``budget`` of that weight and one event's
    bytes; one key at least, when a key alone weighs more), each knowing where it starts in its commit. A commit named
    twice (its event and the state image) counts once."""
    if batch.touched is None:
        return batch, []
    weight = weights(work)
    used = 0
    kept = replace(batch, touched={}, origins={})
    carried: list[StateChange] = []
    seen: dict[tuple[str, int], set[str]] = {}
    for asset, entries in batch.touched.items():
        each = weight.get(asset, 0)
        for record, parts in entries:
            start, total = batch.origins.get(origin_key(asset, record, parts.keys), (None, None))
            if each == 0 or not record.changes_data:
                _keep(kept, asset, record, parts, start, total)  # no fact to write: nothing to bound
                continue
            known = seen.setdefault((asset, record.order), set())
            fresh = [k for k in parts.keys if k not in known]
            known.update(fresh)
            room = max(0 if used else 1, (budget - used) // each)  # a key at least: a slice always moves on
            keep, rest = fresh[:room], fresh[room:]
            used += len(keep) * each
            if keep:
                kept_parts = TouchedPartitions.model_validate(keep)
                _keep(kept, asset, record, kept_parts, sub_start(start, parts.keys, keep), total)
            for chunk in _chunks(rest, max(1, budget // each)):
                offset = sub_start(start, parts.keys, chunk)
                cut = TouchedPartitions.model_validate(chunk)
                carried.append(StateChange(asset, snapshot=record, partitions=cut, offset=offset, total=total))
    return kept, carried


def _keep(
    batch: Batch, asset: str, record: SnapshotRecord, parts: TouchedPartitions, start: int | None, total: int | None
) -> None:
    assert batch.touched is not None
    batch.touched.setdefault(asset, []).append((record, parts))
    batch.note_origin(asset, record, parts, start, total)


def evaluation_batch(
    work: Sequence[tuple[Rule, Group]],
    touched: Mapping[str, Sequence[tuple[SnapshotRecord, TouchedPartitions]]],
    more: Sequence[StateChange],
    budget: int,
) -> tuple[Batch, list[StateChange]]:
    """What an evaluation no stream batch brought (a PUT of the rule, evaluate now, explain) takes of the partitions
    its partitioned members' newest data commits touched (``touched``: the states' ``latestPartitions``): at most
    ``budget`` facts of them, weighted and cut as a stream batch's are (:func:`split_batch`, so explain shows what a
    claiming evaluation takes), and the slices past it: the rest of those keys, then the commits' part items
    (``more``: keys past the state's first 1000, or a poll's keys a push left out), each cut as a slice is."""
    kept, rest = split_batch(Batch.of_touched(touched), work, budget)
    weight = weights(work)
    for change in more:
        each = weight.get(change.asset_key, 0)
        if each:
            rest += slices([change], max(1, budget // each))
    return kept, rest


def partial_commits(
    touched: Mapping[str, Sequence[tuple[SnapshotRecord, TouchedPartitions]]], kept: Batch
) -> list[PartialCommit]:
    """The commits of ``touched`` of which ``kept`` holds fewer keys than they touched (explain says so)."""
    taken = kept.touched or {}
    found: list[PartialCommit] = []
    for asset, entries in touched.items():
        for record, parts in entries:
            evaluated = sum(len(p.keys) for r, p in taken.get(asset, ()) if r.order == record.order)
            if evaluated < parts.count:
                found.append(PartialCommit(asset, record.snapshot_id, parts.count, evaluated))
    return found


def slices(changes: Sequence[StateChange], most: int) -> list[StateChange]:
    """The partitions the commits of ``changes`` touched, as slices of at most ``most`` keys (one event's bytes)."""
    found: list[StateChange] = []
    for change in changes:
        record, parts = change.snapshot, change.partitions
        if record is None or parts is None or not parts.keys or not record.changes_data:
            continue
        for chunk in _chunks(parts.keys, most):
            offset = sub_start(change.offset, parts.keys, chunk)
            cut = TouchedPartitions.model_validate(chunk)
            found.append(
                StateChange(change.asset_key, snapshot=record, partitions=cut, offset=offset, total=change.total)
            )
    return found


def _chunks(keys: Sequence[str], most: int) -> Iterator[list[str]]:
    """``keys`` in slices of at most ``most`` keys (and the touched keys one event may hold) and 64 KiB."""
    chunk: list[str] = []
    size = 0
    for key in keys:
        length = len(key.encode())
        if chunk and (len(chunk) >= min(most, MAX_TOUCHED_PARTITIONS) or size + length > MAX_TOUCHED_PARTITION_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(key)
        size += length
    if chunk:
        yield chunk
