"""DynamoDBTriggerLedger: dispatch bookkeeping on the resolver's claim items ``TRIGGER#<key>`` / ``CLAIM``.

The claim item (see ``trigger_store.trigger_item``) already has ``status``, ``attempts``, ``updatedAt``,
``manifestUri``, ``reason`` and ``targetRunId``; the ledger updates those in place and adds:

- ``leaseOwner`` / ``leaseUntil`` (epoch ms): who is dispatching it now; a lease stops two dispatchers
  (a redelivered stream record and the compensator) from working on one key at the same time;
- ``lastAttemptAt`` (epoch ms): when the last attempt began (the settle time counts from it);
- ``retryable`` (bool), ``nextAttemptAt`` (epoch ms), ``failureCode``: how a FAILED claim is re-driven;
- ``failingSince`` (epoch ms): when the current run of failures with ``failureCode`` began (a bounded
  retry window, e.g. Airflow's DAG 404, counts from it);
- ``runState`` (map ``state``, ``detail``, ``checkedAt``): what the target said about the started run;
- ``slotWaitSince`` (epoch ms): the claim waits for a run slot (its rule's ``maxInFlight``); ``wake`` = ``SLOT`` marks
  the update that hands it a slot (and wakes the dispatcher, as a retry by hand does);
- ``attemptsBase``, ``retries``, ``retriedAt``: a retry by hand (:meth:`retry`) starts the attempt budget
  again from ``attemptsBase`` = ``attempts``; ``wake`` = ``RETRY`` marks the update that must wake the
  dispatcher (its FilterCriteria match it), and the next attempt removes it;
- ``runStatus``, ``completedAt``, ``runOutlets``, ``completionDigest``: what the run reported through
  ``POST /runs/{triggerKey}/complete``, written once (``attribute_not_exists(runStatus)``): the first
  terminal status wins, and the digest tells a repeat of it from a different completion;
- ``confirmBy`` (epoch ms, set with SUCCEEDED for a rule with ``confirm``) and ``confirmation`` (map ``state``
  CONFIRMED or NOT_ADVANCED, ``decidedAt``, and the confirming commit's ``assetKey``, ``snapshotId``,
  ``commitTime``, ``late``): whether an outlet commit carrying the key confirmed the run
  (:mod:`lakehook.domain.confirmation`), each write conditional on the confirmation it replaces.

Every change is ONE conditional UpdateItem: taking an attempt is conditional on the status and the
lease, marking is conditional on still holding the lease, so two dispatchers never both mark.

Finding claims to re-drive (:meth:`pending`) uses the per-rule trigger index the resolver keeps on
GSI1 (``TRIGGERS#<ruleId>`` / ``<createdAt>#<seq>#<key>``): one query per rule, limited to claims
created within ``lookback_ms``, filtered to open ones. Rules are read from GSI1 ``RULES``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import integral
from lakehook.adapters.dynamodb.trigger_store import trigger_from_item
from lakehook.domain.completion import CompletionRecord, RecordOutcome
from lakehook.domain.confirmation import Confirmation, ConfirmationState
from lakehook.domain.errors import NotFoundError
from lakehook.domain.triggers import WAITING_RUN_STATES, RunState, Trigger, TriggerNotRetryableError, TriggerStatus
from lakehook.ports.dispatch import Attempt, LedgerEntry, TriggerLedger

DEFAULT_LOOKBACK_MS = 7 * 86_400_000
_DESERIALIZER = TypeDeserializer()

WAKE_RETRY = "RETRY"
WAKE_SLOT = "SLOT"  # a claim that waited for a run slot (maxInFlight) took one
WAKES = (WAKE_RETRY, WAKE_SLOT)

# FilterCriteria of the dispatcher's DynamoDB event source: a claim created to be dispatched, and a FAILED
# claim retried by hand (the one update that carries ``wake``). The ledger's own updates (leases, marks)
# must not wake the dispatcher again: the first attempt removes ``wake``.
DISPATCH_FILTER_PATTERNS: list[dict[str, Any]] = [
    {
        "eventName": ["INSERT"],
        "dynamodb": {"NewImage": {"itemType": {"S": ["TRIGGER"]}, "status": {"S": ["TRIGGERING"]}}},
    },
    {
        "eventName": ["MODIFY"],
        "dynamodb": {
            "NewImage": {
                "itemType": {"S": ["TRIGGER"]},
                "status": {"S": ["TRIGGERING"]},
                "wake": {"S": list(WAKES)},
            }
        },
    },
]

# A claim waiting for a run slot (slotWaitSince) is not stuck: its scope's queue hands it a slot, and the run-slot
# sweep wakes it again if that wake was lost (usecases/run_slots.py); re-driving it would only mark it waiting again,
# and a rule with many waiting would fill every page of this query, starving the other rules' stuck claims.
_OPEN_FILTER = (
    "(#status = :triggering AND updatedAt < :stuck AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)"
    " AND attribute_not_exists(slotWaitSince))"
    " OR (#status = :failed AND retryable = :true AND (attribute_not_exists(nextAttemptAt) OR nextAttemptAt <= :now))"
)


def _text(value: Any) -> str:
    """A string attribute as Lambda (``{"S": ...}``) or Powertools (plain) hands it over."""
    if isinstance(value, Mapping):
        return str(value.get("S", ""))
    return "" if value is None else str(value)


def claimed_trigger_key(record: Any) -> str | None:
    """The trigger key of a stream record that creates a claim to dispatch, or retries one by hand, else None.

    Reads the keys, so it does not depend on the FilterCriteria; a keys-only record (moto's first
    INSERT for an update that creates an item) still names its claim; the dispatcher re-reads it.
    A MODIFY counts only with its new image carrying ``wake`` (a retry by hand).
    """
    raw = getattr(record, "raw_event", record)
    if not isinstance(raw, Mapping) or raw.get("eventName") not in ("INSERT", "MODIFY"):
        return None
    body = raw.get("dynamodb") or {}
    item_keys = body.get("Keys") or {}
    pk, sk = _text(item_keys.get("PK")), _text(item_keys.get("SK"))
    if not pk.startswith(keys.TRIGGER_PREFIX) or sk != keys.CLAIM_SORT:
        return None
    image = body.get("NewImage")
    if raw.get("eventName") == "MODIFY" and (not image or _text(image.get("wake")) not in WAKES):
        return None  # the ledger's own updates
    if image and _text(image.get("status")) not in ("", TriggerStatus.TRIGGERING.value):
        return None  # a SKIPPED claim (or anything else) has no run to start
    return pk[len(keys.TRIGGER_PREFIX) :] or None


def claimed_entry(record: Any) -> LedgerEntry | None:
    """The claim a stream record wakes the dispatcher for, from its new image, so the dispatcher need not read
    it again; None when the record names no claim to dispatch or carries no full image (then the dispatcher
    reads the claim by :func:`claimed_trigger_key`). The image may be stale (a redelivered record): the
    dispatcher's conditional writes are the guard, never this copy."""
    if claimed_trigger_key(record) is None:
        return None
    raw = getattr(record, "raw_event", record)
    image = (raw.get("dynamodb") or {}).get("NewImage") or {}
    if "status" not in image or "ruleId" not in image:  # keys only (moto's first INSERT for an upsert)
        return None
    try:
        return entry_from_item({name: _DESERIALIZER.deserialize(value) for name, value in image.items()})
    except (ValueError, TypeError, KeyError):
        return None  # an image this version cannot read: the dispatcher reads the item instead


