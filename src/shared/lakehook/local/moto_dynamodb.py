"""Keep moto's DynamoDB near constant per request as a table grows (the local stack only, never Lambda code).

moto (5.2.5) answers a ``Query`` by sorting every item of the table and keeping one partition, and a
``TransactWriteItems`` by deep-copying every table it names so that a cancelled transaction can be rolled
back. Both grow with the table: after 10,000 events a claim copies the whole table twice. This module adapts
moto in two places and leaves the rest, and every answer, to moto's own code:

- **Query narrows what moto walks.** moto already stores items by partition key, so a table ``Query`` gets
  that partition, and with a sort-key condition only the partition's items that meet it (an asset's partition
  holds its rules and every one of its event records: a rule lookup no longer grows with the events); an
  index ``Query`` gets the items an attribute index says may carry the index's partition key value (a
  superset, kept current on every write and pruned on read). moto's ``Table.query`` then runs
  unchanged over them: the same key checks, order, ``ScanIndexForward``, ``Limit``, 1 MB pages,
  ``LastEvaluatedKey``, filters and projections.
- **TransactWriteItems keeps a journal.** Before each action it saves a copy of the one item the action
  touches and, per table, the stream's length; a cancelled transaction puts those back instead of swapping
  in a copy of the whole table. The cancellation reasons are moto's (the function is moto's, with the
  journal in place of the copy). The table object also stays the same, so a stream reader holding a shard
  iterator keeps seeing new records after a cancelled transaction (moto's copy orphans it).
- **Answers write attribute values directly.** moto's serializer walks botocore's shape model for every
  ``AttributeValue`` of an answer (six alias lookups for each of its ten members); the values are already in wire
  form, and :mod:`lakehook.local.moto_answers` writes them as moto would (anything else stays moto's).

It patches moto's classes, so it is process-wide: :func:`install` on the exact moto versions in
``SUPPORTED_MOTO_VERSIONS`` whose patched functions still read as recorded in ``FINGERPRINTS``; any other moto
gets stock behaviour and a warning. ``docs/upstream/moto-dynamodb-query-and-transactions.md`` offers the
change to moto.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import logging
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from lakehook.local import moto_answers

log = logging.getLogger("lakehook.local.moto")

SUPPORTED_MOTO_VERSIONS = frozenset({"5.2.5"})
# sha256 (first 16 hex digits) of the source of each moto function this module relies on or adapts, for moto 5.2.5.
FINGERPRINTS: dict[str, str] = {
    "moto.dynamodb.models.table:Table.query": "002b4d00be6df07c",
    "moto.dynamodb.models.table:Table.all_items": "c80d2ee3c896acd0",
    "moto.dynamodb.models.table:Table.put_item": "de23933013ef8426",
    "moto.dynamodb.models.table:Table.get_item": "b08e98fe37b7e583",
    "moto.dynamodb.models.table:Table.delete_item": "1594f7b07616c8cb",
    "moto.dynamodb.models.table:StreamShard.add": "357dc6da267e5dd7",
    "moto.dynamodb.models:DynamoDBBackend.transact_write_items": "81db2cb7d94e39c9",
    "moto.dynamodb.models:DynamoDBBackend.update_item": "218984588dd689a5",
    "moto.dynamodb.models:DynamoDBBackend.put_item": "f5d9a5042c77b89e",
    "moto.dynamodb.models:DynamoDBBackend.delete_item": "083a4bb1af18f6fd",
    "moto.dynamodb.models:DynamoDBBackend.get_item": "290b95c46b38bc5a",
    "moto.dynamodb.models:DynamoDBBackend.get_keys_value": "1f948797496ddc2c",
    "moto.dynamodb.models:DynamoDBBackend.execute_statement": "6579d0ba9df2be56",
    "moto.dynamodb.responses:DynamoHandler.query": "681834c64038af93",
    # the answer serializer's path for an AttributeValue, which lakehook.local.moto_answers reproduces
    "moto.core.serialize:BaseJSONSerializer._serialize_type_structure": "36873909cd0aeb4d",
    "moto.core.serialize:ResponseSerializer._serialize_type_structure": "f9b47068f40ce489",
    "moto.core.serialize:ResponseSerializer._serialize_structure_member": "437fdce43aa5ac84",
    "moto.core.serialize:ResponseSerializer._serialize": "4eccca5bf02593ef",
    "moto.core.serialize:ResponseSerializer._default_serialize": "25ce8ddbb1a991c0",
    "moto.core.serialize:ResponseSerializer._serialize_type_blob": "acd7e746cf06090e",
    "moto.core.serialize:ResponseSerializer.get_serialized_name": "2c23dcac85ccc396",
    "moto.core.serialize:BaseJSONSerializer._serialize_type_string": "44954e02145012ba",
    "moto.core.serialize:BaseJSONSerializer._serialize_type_list": "f87b14fe9166e099",
    "moto.core.serialize:BaseJSONSerializer._serialize_type_map": "faa32d1fa9a8bfc9",
    "moto.core.serialize:AttributePicker.__call__": "c15da8ec29c1afa4",
    "moto.core.serialize:XFormedAttributePicker.get_possible_keys": "f0d20f55f37fd8a1",
}
# Key attribute types: hashable, and the only types a key (table or index) can have.
_TABLE_QUERY = "moto.dynamodb.models.table:Table.query"
_TABLE_ALL_ITEMS = "moto.dynamodb.models.table:Table.all_items"
_TABLE_PUT_ITEM = "moto.dynamodb.models.table:Table.put_item"
_BACKEND_UPDATE_ITEM = "moto.dynamodb.models:DynamoDBBackend.update_item"
_BACKEND_TRANSACT = "moto.dynamodb.models:DynamoDBBackend.transact_write_items"
_JSON_STRUCTURE = "moto.core.serialize:BaseJSONSerializer._serialize_type_structure"
_KEY_TYPES = frozenset({"S", "N", "B"})
_INDEX_ATTRIBUTE = "_lakehook_attribute_index"

_state_lock = threading.Lock()
_installed = False
_generation = 0  # bumped by install(): an index built before an uninstall missed the writes made meanwhile
_stock: dict[str, Any] = {}
_narrowed = threading.local()


class UnsupportedMotoError(RuntimeError):
    """The installed moto is not one this adapter was written and checked against."""


# --- guards ---------------------------------------------------------------------------------------------------


def _resolve(name: str) -> Any:
    module_name, _, qualname = name.partition(":")
    target: Any = __import__(module_name, fromlist=["_"])
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def fingerprint(name: str) -> str:
    """sha256 of the source of one moto function, as ``FINGERPRINTS`` records it."""
    function = _stock[name] if _installed and name in _stock else _resolve(name)
    return _source_digest(function)


@functools.cache
def _source_digest(function: Any) -> str:
    """sha256 of one function's source; read once per function and process (a test session installs the adapter
    once per test, and reading the sources was most of an install's CPU)."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def problems(fingerprints: dict[str, str] | None = None) -> list[str]:
    """Why this moto cannot be adapted (empty when it can): its version, or a patched function that changed.

    ``fingerprints``: the functions to check (default ``FINGERPRINTS``, this module's)."""
    import moto

    if moto.__version__ not in SUPPORTED_MOTO_VERSIONS:
        supported = ", ".join(sorted(SUPPORTED_MOTO_VERSIONS))
        return [f"moto {moto.__version__} is not a supported version ({supported})"]
    found = []
    for name, expected in (FINGERPRINTS if fingerprints is None else fingerprints).items():
        try:
            actual = fingerprint(name)
        except (AttributeError, ImportError, OSError, TypeError) as exc:
            found.append(f"{name}: cannot read its source ({exc})")
            continue
        if actual != expected:
            found.append(f"{name} changed (sha256 {actual}, expected {expected})")
    return found


