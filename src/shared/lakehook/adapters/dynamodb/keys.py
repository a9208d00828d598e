"""Every single-table key is built here, from one prefix enum.

Layout (PK / SK):
- ``ASSET#<assetKey>`` / ``STATE``            the advance-only asset state (streamed to the resolver)
- ``ASSET#<assetKey>`` / ``META``             the asset registration (GSI1: ``ASSETS`` / assetKey)
- ``ASSET#<assetKey>`` / ``EVENT#<eventId>``  a raw event, TTL ``expiresAt`` (GSI1: ``EVENTS#<assetKey>`` / time;
  one naming a snapshot also GSI2: ``EVENTS#<assetKey>`` / its snapshot's order, for version ranges)
- ``ASSET#<assetKey>`` / ``PARTS#<order>#<snapshotId>#<part>`` the keys a snapshot touched past its event's
  bound, one chunk an item (``itemType`` ``PARTITIONS``, streamed to the resolver), TTL as its event
- ``ASSET#<assetKey>`` / ``POLL``             the asset's poll status (last poll, last error, backoff)
- ``PRODUCER#<id>``    / ``META``             a producer (GSI1: ``PRODUCERS`` / id)
- ``WM#<namespace>#<assetKey>`` / ``KEY#<key>`` a watermark
- ``EVSOURCE#<source>`` / ``OWNER``         the producer an EventBridge source belongs to (``producerId``)
- ``WATCH#<watchKey>`` / ``ASSET#<assetKey>`` a registered table under a commit notice's key (``TABLE#db.t``,
  ``LOCATION#s3://…``; see ``domain.commit_notices``)
"""

from __future__ import annotations

import hashlib
from enum import StrEnum


class Prefix(StrEnum):
    ASSET = "ASSET#"
    EVENT = "EVENT#"
    EVENTS = "EVENTS#"
    PRODUCER = "PRODUCER#"
    WATERMARK = "WM#"
    KEY = "KEY#"
    WATCH = "WATCH#"
    EVENT_SOURCE = "EVSOURCE#"


class Sort(StrEnum):
    STATE = "STATE"
    META = "META"
    POLL = "POLL"


ASSETS_INDEX_PK = "ASSETS"
PRODUCERS_INDEX_PK = "PRODUCERS"
GSI1 = "GSI1"
TTL_ATTRIBUTE = "expiresAt"
ITEM_TYPE = "itemType"
RELEASES_NEXT = "releasesNext"  # on a SUCCEEDED claim whose success releases its group's next version (EACH_VERSION)


def asset_pk(asset_key: str) -> str:
    return f"{Prefix.ASSET}{asset_key}"