def entry_from_item(item: Mapping[str, Any]) -> LedgerEntry:
    data = integral(dict(item))
    return LedgerEntry(
        trigger=trigger_from_item(dict(item)),
        retryable=data.get("retryable"),
        next_attempt_at=data.get("nextAttemptAt"),
        lease_owner=data.get("leaseOwner"),
        lease_until=data.get("leaseUntil"),
        last_attempt_at=data.get("lastAttemptAt"),
        replay_of=data.get("replayOf"),
        failure_code=data.get("failureCode"),
        run_status=data.get("runStatus"),
        completed_at=data.get("completedAt"),
        attempts_base=data.get("attemptsBase", 0),
        failing_since=data.get("failingSince"),
    )


def run_state_item(run_state: RunState) -> dict[str, Any]:
    item: dict[str, Any] = {"state": run_state.state, "checkedAt": run_state.checked_at}
    if run_state.detail is not None:
        item["detail"] = run_state.detail
    return item


class DynamoDBTriggerLedger(TriggerLedger):
    """The ledger on the single table's claim items."""

    def __init__(self, table: Any, lookback_ms: int = DEFAULT_LOOKBACK_MS) -> None:
        self._table = table
        self._lookback_ms = lookback_ms

    def get(self, trigger_key: str) -> LedgerEntry | None:
        item = self._table.get_item(Key=keys.trigger_item_key(trigger_key), ConsistentRead=True).get("Item")
        return None if item is None else entry_from_item(item)

    def begin_attempt(
        self, trigger_key: str, owner: str, now_ms: int, lease_ms: int, redrive: bool = False
    ) -> Attempt | None:
        takeable = (
            "#status = :triggering AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now OR leaseOwner = :owner)"
        )
        values: dict[str, Any] = {
            ":triggering": TriggerStatus.TRIGGERING.value,
            ":now": now_ms,
            ":owner": owner,
            ":until": now_ms + lease_ms,
            ":zero": 0,
            ":one": 1,
        }
        if redrive:
            due = (
                "#status = :failed AND retryable = :true"
                " AND (attribute_not_exists(nextAttemptAt) OR nextAttemptAt <= :now)"
            )
            condition = f"attribute_exists(PK) AND (({takeable}) OR ({due}))"
            values[":failed"] = TriggerStatus.FAILED.value
            values[":true"] = True
        else:
            condition = f"attribute_exists(PK) AND {takeable}"
        try:
            answer = self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression=(
                    "SET #status = :triggering, attempts = if_not_exists(attempts, :zero) + :one, updatedAt = :now, "
                    "leaseOwner = :owner, leaseUntil = :until, lastAttemptAt = :now "
                    "REMOVE retryable, nextAttemptAt, wake, slotWaitSince"
                ),
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return None
            raise
        before = entry_from_item(answer["Attributes"])
        return Attempt(before.trigger.attempts + 1, before, owner)

    def mark_succeeded(
        self,
        trigger_key: str,
        owner: str,
        run_id: str,
        manifest_uri: str | None,
        now_ms: int,
        run_state: RunState | None = None,
        confirm_by: int | None = None,
        releases_next: bool = True,
    ) -> bool:
        sets = ["#status = :succeeded", "targetRunId = :run", "updatedAt = :now"]
        values: dict[str, Any] = {":succeeded": TriggerStatus.SUCCEEDED.value, ":run": run_id, ":now": now_ms}
        if releases_next:  # its SUCCEEDED record wakes the resolver (RESOLVER_FILTER_PATTERNS); others pass it by
            sets.append(f"{keys.RELEASES_NEXT} = :releases")
            values[":releases"] = True
        if confirm_by is not None:
            sets.append("confirmBy = :by")
            values[":by"] = confirm_by
        if manifest_uri:
            sets.append("manifestUri = :uri")
            values[":uri"] = manifest_uri
        if run_state is not None:
            sets.append("runState = :state")
            values[":state"] = run_state_item(run_state)
        removes = "leaseOwner, leaseUntil, reason, retryable, nextAttemptAt, failureCode, failingSince, slotWaitSince"
        return self._mark(trigger_key, owner, f"SET {', '.join(sets)} REMOVE {removes}", values)

    def mark_failed(
        self,
        trigger_key: str,
        owner: str,
        reason: str,
        code: str,
        retryable: bool,
        manifest_uri: str | None,
        now_ms: int,
        next_attempt_at: int | None = None,
        failing_since: int | None = None,
    ) -> bool:
        sets = [
            "#status = :failed",
            "reason = :reason",
            "failureCode = :code",
            "retryable = :retryable",
            "updatedAt = :now",
            "failingSince = :since",
        ]
        values: dict[str, Any] = {
            ":failed": TriggerStatus.FAILED.value,
            ":reason": reason[:1000],
            ":code": code,
            ":retryable": retryable,
            ":now": now_ms,
            ":since": failing_since if failing_since is not None else now_ms,
        }
        removes = ["leaseOwner", "leaseUntil", "slotWaitSince"]
        if retryable and next_attempt_at is not None:
            sets.append("nextAttemptAt = :next")
            values[":next"] = next_attempt_at
        else:
            removes.append("nextAttemptAt")
        if manifest_uri:
            sets.append("manifestUri = :uri")
            values[":uri"] = manifest_uri
        return self._mark(trigger_key, owner, f"SET {', '.join(sets)} REMOVE {', '.join(removes)}", values)

    def _mark(self, trigger_key: str, owner: str, expression: str, values: dict[str, Any]) -> bool:
        try:
            self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression=expression,
                ConditionExpression="#status = :triggering AND leaseOwner = :owner",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={**values, ":triggering": TriggerStatus.TRIGGERING.value, ":owner": owner},
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def retry(self, trigger_key: str, now_ms: int) -> Trigger:
        try:
            answer = self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression=(
                    "SET #status = :triggering, updatedAt = :now, attemptsBase = if_not_exists(attempts, :zero), "
                    "retries = if_not_exists(retries, :zero) + :one, retriedAt = :now, wake = :wake "
                    "REMOVE retryable, nextAttemptAt, failingSince, leaseOwner, leaseUntil"
                ),
                ConditionExpression="attribute_exists(PK) AND #status = :failed",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":triggering": TriggerStatus.TRIGGERING.value,
                    ":failed": TriggerStatus.FAILED.value,
                    ":now": now_ms,
                    ":zero": 0,
                    ":one": 1,
                    ":wake": WAKE_RETRY,
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            old: Mapping[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
            if not old:
                raise NotFoundError(f"trigger {trigger_key!r} does not exist") from exc
            raise TriggerNotRetryableError(trigger_key, TriggerStatus(_text(old.get("status")))) from exc
        return trigger_from_item(answer["Attributes"])

    def record_completion(
        self, trigger_key: str, record: CompletionRecord
    ) -> tuple[RecordOutcome, CompletionRecord | None]:
        try:
            self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression=(
                    "SET runStatus = :run, completedAt = :now, runOutlets = :outlets, completionDigest = :digest"
                ),
                ConditionExpression="attribute_exists(PK) AND #status <> :skipped AND attribute_not_exists(runStatus)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":run": record.run_status,
                    ":now": record.completed_at,
                    ":outlets": list(record.outlets),
                    ":digest": record.digest,
                    ":skipped": TriggerStatus.SKIPPED.value,
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            raw: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
            seen = {k: _DESERIALIZER.deserialize(v) for k, v in raw.items()} if raw else None
            return _lost_to(seen, record)
        return RecordOutcome.RECORDED, record

    def pending(self, now_ms: int, stuck_before_ms: int, limit: int) -> list[LedgerEntry]:
        values = {
            ":triggering": TriggerStatus.TRIGGERING.value,
            ":failed": TriggerStatus.FAILED.value,
            ":true": True,
            ":now": now_ms,
            ":stuck": stuck_before_ms,
        }
        return self._recent(now_ms, _OPEN_FILTER, {"#status": "status"}, values, limit)

    def waiting_runs(self, checked_before_ms: int, limit: int) -> list[LedgerEntry]:
        values: dict[str, Any] = {":succeeded": TriggerStatus.SUCCEEDED.value, ":checked": checked_before_ms}
        waiting = []
        for n, state in enumerate(sorted(WAITING_RUN_STATES)):
            values[f":w{n}"] = state
            waiting.append(f":w{n}")
        condition = (
            "#status = :succeeded AND attribute_not_exists(runStatus) AND runState.checkedAt < :checked"
            f" AND runState.#state IN ({', '.join(waiting)})"
        )
        names = {"#status": "status", "#state": "state"}
        return self._recent(checked_before_ms, condition, names, values, limit)

    def record_confirmation(
        self, trigger_key: str, confirmation: Confirmation, replacing: ConfirmationState | None = None
    ) -> bool:
        names = {"#status": "status"}
        stored = confirmation.model_dump(by_alias=True, mode="json", exclude_none=True)
        values: dict[str, Any] = {":c": stored, ":skipped": TriggerStatus.SKIPPED.value}
        conditions = ["attribute_exists(PK)", "#status <> :skipped"]
        if replacing is None:
            conditions.append("attribute_not_exists(confirmation)")
        else:
            conditions.append("confirmation.#state = :replacing")
            names["#state"] = "state"
            values[":replacing"] = replacing.value
        if confirmation.state is ConfirmationState.NOT_ADVANCED:
            conditions.append("#status = :succeeded AND (attribute_not_exists(runStatus) OR runStatus <> :failed)")
            values.update({":succeeded": TriggerStatus.SUCCEEDED.value, ":failed": TriggerStatus.FAILED.value})
        try:
            self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression="SET confirmation = :c",
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def unconfirmed(self, rule_ids: Collection[str], now_ms: int, limit: int) -> list[LedgerEntry]:
        condition = (
            "#status = :succeeded AND confirmBy <= :now AND attribute_not_exists(confirmation)"
            " AND (attribute_not_exists(runStatus) OR runStatus <> :failed)"
        )
        values = {":succeeded": TriggerStatus.SUCCEEDED.value, ":failed": TriggerStatus.FAILED.value, ":now": now_ms}
        return self._recent(now_ms, condition, {"#status": "status"}, values, limit, rule_ids=rule_ids)

    def record_run_state(self, trigger_key: str, run_state: RunState) -> bool:
        try:
            self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression="SET runState = :state",
                ConditionExpression="#status = :succeeded AND attribute_not_exists(runStatus)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":state": run_state_item(run_state),
                    ":succeeded": TriggerStatus.SUCCEEDED.value,
                },
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def hold_for_slot(self, trigger_key: str, now_ms: int) -> bool:
        # not while a dispatcher holds the claim's lease: it took a slot meanwhile and is starting the run
        return self._while_triggering(
            trigger_key,
            "SET slotWaitSince = if_not_exists(slotWaitSince, :now), updatedAt = :now REMOVE wake",
            now_ms,
            unleased=True,
        )

    def wake_for_slot(self, trigger_key: str, now_ms: int) -> bool:
        return self._while_triggering(
            trigger_key, "SET wake = :wake, updatedAt = :now REMOVE slotWaitSince", now_ms, {":wake": WAKE_SLOT}
        )

    def _while_triggering(
        self,
        trigger_key: str,
        expression: str,
        now_ms: int,
        values: dict[str, Any] | None = None,
        unleased: bool = False,
    ) -> bool:
        condition = "#status = :triggering"
        if unleased:
            condition += " AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)"
        try:
            self._table.update_item(
                Key=keys.trigger_item_key(trigger_key),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    **(values or {}),
                    ":now": now_ms,
                    ":triggering": TriggerStatus.TRIGGERING.value,
                },
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def _recent(
        self,
        now_ms: int,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
        limit: int,
        rule_ids: Iterable[str] | None = None,
    ) -> list[LedgerEntry]:
        """Claims created within the lookback that match ``condition``: one GSI1 query per rule (of ``rule_ids``,
        or of every rule)."""
        found: list[LedgerEntry] = []
        since = keys.triggers_index_sk(max(now_ms - self._lookback_ms, 0), 0, "")
        for rule_id in self._rule_ids() if rule_ids is None else rule_ids:
            kwargs: dict[str, Any] = {
                "IndexName": keys.GSI1,
                "KeyConditionExpression": Key("GSI1PK").eq(keys.triggers_index_pk(rule_id)) & Key("GSI1SK").gte(since),
                "FilterExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
            while len(found) < limit:
                answer = self._table.query(**kwargs)
                found.extend(entry_from_item(i) for i in answer.get("Items", []))
                if "LastEvaluatedKey" not in answer:
                    break
                kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
            if len(found) >= limit:
                break
        found.sort(key=lambda e: (e.trigger.created_at, e.trigger_key))
        return found[:limit]

    def _rule_ids(self) -> Iterator[str]:
        kwargs: dict[str, Any] = {
            "IndexName": keys.GSI1,
            "KeyConditionExpression": Key("GSI1PK").eq(keys.RULES_INDEX_PK),
            "ProjectionExpression": "GSI1SK",
        }
        while True:
            answer = self._table.query(**kwargs)
            for item in answer.get("Items", []):
                yield str(item["GSI1SK"])
            if "LastEvaluatedKey" not in answer:
                return
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _lost_to(item: Mapping[str, Any] | None, record: CompletionRecord) -> tuple[RecordOutcome, CompletionRecord | None]:
    """Why the completion write failed, from the item the condition saw."""
    if not item or item.get("status") == TriggerStatus.SKIPPED.value or item.get("runStatus") is None:
        return RecordOutcome.NO_RUN, None
    data = integral(dict(item))
    stored = CompletionRecord(
        run_status=str(data["runStatus"]),
        outlets=tuple(data.get("runOutlets") or ()),
        completed_at=int(data.get("completedAt") or 0),
        digest=str(data.get("completionDigest") or ""),
    )
    return (RecordOutcome.SAME if stored.digest == record.digest else RecordOutcome.CONFLICT), stored