# --- install ------------------------------------------------------------------------------------------------


def install(*, strict: bool = False) -> bool:
    """Adapt moto's DynamoDB in this process; True when adapted.

    On a moto this module does not support, moto stays as it is and a warning says why (``strict``:
    raise :class:`UnsupportedMotoError` instead).
    """
    global _installed, _generation
    with _state_lock:
        if _installed:
            return True
        found = problems()
        if found:
            message = "lakehook cannot adapt this moto; DynamoDB stays stock (slower as tables grow): " + "; ".join(
                found
            )
            if strict:
                raise UnsupportedMotoError(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            log.warning("moto dynamodb stays stock: %s", "; ".join(found))
            return False
        for name, replacement in _patches().items():
            owner, attribute = _owner(name)
            _stock[name] = getattr(owner, attribute)
            setattr(owner, attribute, replacement)
        _generation += 1
        _installed = True
        return True


def uninstall() -> None:
    """Give moto back its own functions (the attribute indexes already built are dropped on next install)."""
    global _installed
    with _state_lock:
        if not _installed:
            return
        for name in _patches():
            owner, attribute = _owner(name)
            setattr(owner, attribute, _stock[name])
        _stock.clear()
        _installed = False


def _patches() -> dict[str, Callable[..., Any]]:
    return {
        _TABLE_QUERY: _query,
        _TABLE_ALL_ITEMS: _all_items,
        _TABLE_PUT_ITEM: _put_item,
        _BACKEND_UPDATE_ITEM: _update_item,
        _BACKEND_TRANSACT: _transact_write_items,
        _JSON_STRUCTURE: _serialize_type_structure,
    }


def _owner(name: str) -> tuple[Any, str]:
    owner_name, _, attribute = name.rpartition(".")
    return _resolve(owner_name), attribute


def installed() -> bool:
    return _installed


@contextmanager
def adapted(enabled: bool = True) -> Iterator[None]:
    """moto adapted (or stock, ``enabled=False``) inside the block, and as it was after it."""
    was = _installed
    if enabled:
        install(strict=True)
    else:
        uninstall()
    try:
        yield
    finally:
        if was and not _installed:
            install(strict=True)
        elif not was and _installed:
            uninstall()


# --- the attribute index (for index queries) ---------------------------------------------------------------

_Key = tuple[Any, Any]  # (hash DynamoType, range DynamoType | None): where the item lives in Table.items


def _item_at(table: Any, key: _Key) -> Any:
    partition = table.items.get(key[0])
    if partition is None:
        return None
    if table.range_key_attr is None:
        return partition
    return partition.get(key[1])


def _built(table: Any) -> dict[str, dict[Any, set[_Key]]] | None:
    """The table's attribute indexes, by attribute name; None before the first index query (or a re-install)."""
    held = table.__dict__.get(_INDEX_ATTRIBUTE)
    if held is None or held[0] != _generation:
        return None
    indexes: dict[str, dict[Any, set[_Key]]] = held[1]
    return indexes


def _indexes(table: Any) -> dict[str, dict[Any, set[_Key]]]:
    indexes = _built(table)
    if indexes is None:
        indexes = {}
        setattr(table, _INDEX_ATTRIBUTE, (_generation, indexes))
    return indexes


def _register(table: Any, item: Any) -> None:
    """Note ``item`` under its value of every indexed attribute (an index may hold stale keys, never miss one)."""
    indexes = _built(table)
    if not indexes or item is None:
        return
    key = (item.hash_key, item.range_key)
    for attribute, by_value in indexes.items():
        value = item.attrs.get(attribute)
        if value is not None and value.type in _KEY_TYPES:
            by_value.setdefault(value, set()).add(key)


def _register_key(table: Any, hash_key: Any, range_key: Any) -> None:
    if _built(table):
        _register(table, _item_at(table, (hash_key, range_key if table.range_key_attr else None)))


def _attribute_index(table: Any, attribute: str) -> dict[Any, set[_Key]]:
    indexes = _indexes(table)
    by_value = indexes.get(attribute)
    if by_value is None:
        by_value = {}
        for item in _stock[_TABLE_ALL_ITEMS](table):
            value = item.attrs.get(attribute)
            if value is not None and value.type in _KEY_TYPES:
                by_value.setdefault(value, set()).add((item.hash_key, item.range_key))
        indexes[attribute] = by_value
    return by_value


def _all_items_order(item: Any) -> Any:
    # moto's Table.all_items sort key: the candidates keep the order moto's full list gives them.
    return (item.hash_key, item.range_key) if item.range_key else item.hash_key


def _partition_items(table: Any, hash_key: Any) -> list[Any]:
    partition = table.items.get(hash_key)
    if partition is None:
        return []
    if table.range_key_attr is None:
        return [partition]
    return sorted(partition.values(), key=_all_items_order)


def _partition_range_items(table: Any, hash_key: Any, comparison: str, objects: list[Any]) -> list[Any]:
    """The items of one partition whose range key meets the query's range condition, as moto checks it.

    moto's query would sort the whole partition and test every item (an asset's partition holds all its
    event records: a rule lookup by ``begins_with`` slowed down with every event); the items kept are exactly
    those moto's own ``compare`` accepts, which it then checks again, in its order.
    """
    partition = table.items.get(hash_key)
    if not partition:
        return []
    first = objects[0]
    if comparison == "BEGINS_WITH" and first.type == "S":  # moto's compare, without its per-item casts
        prefix = first.value
        matches = [i for i in partition.values() if i.range_key.type == "S" and i.range_key.value.startswith(prefix)]
    else:
        matches = [i for i in partition.values() if i.range_key.compare(comparison, objects)]
    return sorted([*matches, *_neighbours(partition.values(), matches)], key=_all_items_order)


def _neighbours(items: Any, matches: list[Any]) -> list[Any]:
    """The nearest item below and above the matches' range keys (a range condition's matches are one run of the
    sorted partition). moto's query stops with a ``LastEvaluatedKey`` when ``Limit`` matches are taken and any
    item, matching or not, is left in its walk; these two stand for what is left on either side, and its
    comparison skips them like every other item that does not match."""
    if not matches:
        return []
    low, high = min(m.range_key for m in matches), max(m.range_key for m in matches)
    below = [i for i in items if i.range_key < low]
    above = [i for i in items if i.range_key > high]
    return [
        *([max(below, key=lambda i: i.range_key)] if below else []),
        *([min(above, key=lambda i: i.range_key)] if above else []),
    ]


def _index_candidates(table: Any, attribute: str, value: Any) -> list[Any]:
    keys = _attribute_index(table, attribute).get(value)
    if not keys:
        return []
    items = []
    for key in list(keys):
        item = _item_at(table, key)
        current = None if item is None else item.attrs.get(attribute)
        if current is None or current.type != value.type or current != value:
            keys.discard(key)  # stale: deleted, or the attribute moved to another value
        else:
            items.append(item)
    items.sort(key=_all_items_order)
    return items


# --- the patched functions ----------------------------------------------------------------------------------

_QUERY_SIGNATURE: inspect.Signature | None = None


def _query(self: Any, *args: Any, **kwargs: Any) -> Any:
    global _QUERY_SIGNATURE
    stock = _stock[_TABLE_QUERY]
    if _QUERY_SIGNATURE is None:
        _QUERY_SIGNATURE = inspect.signature(stock)
    try:
        bound = _QUERY_SIGNATURE.bind(self, *args, **kwargs).arguments
    except TypeError:
        return stock(self, *args, **kwargs)  # moto's own error for a call it does not take
    narrowed = _narrow(self, bound)
    if narrowed is None:
        return stock(self, *args, **kwargs)
    _narrowed.hint = (self, narrowed)
    try:
        return stock(self, *args, **kwargs)
    finally:
        _narrowed.hint = None


def _narrow(table: Any, arguments: dict[str, Any]) -> Callable[[], list[Any]] | None:
    """What ``all_items`` may return for this query: a sub-list of moto's full list holding every match."""
    if arguments.get("index_name"):
        conditions = arguments.get("hash_key_conditions") or []
        if not conditions:
            return None
        attribute, value = conditions[0]
        if getattr(value, "type", None) not in _KEY_TYPES:
            return None
        return lambda: _index_candidates(table, attribute, value)
    hash_key = arguments.get("hash_key")
    if hash_key is None or hash_key.type not in _KEY_TYPES:
        return None
    comparison, objects = arguments.get("range_comparison"), arguments.get("range_objs") or []
    conditions = arguments.get("range_key_conditions") or []
    on_range_key = not conditions or conditions[-1][0] == table.range_key_attr
    if (
        comparison
        and objects
        and table.range_key_attr is not None
        and on_range_key
        and not arguments.get("filter_kwargs")
    ):
        return lambda: _partition_range_items(table, hash_key, comparison, objects)
    return lambda: _partition_items(table, hash_key)


def _all_items(self: Any) -> list[Any]:
    hint = getattr(_narrowed, "hint", None)
    if hint is not None and hint[0] is self:
        _narrowed.hint = None  # moto's query reads all_items once
        items: list[Any] = hint[1]()
        return items
    stock_items: list[Any] = _stock[_TABLE_ALL_ITEMS](self)
    return stock_items


def _put_item(self: Any, item_attrs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return _stock[_TABLE_PUT_ITEM](self, item_attrs, *args, **kwargs)
    finally:
        if _built(self):
            _register_written(self, item_attrs)


def _register_written(table: Any, item_attrs: dict[str, Any]) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        hash_key = DynamoType(item_attrs[table.hash_key_attr])
        range_key = DynamoType(item_attrs[table.range_key_attr]) if table.range_key_attr else None
        _register_key(table, hash_key, range_key)
    except (KeyError, TypeError, AttributeError):
        return  # moto stored nothing: it refuses an item without its key


def _update_item(self: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    # moto updates the stored item in place: note its new values whatever happened.
    try:
        return _stock[_BACKEND_UPDATE_ITEM](self, table_name, key, *args, **kwargs)
    finally:
        _register_updated(self, table_name, key)


def _register_updated(backend: Any, table_name: str, key: dict[str, Any]) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        table = backend.get_table(table_name)
        if not _built(table):
            return
        hash_key = DynamoType(key[table.hash_key_attr])
        range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr in key else None
        _register_key(table, hash_key, range_key)
    except Exception:  # moto raised for this key already; nothing was stored under it
        return


def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
    # an answer's AttributeValue written directly (lakehook.local.moto_answers), anything else by moto
    if key and value is not None and moto_answers.applies(self, shape):
        written = moto_answers.wire(self, value, shape)
        if written is not moto_answers.STOCK:
            serialized[key] = written
            return
    _stock[_JSON_STRUCTURE](self, serialized, value, shape, key)


# --- TransactWriteItems with a rollback journal -------------------------------------------------------------


class _Journal:
    """What a transaction changed, to put back if it is cancelled."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, Any, Any, bool, Any]] = []  # table, hash, range, partition existed, old item
        self.streams: dict[int, tuple[Any, int]] = {}

    def stream(self, table: Any) -> None:
        shard = table.stream_shard
        if shard is not None and id(shard) not in self.streams:
            self.streams[id(shard)] = (shard, len(shard.items))

    def save(self, backend: Any, table_name: str, key: dict[str, Any]) -> None:
        """Keep a copy of the item ``key`` names, before the action runs (nothing if moto will refuse the key)."""
        try:
            table = backend.get_table(table_name)
            hash_key, range_key = backend.get_keys_value(table, key)
        except Exception:  # moto raises the same for this action, before changing anything
            return
        self.stream(table)
        existed = hash_key in table.items
        old = _item_at(table, (hash_key, range_key))
        self.items.append((table, hash_key, range_key, existed, copy.deepcopy(old)))

    def roll_back(self) -> None:
        for table, hash_key, range_key, existed, old in reversed(self.items):
            if table.range_key_attr is None:
                if old is None:
                    table.items.pop(hash_key, None)
                else:
                    table.items[old.hash_key] = old
            else:
                partition = table.items.get(hash_key)
                if old is None:
                    if partition is not None:
                        partition.pop(range_key, None)
                else:
                    if partition is None:
                        partition = table.items[old.hash_key]
                    partition[old.range_key] = old
                if not existed and not table.items.get(hash_key, True):
                    del table.items[hash_key]
            _register(table, old)
        for shard, length in self.streams.values():
            del shard.items[length:]


# one action's cancellation reason: its code, message and (ReturnValuesOnConditionCheckFailure ALL_OLD) item;
# all None when the action succeeded
_Reason = tuple[str | None, str | None, dict[str, Any] | None]
_TRANSACT_ACTIONS = frozenset({"ConditionCheck", "Put", "Delete", "Update"})


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto 5.2.5's ``DynamoDBBackend.transact_write_items``, with a journal in place of copying the tables."""
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    tables = _transaction_tables(self, transact_items)
    if any(table.lambda_event_source_mappings for table in tables):
        # moto hands stream records to its Lambda here and may clear the shard: keep moto's own rollback.
        _stock[_BACKEND_TRANSACT](self, transact_items)
        return
    journal = _Journal()
    for table in tables:
        journal.stream(table)
    targets: set[tuple[str, str]] = set()
    errors: list[_Reason] = []
    for item in transact_items:
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        try:
            errors.append(_transact_action(self, item, journal, targets))
        except (MultipleTransactionsException, MockValidationException):
            journal.roll_back()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), None))
        except Exception as e:  # as moto: any other failure cancels with its name
            errors.append((type(e).__name__, str(e), None))

    if any(code is not None for code, _, _ in errors):
        journal.roll_back()
        raise TransactionCanceledException(errors)