def state_key(asset_key: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": Sort.STATE}


def asset_meta_key(asset_key: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": Sort.META}


def event_key(asset_key: str, event_id: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": f"{Prefix.EVENT}{event_id}"}


PARTS_PREFIX = "PARTS#"


def partition_part_key(asset_key: str, order: int, snapshot_id: int, part: int) -> dict[str, str]:
    """A part of a snapshot's touched partitions: by the snapshot's order (then id, for formats where two snapshots
    may share one), then the part's number."""
    return {"PK": asset_pk(asset_key), "SK": f"{PARTS_PREFIX}{max(order, 0):020d}#{snapshot_id:020d}#{part:06d}"}


def partition_parts_prefix(order: int) -> str:
    return f"{PARTS_PREFIX}{max(order, 0):020d}#"


def events_index_pk(asset_key: str) -> str:
    return f"{Prefix.EVENTS}{asset_key}"


def events_index_sk(received_at_ms: int, event_id: str) -> str:
    return f"{received_at_ms:015d}#{event_id}"


GSI2 = "GSI2"  # an asset's events by their snapshot's order (items from 0.1.0 have no GSI2 key: not in it)
_LAST = "~"  # sorts after every event id (hex digits): the top of a key range


def events_received_range(low_ms: int, high_ms: int) -> tuple[str, str]:
    """The GSI1 sort keys of the events received from ``low_ms`` to ``high_ms``, both included."""
    return f"{low_ms:015d}#", f"{high_ms:015d}#{_LAST}"


def events_version_sk(order: int, event_id: str) -> str:
    return f"{order:020d}#{event_id}"


def events_version_range(low: int, high: int) -> tuple[str, str]:
    """The GSI2 sort keys of the events whose snapshot's order is from ``low`` to ``high``, both included."""
    return f"{low:020d}#", f"{high:020d}#{_LAST}"


def producer_key(producer_id: str) -> dict[str, str]:
    return {"PK": f"{Prefix.PRODUCER}{producer_id}", "SK": Sort.META}


def watermark_pk(namespace: str, asset_key: str) -> str:
    return f"{Prefix.WATERMARK}{namespace}#{asset_key}"


def watermark_key(namespace: str, asset_key: str, key: str) -> dict[str, str]:
    return {"PK": watermark_pk(namespace, asset_key), "SK": f"{Prefix.KEY}{key}"}


def watch_key(watch: str, asset_key: str) -> dict[str, str]:
    return {"PK": f"{Prefix.WATCH}{watch}", "SK": asset_pk(asset_key)}


def event_source_key(source: str) -> dict[str, str]:
    return {"PK": f"{Prefix.EVENT_SOURCE}{source}", "SK": "OWNER"}


def poll_status_key(asset_key: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": Sort.POLL}


# --- the resolver: rules, reverse index, claims, cursors, deferrals, state history ---------------
# - ``RULE#<ruleId>``    / ``META``              a rule (GSI1: ``RULES`` / ruleId)
# - ``ASSET#<assetKey>`` / ``RULE#<ruleId>``     reverse index: a copy of the rule under each member asset
# - ``RULE#<ruleId>``    / ``CURSOR#<groupId>``  the group's last triggered versions (CAS on ``seq``)
# - ``RULE#<ruleId>``    / ``DEFER#<groupId>``   a deferred re-evaluation (GSI1 while pending: ``DEFERRED`` / due)
# - ``TRIGGER#<key>``    / ``CLAIM``             a trigger claim (GSI1: ``TRIGGERS#<ruleId>`` / created, seq)
# - ``REQUEST#<key>``    / ``REQUEST``           the first answer to a request under an Idempotency-Key (TTL, 7 days)
# - ``ASSET#<assetKey>`` / ``HIST#<version>``    a past state image, for EACH_VERSION rules (TTL)
# - ``ASSET#<assetKey>`` / ``SNAPLOG#<order>``   an accepted snapshot by its order, for EACH_VERSION rules (TTL)
# - ``ASSET#<assetKey>`` / ``RECHECK``           re-evaluate the asset's rules (a failed batch; GSI1 like a deferral)
# - ``RULE#<ruleId>``    / ``CURSOR#<groupId>#P<hash>``    one partition's cursor (triggers.partition_cursor_id)
# - ``ASSET#<assetKey>`` / ``PFACT#<mapping>#<partition>`` the newest data commit touching a partition
# - ``RULE#<ruleId>``    / ``PPEND#<groupId>#<partition>`` a partition of a partitioned group that is pending
# - ``ASSET#<assetKey>`` / ``PVER#<mapping>#<hash>#<order>`` a data commit touching a partition (EACH_VERSION, TTL)
# - ``ASSET#<assetKey>`` / ``PCOMMIT#<order>``   a commit whose partitions are known, or in part (EACH_VERSION, TTL)
# - ``ASSET#<assetKey>`` / ``PPIECES#<order>``   the pieces kept of a commit known in part (EACH_VERSION, TTL)

RULE_PREFIX = "RULE#"
CURSOR_PREFIX = "CURSOR#"
DEFER_PREFIX = "DEFER#"
TRIGGER_PREFIX = "TRIGGER#"
TRIGGERS_PREFIX = "TRIGGERS#"
HISTORY_PREFIX = "HIST#"
SNAPLOG_PREFIX = "SNAPLOG#"
CLAIM_SORT = "CLAIM"
REQUEST_PREFIX = "REQUEST#"
REQUEST_SORT = "REQUEST"
RULES_INDEX_PK = "RULES"
DEFERRED_INDEX_PK = "DEFERRED"


def rule_pk(rule_id: str) -> str:
    return f"{RULE_PREFIX}{rule_id}"


def rule_meta_key(rule_id: str) -> dict[str, str]:
    return {"PK": rule_pk(rule_id), "SK": Sort.META}


def rule_index_key(asset_key: str, rule_id: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": f"{RULE_PREFIX}{rule_id}"}


def cursor_key(rule_id: str, group_id: str) -> dict[str, str]:
    return {"PK": rule_pk(rule_id), "SK": f"{CURSOR_PREFIX}{group_id}"}


PARTITION_FACT_PREFIX = "PFACT#"
PENDING_PARTITION_PREFIX = "PPEND#"
PARTITION_VERSION_PREFIX = "PVER#"
PARTITION_COMMIT_PREFIX = "PCOMMIT#"  # EACH_VERSION per partition: the commits whose partitions are known
PARTITION_PIECES_PREFIX = "PPIECES#"  # EACH_VERSION per partition: the pieces kept of a commit known in part


def partition_fact_key(asset_key: str, mapping: str, partition: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": f"{PARTITION_FACT_PREFIX}{mapping}#{partition}"}


def partition_versions_prefix(mapping: str, partition: str) -> str:
    """The versions of one (mapping, partition): the partition key hashed to a fixed width, so no key's versions
    reach into another's range (a key may hold ``#``)."""
    digest = hashlib.sha256(partition.encode()).hexdigest()[:32]
    return f"{PARTITION_VERSION_PREFIX}{mapping}#{digest}#"


def partition_version_key(asset_key: str, mapping: str, partition: str, order: int) -> dict[str, str]:
    """Fixed width, so a partition's versions sort by order."""
    return {"PK": asset_pk(asset_key), "SK": f"{partition_versions_prefix(mapping, partition)}{max(order, 0):020d}"}


def partition_commit_key(asset_key: str, order: int) -> dict[str, str]:
    """Fixed width, so a table's commits sort by order."""
    return {"PK": asset_pk(asset_key), "SK": f"{PARTITION_COMMIT_PREFIX}{max(order, 0):020d}"}


def partition_pieces_key(asset_key: str, order: int) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": f"{PARTITION_PIECES_PREFIX}{max(order, 0):020d}"}


def pending_partitions_prefix(group_id: str) -> str:
    return f"{PENDING_PARTITION_PREFIX}{group_id}#"


def pending_partition_key(rule_id: str, group_id: str, partition: str) -> dict[str, str]:
    return {"PK": rule_pk(rule_id), "SK": f"{pending_partitions_prefix(group_id)}{partition}"}


def deferral_key(rule_id: str, group_id: str) -> dict[str, str]:
    return {"PK": rule_pk(rule_id), "SK": f"{DEFER_PREFIX}{group_id}"}


def deferred_index_sk(due_at_ms: int, rule_id: str, group_id: str) -> str:
    return f"{due_at_ms:015d}#{rule_id}#{group_id}"


RECHECK_SORT = "RECHECK"


def recheck_key(asset_key: str) -> dict[str, str]:
    """``ASSET#<assetKey>`` / ``RECHECK``: re-evaluate every rule of the asset (indexed like a deferral)."""
    return {"PK": asset_pk(asset_key), "SK": RECHECK_SORT}


def trigger_item_key(trigger_key: str) -> dict[str, str]:
    return {"PK": f"{TRIGGER_PREFIX}{trigger_key}", "SK": CLAIM_SORT}


def request_item_key(request_key: str) -> dict[str, str]:
    return {"PK": f"{REQUEST_PREFIX}{request_key}", "SK": REQUEST_SORT}


def triggers_index_pk(rule_id: str) -> str:
    return f"{TRIGGERS_PREFIX}{rule_id}"


def triggers_index_sk(created_at_ms: int, sequence: int, trigger_key: str) -> str:
    return f"{created_at_ms:015d}#{sequence:010d}#{trigger_key}"


def history_key(asset_key: str, version: int) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": f"{HISTORY_PREFIX}{version:012d}"}


def snapshot_log_key(asset_key: str, order: int) -> dict[str, str]:
    """Fixed width, so the log sorts by order (Paimon ids and Iceberg sequence numbers are non-negative)."""
    return {"PK": asset_pk(asset_key), "SK": f"{SNAPLOG_PREFIX}{max(order, 0):020d}"}


# --- coverage: merged [start, end) intervals, one item per asset (and partition) per UTC day -----
# - ``ASSET#<assetKey>`` / ``COVERAGE#<scope>#<yyyy-mm-dd>``  varint-encoded spans (CAS on ``version``)
#   ``<scope>`` is ``-`` for the asset as a whole, ``P<hash>`` for one partition key: fixed-width, so
#   a partition key can never reach into another scope's range of days.

COVERAGE_PREFIX = "COVERAGE#"
COVERAGE_ASSET_SCOPE = "-"


def coverage_scope(partition_key: str | None) -> str:
    if partition_key is None:
        return COVERAGE_ASSET_SCOPE
    import hashlib

    return "P" + hashlib.sha256(partition_key.encode()).hexdigest()[:24]


def coverage_sk(partition_key: str | None, day: str) -> str:
    return f"{COVERAGE_PREFIX}{coverage_scope(partition_key)}#{day}"


def coverage_key(asset_key: str, partition_key: str | None, day: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": coverage_sk(partition_key, day)}


# --- dispatch: aliases ----------------------------------------------------------------------------
# - ``ALIAS#<name>``     / ``META``              an alias and the assets it resolves to (GSI1: ``ALIASES`` / name)
# (Dispatch state lives on the resolver's claim items ``TRIGGER#<key>`` / ``CLAIM``; see trigger_ledger.py.)

ALIAS_PREFIX = "ALIAS#"
ALIASES_INDEX_PK = "ALIASES"


def alias_key(name: str) -> dict[str, str]:
    return {"PK": f"{ALIAS_PREFIX}{name}", "SK": Sort.META}


# --- dispatch: run slots (a rule's maxInFlight) ---------------------------------------------------
# - ``RULE#<ruleId>`` / ``SLOTS#<scope>``  the runs in flight and the triggers waiting in one scope (CAS on
#   ``version``; GSI1 while anything is in it: ``RUN_SLOTS`` / scope id); ``<scope>`` is ``-`` for the rule, ``P<hash>``
#   for one partition of it (domain.run_slots.SlotScope)

SLOTS_PREFIX = "SLOTS#"
RUN_SLOTS_INDEX_PK = "RUN_SLOTS"


def run_slots_key(rule_id: str, partition: str | None) -> dict[str, str]:
    return {"PK": rule_pk(rule_id), "SK": f"{SLOTS_PREFIX}{coverage_scope(partition)}"}


# --- access: scoped tokens and role bindings (domain.access) --------------------------------------
# - ``TOKEN#<tokenId>``       / ``META``  a scoped bearer token: its SHA-256, role and scope (GSI1: ``TOKENS`` / id)
# - ``ROLEBINDING#<arn>``     / ``META``  an IAM principal's role and scope (GSI1: ``ROLE_BINDINGS`` / arn)

TOKEN_PREFIX = "TOKEN#"
TOKENS_INDEX_PK = "TOKENS"
ROLE_BINDING_PREFIX = "ROLEBINDING#"
ROLE_BINDINGS_INDEX_PK = "ROLE_BINDINGS"


def token_key(token_id: str) -> dict[str, str]:
    return {"PK": f"{TOKEN_PREFIX}{token_id}", "SK": Sort.META}


def role_binding_key(principal: str) -> dict[str, str]:
    return {"PK": f"{ROLE_BINDING_PREFIX}{principal}", "SK": Sort.META}
