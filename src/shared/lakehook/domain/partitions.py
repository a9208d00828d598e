"""Partition keys, and the bounded set of partitions one commit touched.

A partition key is Hive's partition name: ``dt=2026-12-01/region=eu``, one ``name=value`` per partition field in
the order of the table's partition spec, names and values escaped as Hive's ``FileUtils.escapePathName`` escapes
them (``%`` and two upper-case hex digits for ``/``, ``=``, ``%``, ``:``, ``#``, ``?``, ``*``, quotes, brackets,
``{``, ``^``, ``\\`` and control characters), a null (or empty) value written ``__HIVE_DEFAULT_PARTITION__``. Every
format's poller writes its partitions in this one syntax (docs/partitions.md), so a rule compares keys as strings.
Escaping and reading a key are :mod:`lakehook.wire.partition_keys`' (one definition, shared with the receiver); the
length limit, formatting and canonical keys are here.

:class:`TouchedPartitions` is what an event and the state keep of one commit: the first keys in sorted order, at
most :data:`~lakehook.domain.limits.MAX_TOUCHED_PARTITIONS` of them and
:data:`~lakehook.domain.limits.MAX_TOUCHED_PARTITION_BYTES` together, with how many there were and whether some
were left out. A commit touching 10,000 partitions is therefore one bounded event item, never 10,000 writes.

The keys past that bound are not dropped: a reader's :func:`read_partitions` answers a :class:`ReadPartitions`,
the same bounded value with the rest of the keys in ``more``, in sorted chunks of at most
``MAX_TOUCHED_PARTITIONS`` keys and ``MAX_TOUCHED_PARTITION_BYTES`` each (:func:`overflow_of`). An event never
carries them (``domain.snapshots.snapshot_event`` keeps the bounded value); the poll records each chunk as one
part item, which wakes the resolver for those keys (docs/partitions.md#limits).

A key a reader found that cannot be recorded (:func:`unrecordable`: longer than
:data:`~lakehook.domain.limits.MAX_PARTITION_KEY_LENGTH`, or not valid text) is left out of the keys and counted
in ``unrecorded``, the first of them named by their start (``unrecordedKeys``): the snapshot is recorded all the
same, with its other partitions, and the poll reports it (docs/partitions.md#limits).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lakehook.domain.limits import (
    MAX_PARTITION_KEY_LENGTH,
    MAX_TOUCHED_PARTITION_BYTES,
    MAX_TOUCHED_PARTITIONS,
    MAX_UNRECORDED_NAMED,
    UNRECORDED_KEY_SHOWN,
    UNRECORDED_KEY_TEXT,
)
from lakehook.wire.partition_keys import (
    HIVE_DEFAULT_PARTITION,
    PartitionFields,
    PartitionKeyError,
    escape_path_name,
    partition_fields,
    unescape_path_name,
)

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "Chunks",
    "PartitionFields",
    "PartitionKeyError",
    "ReadPartitions",
    "TouchedPartitions",
    "canonical_partition_key",
    "escape_path_name",
    "format_partition_key",
    "overflow_of",
    "parse_partition_key",
    "path_partition_key",
    "read_partitions",
    "unescape_path_name",
]


def format_partition_key(fields: Sequence[tuple[str, Any]]) -> str:
    """The canonical key of ``(name, value)`` pairs in spec order; a value is written as ``str(value)``, None or
    ``""`` as ``__HIVE_DEFAULT_PARTITION__`` (Hive writes both so)."""
    if not fields:
        raise PartitionKeyError("a partition key names at least one field")
    parts = []
    for name, value in fields:
        if not name:
            raise PartitionKeyError("a partition field has no name")
        text = HIVE_DEFAULT_PARTITION if value is None or value == "" else escape_path_name(str(value))
        parts.append(f"{escape_path_name(name)}={text}")
    return "/".join(parts)


def parse_partition_key(key: str) -> PartitionFields:
    """``(name, value)`` pairs of a key, unescaped, ``__HIVE_DEFAULT_PARTITION__`` as None (at most
    :data:`~lakehook.domain.limits.MAX_PARTITION_KEY_LENGTH` characters; the parsing is the wire format's, which the
    receiver shares)."""
    if len(key) > MAX_PARTITION_KEY_LENGTH:
        raise PartitionKeyError(f"a partition key is at most {MAX_PARTITION_KEY_LENGTH} characters")
    return partition_fields(key)


def canonical_partition_key(key: str) -> str:
    """The key as lakehook writes it (escapes upper-cased, ``=`` in a value escaped …); an error if it is no key."""
    canonical = format_partition_key(parse_partition_key(key))
    if len(canonical) > MAX_PARTITION_KEY_LENGTH:
        raise PartitionKeyError(f"a partition key is at most {MAX_PARTITION_KEY_LENGTH} characters")
    return canonical


def unrecordable(key: str) -> str | None:
    """Why a key a reader found cannot be recorded, or None when it can: longer than ``MAX_PARTITION_KEY_LENGTH``
    characters, not valid Unicode text (a lone surrogate, which neither JSON nor DynamoDB hold), or no canonical key
    (see :func:`canonical_partition_key`; every reader writes keys with :func:`format_partition_key`, so this is a
    guard, not an expected case)."""
    return _unstorable(key) or _not_canonical(key)


def _unstorable(key: str) -> str | None:
    """The cheap part of :func:`unrecordable`: the length and the text."""
    try:
        key.encode()
    except UnicodeEncodeError:
        return "not valid Unicode text (a lone surrogate)"
    if len(key) > MAX_PARTITION_KEY_LENGTH:
        return f"longer than the limit of {MAX_PARTITION_KEY_LENGTH} characters"
    return None


def _not_canonical(key: str) -> str | None:
    try:
        canonical = canonical_partition_key(key)
    except PartitionKeyError as exc:
        return str(exc)
    return None if canonical == key else "not a canonical key"


def unrecorded_key_shown(key: str, why: str) -> str:
    """How a key that cannot be recorded is named: its first characters (a lone surrogate as ``\\ud800``), its
    length and why (``a=xxxx… (608 characters): longer than the limit of 512 characters``), at most
    ``UNRECORDED_KEY_TEXT`` characters."""
    start = key[:UNRECORDED_KEY_SHOWN]
    shown = start.encode("utf-8", "backslashreplace").decode()
    text = f"{shown}{'…' if len(key) > len(start) else ''} ({len(key)} characters): {why}"
    return text if len(text) <= UNRECORDED_KEY_TEXT else f"{text[: UNRECORDED_KEY_TEXT - 1]}…"


def path_partition_key(path: str, names: Sequence[str] = (), *, escaped: bool = True) -> str | None:
    """The key of a partition path as writers lay partitions out (Hudi's partition path, a Hive directory).

    Hive-style segments (``name=value``) keep their names; bare values (Hudi without hive-style partitioning) take
    ``names`` in order, the table's partition fields. ``escaped``: the path's names and values are escaped as Hive
    escapes them (else taken as written). None for the empty path (an unpartitioned table)."""
    unescape = unescape_path_name if escaped else _same
    path = path.strip("/")
    if not path:
        return None
    segments = path.split("/")
    fields: list[tuple[str, str | None]] = []
    for i, segment in enumerate(segments):
        name, equals, value = segment.partition("=")
        if equals and name:
            fields.append((unescape(name), _path_value(value, unescape)))
        elif i < len(names) and len(segments) == len(names):
            fields.append((names[i], _path_value(segment, unescape)))
        else:
            # values without names, and not one per named field: the path as one value of the first field
            return format_partition_key([(names[0] if names else "partition", unescape(path))])
    return format_partition_key(fields)


def _same(text: str) -> str:
    return text


def _path_value(text: str, unescape: Callable[[str], str]) -> str | None:
    return None if text == HIVE_DEFAULT_PARTITION else unescape(text)


class TouchedPartitions(BaseModel):
    """The partitions one commit touched: the first ``keys`` in sorted order, their ``count``, ``truncated``; and
    how many keys could not be recorded (``unrecorded``), the first of them named (``unrecordedKeys``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    keys: tuple[str, ...] = Field(max_length=MAX_TOUCHED_PARTITIONS, description="canonical keys, sorted, unique")
    count: int = Field(ge=0, description="how many partitions the commit touched (more than keys when truncated)")
    truncated: bool = Field(default=False, description="whether keys leave some of them out")
    unrecorded: int = Field(
        default=0,
        ge=0,
        description="how many more partitions the commit touched whose key could not be recorded (longer than "
        f"{MAX_PARTITION_KEY_LENGTH} characters, or not valid text): in neither keys nor count",
    )
    unrecorded_keys: tuple[Annotated[str, Field(max_length=UNRECORDED_KEY_TEXT)], ...] = Field(
        default=(),
        alias="unrecordedKeys",
        max_length=MAX_UNRECORDED_NAMED,
        description=f"the first {MAX_UNRECORDED_NAMED} of those keys, each as its first {UNRECORDED_KEY_SHOWN} "
        "characters, its length and why it was not recorded",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        """A list of keys (as a push names them) is the whole set."""
        if isinstance(value, list | tuple):
            keys = [canonical_partition_key(k) if isinstance(k, str) else k for k in value]
            unique = sorted(set(keys)) if all(isinstance(k, str) for k in keys) else keys
            return {"keys": unique, "count": len(unique), "truncated": False}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TouchedPartitions:
        canonical = tuple(canonical_partition_key(k) for k in self.keys)
        if canonical != self.keys:
            raise ValueError("partition keys must be canonical (see docs/partitions.md)")
        if list(self.keys) != sorted(set(self.keys)):
            raise ValueError("partition keys must be sorted and unique")
        size = sum(len(k.encode()) for k in self.keys)
        if size > MAX_TOUCHED_PARTITION_BYTES:
            raise ValueError(f"partition keys are {size} bytes together; the limit is {MAX_TOUCHED_PARTITION_BYTES}")
        if self.count < len(self.keys) or self.truncated != (self.count > len(self.keys)):
            raise ValueError("count is the number of partitions, and truncated says whether keys leave some out")
        if len(self.unrecorded_keys) > self.unrecorded:
            raise ValueError("unrecordedKeys names at most the unrecorded keys")
        return self

    @classmethod
    def of(cls, keys: Iterable[str]) -> TouchedPartitions:
        """The bounded value of every key a reader found (canonical keys; duplicates count once). A key that cannot
        be recorded (:func:`unrecordable`) never fails the read: it is counted in ``unrecorded`` and named (the first
        ``MAX_UNRECORDED_NAMED``) in ``unrecorded_keys``. The keys past the bound are counted, not kept: a reader
        keeps them too with :func:`read_partitions`."""
        fields, _ = _bounded(keys, every=False)
        return cls(**fields)

    @classmethod
    def read(cls, keys: Iterable[str]) -> ReadPartitions:
        """What a reader records of every key it found, nothing dropped: :func:`read_partitions`."""
        return read_partitions(keys)


def partitions_json(touched: TouchedPartitions) -> dict[str, Any]:
    """The JSON form of a commit's partitions (camelCase, no nulls): what its event carries (and parses back), a run's
    input details and the state's record of the newest hold; ``unrecorded`` and ``unrecordedKeys`` only when some key
    could not be recorded. Not :func:`lakehook.domain.json_form.json_form`, which would write them as 0 and []."""
    data: dict[str, Any] = {"keys": list(touched.keys), "count": touched.count, "truncated": touched.truncated}
    if touched.unrecorded:
        data.update(unrecorded=touched.unrecorded, unrecordedKeys=list(touched.unrecorded_keys))
    return data


Chunks = tuple[tuple[str, ...], ...]
"""Keys past a commit's bounded value, in sorted chunks that each fit one event's bound (:func:`overflow_of`)."""


class ReadPartitions(TouchedPartitions):
    """What a reader found of one commit: the bounded value its event carries, and in ``more`` the recordable keys
    past it (``count`` counts them, ``truncated`` says they exist), in chunks of at most ``MAX_TOUCHED_PARTITIONS``
    keys and ``MAX_TOUCHED_PARTITION_BYTES``, in sorted order after the last of ``keys``.

    A reader answers it where it answered a :class:`TouchedPartitions` (:func:`read_partitions`), so the chunks ride
    with its snapshot (``SnapshotInfo.more_partitions``) to the poll, which records them as part items. ``more`` is
    never serialized, and no event holds it (``recorded`` is the plain value an event carries)."""

    more: Chunks = Field(default=(), exclude=True, repr=False)

    @model_validator(mode="after")
    def _more_follows(self) -> ReadPartitions:
        last = self.keys[-1] if self.keys else ""
        for chunk in self.more:
            if not chunk or len(chunk) > MAX_TOUCHED_PARTITIONS:
                raise ValueError(f"a chunk holds 1 to {MAX_TOUCHED_PARTITIONS} keys")
            if sum(len(k.encode()) for k in chunk) > MAX_TOUCHED_PARTITION_BYTES:
                raise ValueError(f"a chunk holds at most {MAX_TOUCHED_PARTITION_BYTES} bytes of keys")
            if chunk[0] <= last or list(chunk) != sorted(set(chunk)):
                raise ValueError("the chunks hold sorted, unique keys after the kept ones")
            last = chunk[-1]
        if len(self.keys) + sum(len(c) for c in self.more) != self.count:
            raise ValueError("the kept keys and the chunks are every counted key")
        return self

    @property
    def recorded(self) -> TouchedPartitions:
        """The bounded value, as an event carries it."""
        return TouchedPartitions.model_construct(
            self.model_fields_set - {"more"},
            **{name: getattr(self, name) for name in TouchedPartitions.model_fields},
        )


def read_partitions(keys: Iterable[str]) -> ReadPartitions:
    """Every key a reader found, nothing dropped: the bounded value :meth:`TouchedPartitions.of` keeps, and the
    recordable keys past it as :func:`overflow_of` chunks them. Every key is checked (a commit past the bound pays a
    parse and a format per key, about 20 µs), so ``count`` and ``unrecorded`` count exactly the keys recorded."""
    fields, rest = _bounded(keys, every=True)
    return ReadPartitions(**fields, more=_chunked(rest))


def overflow_of(keys: Iterable[str]) -> Chunks:
    """The recordable canonical keys past the ones :meth:`TouchedPartitions.of` keeps, in sorted order, in chunks
    of at most ``MAX_TOUCHED_PARTITIONS`` keys and ``MAX_TOUCHED_PARTITION_BYTES`` each; empty when it keeps all."""
    return read_partitions(keys).more


def _bounded(keys: Iterable[str], every: bool) -> tuple[dict[str, Any], list[str]]:
    """The fields of the bounded value of ``keys``, and the recordable keys past it in sorted order. ``every``: check
    each key's canonical form (else only the kept ones', which is all :meth:`TouchedPartitions.of` needs)."""
    unique = sorted(set(keys))
    recordable: list[str] = []
    unrecorded: list[tuple[str, str]] = []
    for key in unique:
        why = _unstorable(key)
        if why is None:
            recordable.append(key)
        else:
            unrecorded.append((key, why))
    kept: list[str] = []
    rest: list[str] = []
    count = len(recordable)
    size = 0
    full = False
    for key in recordable:
        length = len(key.encode())
        full = full or len(kept) == MAX_TOUCHED_PARTITIONS or size + length > MAX_TOUCHED_PARTITION_BYTES
        if full and not every:
            break  # the canonical check (a parse and a format) only for the keys kept: a commit may name 10,000
        why = _not_canonical(key)
        if why is not None:
            unrecorded.append((key, why))
            count -= 1
        elif full:
            rest.append(key)
        else:
            kept.append(key)
            size += length
    named = [unrecorded_key_shown(key, why) for key, why in sorted(unrecorded)[:MAX_UNRECORDED_NAMED]]
    fields = {
        "keys": tuple(kept),
        "count": count,
        "truncated": len(kept) < count,
        "unrecorded": len(unrecorded),
        "unrecorded_keys": tuple(named),
    }
    return fields, rest


def _chunked(keys: Sequence[str]) -> Chunks:
    """``keys`` in order, in chunks of at most ``MAX_TOUCHED_PARTITIONS`` keys and ``MAX_TOUCHED_PARTITION_BYTES``."""
    chunks: list[tuple[str, ...]] = []
    chunk: list[str] = []
    size = 0
    for key in keys:
        length = len(key.encode())
        if chunk and (len(chunk) == MAX_TOUCHED_PARTITIONS or size + length > MAX_TOUCHED_PARTITION_BYTES):
            chunks.append(tuple(chunk))
            chunk, size = [], 0
        chunk.append(key)
        size += length
    if chunk:
        chunks.append(tuple(chunk))
    return tuple(chunks)
