"""DynamoDBTriggerStore: a claim is two conditional puts in ONE transaction (several claims may share one).

- the claim ``TRIGGER#<key>`` / ``CLAIM``, condition ``attribute_not_exists(PK)``: each key once;
- the group cursor ``RULE#<ruleId>`` / ``CURSOR#<groupId>``, condition ``seq = :expected`` (or absent) and
  ``lateSeq = :late`` (or absent), with ``ReturnValuesOnConditionCheckFailure=ALL_OLD`` so a loser gets the
  winner's cursor back without another read.

A late snapshot's push notes itself on the cursors of the EACH_VERSION groups it is a version of
(:meth:`DynamoDBTriggerStore.admit_late`): one UpdateItem each, ``ADD lateSeq 1, lateOrders {order}`` (creating the
item, without ``seq`` or ``body``, for a group that never triggered), answering the cursor it left (``ALL_NEW``).
So a claim planned before the late snapshot was logged fails, and the push learns atomically whether the group
had already run past it. A claim's put writes ``lateSeq`` back and drops ``lateOrders``.

Two items a claim; :meth:`DynamoDBTriggerStore.claim_many` puts up to 50 claims in one transaction (100 items:
TransactWriteItems' limit; the claim item is small, at most 48 pinned inputs, so well under its 4 MB), never two
that name one item (DynamoDB refuses a transaction that does). A cancelled transaction answers one reason per item,
in order: the claims whose condition failed are answered from them, and the others are made again in a new
transaction without them (a cancelled transaction writes nothing). One cancelled by a concurrent transaction on one
of its items (``TransactionConflict``: likelier the more items it holds) is made again claim by claim, so a conflict
fails the caller only where a claim of its own would have met it. Triggers are listed per rule through GSI1,
newest first.

A replay or manual run under an Idempotency-Key is one transaction too: its claim (``attribute_not_exists``)
and ``REQUEST#<key>`` / ``REQUEST`` with the first answer (absent, or past its ``expiresAt``: DynamoDB's TTL
deletes lazily), so two racing requests with one key claim one run, and the loser gets the winner's answer
back through ``ALL_OLD``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import batch_get, integral
from lakehook.adapters.dynamodb.pagination import decode_token, encode_token
from lakehook.adapters.dynamodb.transactions import (
    CONDITION_FAILED,
    CONFLICT,
    cancellation_reasons,
    is_retryable_cancel,
    old_item,
    reason_code,
)
from lakehook.domain.confirmation import Confirmation
from lakehook.domain.replay_choices import variables_json
from lakehook.domain.requests import RecordedRequest
from lakehook.domain.triggers import (
    FailureKind,
    GroupCursor,
    PinnedInput,
    RunState,
    SlotWait,
    Trigger,
    TriggerStatus,
    Window,
)
from lakehook.ports.rules import (
    MAX_CLAIMS_PER_TRANSACTION,
    Claim,
    ClaimOutcome,
    ClaimResult,
    GroupRef,
    RequestClaim,
    TriggerStore,
)
from lakehook.ports.store import Page

MAX_LIST_PAGES = 10  # a status filter may thin pages out; stop after this many reads
REQUEST_ATTEMPTS = 5  # a transaction cancelled by a racing one on the same items is tried again


def trigger_item(trigger: Trigger) -> dict[str, Any]:
    """The claim item: plain attributes, so the dispatcher can update status and attempts in place."""
    item: dict[str, Any] = {
        **keys.trigger_item_key(trigger.trigger_key),
        keys.ITEM_TYPE: "TRIGGER",
        "triggerKey": trigger.trigger_key,
        "ruleId": trigger.rule_id,
        "groupId": trigger.group_id,
        "status": trigger.status.value,
        "inputs": [p.model_dump(by_alias=True, exclude_none=True) for p in trigger.inputs],
        "replayEpoch": trigger.replay_epoch,
        "sequence": trigger.sequence,
        "attempts": trigger.attempts,
        "createdAt": trigger.created_at,
        "updatedAt": trigger.updated_at,
        "GSI1PK": keys.triggers_index_pk(trigger.rule_id),
        "GSI1SK": keys.triggers_index_sk(trigger.created_at, trigger.sequence, trigger.trigger_key),
    }
    if trigger.window is not None:
        item["window"] = {"start": trigger.window.start, "end": trigger.window.end}
    for name, value in (
        ("manifestUri", trigger.manifest_uri),
        ("reason", trigger.reason),
        ("targetRunId", trigger.target_run_id),
        ("replayOf", trigger.replay_of),
        ("partition", trigger.partition),
        ("startFrom", trigger.start_from),
        # JSON text: a float is no DynamoDB number, and the variables come back exactly as they were sent
        ("replayVariables", variables_json(trigger.variables) if trigger.variables is not None else None),
    ):
        if value is not None:
            item[name] = value
    if trigger.in_order:
        item["inOrder"] = True  # its SUCCEEDED wakes the resolver (head of line, per partition)
    return item


def trigger_from_item(item: dict[str, Any]) -> Trigger:
    """The claim, with the dispatcher's bookkeeping a reader needs (``failure``, ``nextAttemptAt``, …)."""
    data = integral(item)
    status = TriggerStatus(data["status"])
    failure = None
    if status is TriggerStatus.FAILED:
        failure = FailureKind.RETRYABLE if data.get("retryable") else FailureKind.FINAL
    run_state = data.get("runState")
    return Trigger(
        trigger_key=data["triggerKey"],
        rule_id=data["ruleId"],
        group_id=data["groupId"],
        status=status,
        inputs=tuple(PinnedInput.model_validate(p) for p in data.get("inputs", [])),
        window=Window.model_validate(data["window"]) if data.get("window") else None,
        replay_epoch=data.get("replayEpoch", 0),
        sequence=data.get("sequence", 0),
        attempts=data.get("attempts", 0),
        created_at=data["createdAt"],
        updated_at=data["updatedAt"],
        manifest_uri=data.get("manifestUri"),
        reason=data.get("reason"),
        target_run_id=data.get("targetRunId"),
        replay_of=data.get("replayOf"),
        start_from=data.get("startFrom"),
        variables=json.loads(data["replayVariables"]) if data.get("replayVariables") is not None else None,
        partition=data.get("partition"),
        in_order=bool(data.get("inOrder", False)),
        run_status=data.get("runStatus"),
        completed_at=data.get("completedAt"),
        outlets=tuple(data["runOutlets"]) if data.get("runOutlets") is not None else None,
        failure=failure,
        failure_code=data.get("failureCode"),
        failing_since=data.get("failingSince") if failure is not None else None,
        next_attempt_at=data.get("nextAttemptAt") if failure is FailureKind.RETRYABLE else None,
        retries=data.get("retries", 0),
        run_state=RunState.model_validate(run_state) if isinstance(run_state, dict) else None,
        confirm_by=data.get("confirmBy"),
        confirmation=Confirmation.model_validate(data["confirmation"]) if data.get("confirmation") else None,
        # only a TRIGGERING claim waits (a wait left by a write that lost a race to the claim's dispatch means nothing)
        slot_wait=SlotWait(since=data["slotWaitSince"])
        if status is TriggerStatus.TRIGGERING and data.get("slotWaitSince") is not None
        else None,
    )