def _transaction_tables(self: Any, transact_items: list[dict[str, Any]]) -> list[Any]:
    """The existing tables the transaction's actions name (each once)."""
    names = (next(iter(item.values())).get("TableName") for item in transact_items)
    return list({name: self.tables[name] for name in names if name and name in self.tables}.values())


def _transact_action(self: Any, item: dict[str, Any], journal: _Journal, targets: set[tuple[str, str]]) -> _Reason:
    """One action of the transaction, its item saved in the journal first: its cancellation reason when its
    condition fails (moto's own raises for anything else), else all None."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import ConditionalCheckFailed, MultipleTransactionsException

    op_type, op = next(iter(item.items()))
    if op_type not in _TRANSACT_ACTIONS:
        raise ValueError("Unsupported transaction operation")
    table_name = op["TableName"]
    key = _action_key(self, op_type, op)
    target = (str(table_name), str(dict(sorted(key.items()))))
    if target in targets:
        raise MultipleTransactionsException()
    targets.add(target)
    journal.save(self, table_name, key)
    current = self.get_item(table_name, key)
    condition = op.get("ConditionExpression")
    if condition is not None:
        names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
        if not get_filter_expression(condition, names, values).expr(current):
            old = current.to_json()["Attributes"] if current and _returns_old(op) else None
            return "ConditionalCheckFailed", str(ConditionalCheckFailed(item=old).message), old
    _apply_action(self, op_type, op, key)
    return None, None, None


def _returns_old(op: dict[str, Any]) -> bool:
    return bool(op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD")


def _action_key(self: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    """The key of the item an action touches: a ``Put``'s from its item's key attributes, else its ``Key``."""
    if op_type != "Put":
        return dict(op["Key"])
    attrs = op["Item"]
    table = self.get_table(op["TableName"])
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _apply_action(self: Any, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> None:
    """A ``Put``, ``Delete`` or ``Update`` through moto's own write (a ``ConditionCheck`` writes nothing)."""
    conditions = {
        "condition_expression": op.get("ConditionExpression"),
        "expression_attribute_names": op.get("ExpressionAttributeNames"),
        "expression_attribute_values": op.get("ExpressionAttributeValues"),
    }
    if op_type == "Put":
        self.put_item(op["TableName"], op["Item"], **conditions)
    elif op_type == "Delete":
        self.delete_item(op["TableName"], key, **conditions)
    elif op_type == "Update":
        self.update_item(op["TableName"], key, update_expression=op["UpdateExpression"], **conditions)