def request_item(request: RecordedRequest) -> dict[str, Any]:
    return {
        **keys.request_item_key(request.key),
        keys.ITEM_TYPE: "REQUEST",
        "requestKey": request.key,
        "fingerprint": request.fingerprint,
        "status": request.status,
        "body": json.dumps(request.body, separators=(",", ":"), sort_keys=True),
        "triggerKey": request.trigger_key,
        "createdAt": request.created_at,
        keys.TTL_ATTRIBUTE: request.expires_at,
    }


def request_from_item(item: dict[str, Any]) -> RecordedRequest:
    data = integral(item)
    return RecordedRequest(
        key=data["requestKey"],
        fingerprint=data["fingerprint"],
        status=data["status"],
        body=json.loads(data["body"]),
        trigger_key=data["triggerKey"],
        created_at=data["createdAt"],
    )


def cursor_item(cursor: GroupCursor) -> dict[str, Any]:
    return {
        **keys.cursor_key(cursor.rule_id, cursor.group_id),
        keys.ITEM_TYPE: "CURSOR",
        "ruleId": cursor.rule_id,
        "groupId": cursor.group_id,
        "seq": cursor.seq,
        "body": cursor.to_json(),
        **({"lateSeq": cursor.late_seq} if cursor.late_seq else {}),
    }


def cursor_from_item(item: dict[str, Any]) -> GroupCursor:
    """The cursor an item holds: its body (none yet when only late snapshots were noted on it) and the late ones."""
    if "body" in item:
        cursor = GroupCursor.model_validate_json(item["body"])
    else:
        cursor = GroupCursor.initial(str(item["ruleId"]), str(item["groupId"]))
    late = int(item.get("lateSeq", 0))
    if not late:
        return cursor
    orders = tuple(sorted(int(o) for o in item.get("lateOrders") or ()))
    seen = tuple(sorted(_first_seen_entry(str(entry)) for entry in item.get("firstSeen") or ()))
    return cursor.model_copy(update={"late_seq": late, "late_orders": orders, "first_seen": seen})


def _first_seen_entry(entry: str) -> tuple[str, int]:
    """``<order> <asset key>``, one member of the cursor's ``firstSeen`` string set (an asset key has no space)."""
    order, _, asset_key = entry.partition(" ")
    return asset_key, int(order)


def cursor_condition(expected: GroupCursor | None) -> dict[str, Any]:
    """What a claim's cursor put requires: the cursor as ``expected`` (its seq and its late snapshots noted)."""
    seq, late = (expected.seq, expected.late_seq) if expected is not None else (0, 0)
    if seq == 0 and late == 0:
        return {"ConditionExpression": "attribute_not_exists(PK)"}
    claimed = "seq = :expected" if seq else "attribute_not_exists(seq)"
    noted = "lateSeq = :late" if late else "attribute_not_exists(lateSeq)"
    values = {**({":expected": seq} if seq else {}), **({":late": late} if late else {})}
    return {"ConditionExpression": f"{claimed} AND {noted}", "ExpressionAttributeValues": values}


def claim_actions(table: str, claim: Claim) -> list[dict[str, Any]]:
    """A claim's two puts: the claim item (its key absent) and the group cursor (as ``expected``, its old image
    returned when not)."""
    put_cursor: dict[str, Any] = {
        "TableName": table,
        "Item": cursor_item(claim.cursor),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    put_cursor.update(cursor_condition(claim.expected))
    put_claim = {
        "TableName": table,
        "Item": trigger_item(claim.trigger),
        "ConditionExpression": "attribute_not_exists(PK)",
    }
    return [{"Put": put_claim}, {"Put": put_cursor}]


def failed_claims(reasons: list[dict[str, Any]] | None, count: int) -> dict[int, ClaimResult] | None:
    """The claims (by position) a cancelled transaction of ``count`` claims failed the condition of, and what each
    found; None when a claim's item was refused for another reason (a concurrent transaction, a throttle): its
    outcome is not known."""
    if not reasons or len(reasons) != 2 * count:
        return None
    lost: dict[int, ClaimResult] = {}
    for position in range(count):
        claim_reason, cursor_reason = reasons[2 * position], reasons[2 * position + 1]
        codes = (reason_code(claim_reason), reason_code(cursor_reason))
        if CONDITION_FAILED in codes:
            seen = old_item(cursor_reason) if codes[1] == CONDITION_FAILED else None
            now = cursor_from_item(seen) if seen else None
            outcome = ClaimOutcome.DUPLICATE if codes[0] == CONDITION_FAILED else ClaimOutcome.CURSOR_MOVED
            lost[position] = ClaimResult(outcome, now)
        elif codes != ("None", "None"):
            return None
    return lost or None


def _one_transaction(claims: Sequence[Claim], waiting: Sequence[int]) -> list[int]:
    """The first of ``waiting`` (positions in ``claims``) that one transaction makes: in order, at most
    ``MAX_CLAIMS_PER_TRANSACTION``, up to the first that names a cursor or a key already in it (so a claim on the
    cursor an earlier one moves is made after it)."""
    chunk: list[int] = []
    named: set[object] = set()
    for i in waiting[:MAX_CLAIMS_PER_TRANSACTION]:
        items = {claims[i].ref, claims[i].trigger.trigger_key}
        if named & items:
            break
        named |= items
        chunk.append(i)
    return chunk


class DynamoDBTriggerStore(TriggerStore):
    """Claims and cursors on the single table."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        return self.claim_many([Claim(trigger, cursor, expected)])[0]

    def claim_many(self, claims: Sequence[Claim]) -> list[ClaimResult]:
        """Transactions of up to ``MAX_CLAIMS_PER_TRANSACTION`` claims (the claims in order, a transaction ending
        before a claim whose cursor or key is in it already: one transaction names an item once). A cancelled one
        answers the claims whose condition failed and is made again without them: its other claims were not. One
        that a concurrent write conflicted with is made again claim by claim, each its own transaction as
        :meth:`claim` makes it, so a conflict raises only where a claim of its own would have met it."""
        answers: dict[int, ClaimResult] = {}
        waiting = list(range(len(claims)))
        while waiting:
            chunk = _one_transaction(claims, waiting)
            try:
                lost = self._transact([claims[i] for i in chunk])
            except ClientError as exc:
                if len(chunk) == 1 or not is_retryable_cancel(exc):
                    raise  # a throttle, or a claim of its own that met a conflict: let the batch retry
                lost = {n: self._alone(claims[i]) for n, i in enumerate(chunk)}
            for position, i in enumerate(chunk):
                if lost is None:
                    answers[i] = ClaimResult(ClaimOutcome.CLAIMED, claims[i].cursor)
                elif position in lost:
                    answers[i] = lost[position]
            waiting = [i for i in waiting if i not in answers]
        return [answers[i] for i in range(len(claims))]

    def _alone(self, claim: Claim) -> ClaimResult:
        """One claim, its own transaction."""
        lost = self._transact([claim])
        return ClaimResult(ClaimOutcome.CLAIMED, claim.cursor) if lost is None else lost[0]

    def _transact(self, claims: Sequence[Claim]) -> dict[int, ClaimResult] | None:
        """One transaction of ``claims``: None when it was made, else the claims whose condition failed (by
        position), none of the others made. A conflict with a concurrent transaction or a throttle raises."""
        actions: list[dict[str, Any]] = []
        for claim in claims:
            actions += claim_actions(self._name, claim)
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            lost = failed_claims(cancellation_reasons(exc), len(claims))
            if lost is None:
                raise
            return lost
        return None

    def admit_late(
        self, refs: Collection[GroupRef], order: int, asset_key: str | None = None
    ) -> dict[GroupRef, GroupCursor]:
        noted: dict[GroupRef, GroupCursor] = {}
        seen = ", firstSeen :seen" if asset_key is not None else ""
        for rule_id, group_id in refs:
            answer = self._table.update_item(
                Key=keys.cursor_key(rule_id, group_id),
                UpdateExpression=f"ADD lateSeq :one, lateOrders :order{seen} "
                "SET #type = if_not_exists(#type, :cursor), ruleId = if_not_exists(ruleId, :rule), "
                "groupId = if_not_exists(groupId, :group)",
                ExpressionAttributeNames={"#type": keys.ITEM_TYPE},
                ExpressionAttributeValues={
                    ":one": 1,
                    ":order": {order},
                    **({":seen": {f"{order} {asset_key}"}} if asset_key is not None else {}),
                    ":cursor": "CURSOR",
                    ":rule": rule_id,
                    ":group": group_id,
                },
                ReturnValues="ALL_NEW",
            )
            noted[(rule_id, group_id)] = cursor_from_item(answer["Attributes"])
        return noted

    def forget_unstarted(self, refs: Collection[GroupRef]) -> None:
        for rule_id, group_id in refs:
            try:  # only a cursor no claim moved: a claim's put writes seq
                self._table.delete_item(
                    Key=keys.cursor_key(rule_id, group_id), ConditionExpression="attribute_not_exists(seq)"
                )
            except ClientError as exc:
                if not is_conditional_failure(exc):
                    raise

    def note_first_seen(self, ref: GroupRef, orders: Mapping[str, int]) -> GroupCursor:
        rule_id, group_id = ref
        answer = self._table.update_item(
            Key=keys.cursor_key(rule_id, group_id),
            UpdateExpression="ADD lateSeq :one, firstSeen :seen "
            "SET #type = if_not_exists(#type, :cursor), ruleId = if_not_exists(ruleId, :rule), "
            "groupId = if_not_exists(groupId, :group)",
            ExpressionAttributeNames={"#type": keys.ITEM_TYPE},
            ExpressionAttributeValues={
                ":one": 1,
                ":seen": {f"{order} {asset_key}" for asset_key, order in orders.items()},
                ":cursor": "CURSOR",
                ":rule": rule_id,
                ":group": group_id,
            },
            ReturnValues="ALL_NEW",
        )
        return cursor_from_item(answer["Attributes"])

    def put_replay(self, trigger: Trigger) -> bool:
        try:
            self._table.put_item(Item=trigger_item(trigger), ConditionExpression="attribute_not_exists(PK)")
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def put_replay_once(self, trigger: Trigger, request: RecordedRequest) -> RequestClaim:
        put_request = {
            "TableName": self._name,
            "Item": request_item(request),
            "ConditionExpression": "attribute_not_exists(PK) OR #expires <= :now",
            "ExpressionAttributeNames": {"#expires": keys.TTL_ATTRIBUTE},
            "ExpressionAttributeValues": {":now": request.created_at // 1000},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        put_claim = {
            "TableName": self._name,
            "Item": trigger_item(trigger),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
        for attempt in range(REQUEST_ATTEMPTS):
            try:
                self._client.transact_write_items(TransactItems=[{"Put": put_claim}, {"Put": put_request}])
            except ClientError as exc:
                reasons = cancellation_reasons(exc)
                if not reasons or len(reasons) != 2:
                    raise
                claim_reason, request_reason = (reason_code(r) for r in reasons)
                if request_reason == CONDITION_FAILED:
                    seen = old_item(reasons[1])
                    if seen is None:  # moto or an old item without the image: read it
                        return RequestClaim(False, self.get_request(request.key, request.created_at))
                    return RequestClaim(False, request_from_item(seen))
                if claim_reason == CONDITION_FAILED and request_reason != CONFLICT:
                    return RequestClaim(False)
                if CONFLICT in (claim_reason, request_reason) and attempt + 1 < REQUEST_ATTEMPTS:
                    time.sleep(0.05 * (attempt + 1))  # a racing request on the same key: its answer is next
                    continue
                raise
            return RequestClaim(True)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def get_request(self, key: str, now_ms: int) -> RecordedRequest | None:
        item = self._table.get_item(Key=keys.request_item_key(key), ConsistentRead=True).get("Item")
        if item is None or int(item.get(keys.TTL_ATTRIBUTE, 0)) <= now_ms // 1000:
            return None
        return request_from_item(item)

    def get(self, trigger_key: str) -> Trigger | None:
        item = self._table.get_item(Key=keys.trigger_item_key(trigger_key), ConsistentRead=True).get("Item")
        return None if item is None else trigger_from_item(item)

    def get_many(self, trigger_keys: Collection[str]) -> dict[str, Trigger]:
        """Consistent BatchGetItem reads, 100 keys a request."""
        wanted = [keys.trigger_item_key(k) for k in dict.fromkeys(trigger_keys)]
        found = batch_get(self._table.meta.client, self._table.name, wanted) if wanted else []
        triggers = (trigger_from_item(item) for item in found)
        return {t.trigger_key: t for t in triggers}

    def list_for_rule(
        self, rule_id: str, status: TriggerStatus | None = None, limit: int = 50, next_token: str | None = None
    ) -> Page[Trigger]:
        kwargs: dict[str, Any] = {
            "IndexName": keys.GSI1,
            "KeyConditionExpression": Key("GSI1PK").eq(keys.triggers_index_pk(rule_id)),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if status is not None:
            kwargs["FilterExpression"] = Attr("status").eq(status.value)
        # a token names its rule's partition: one of another listing is a 400, never a malformed start key (a 500)
        start = decode_token(
            next_token, {"PK": None, "SK": None, "GSI1PK": keys.triggers_index_pk(rule_id), "GSI1SK": None}
        )
        if start:
            kwargs["ExclusiveStartKey"] = start
        items: list[Trigger] = []
        last: dict[str, Any] | None = None
        for _ in range(MAX_LIST_PAGES):
            kwargs["Limit"] = limit - len(items)
            answer = self._table.query(**kwargs)
            items.extend(trigger_from_item(i) for i in answer.get("Items", []))
            last = answer.get("LastEvaluatedKey")
            if last is None or len(items) >= limit:
                break
            kwargs["ExclusiveStartKey"] = last
        return Page(items, encode_token(last))

    def get_cursors(self, refs: Collection[GroupRef]) -> dict[GroupRef, GroupCursor]:
        found = batch_get(self._client, self._name, [keys.cursor_key(r, g) for r, g in refs])
        cursors = (cursor_from_item(i) for i in found)
        return {(c.rule_id, c.group_id): c for c in cursors}
