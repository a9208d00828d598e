"""Partition keys as text: Hive's partition name, ``dt=2026-12-01/region=eu`` (docs/partitions.md, "The key").

One ``name=value`` per partition field in the order of the table's partition spec, joined by ``/``; names and values
escaped as Hive's ``FileUtils.escapePathName`` escapes them (``%`` and two upper-case hex digits for ``/``, ``=``,
``%``, ``:``, ``#``, ``?``, ``*``, quotes, brackets, ``{``, ``^``, ``\\`` and control characters); a null (or empty)
value written ``__HIVE_DEFAULT_PARTITION__``. The server's domain (``lakehook.domain.partitions``: formatting, the
length limit, canonical keys) and the receiver (an invocation's ``partition_values``) read keys with these functions.
"""

from __future__ import annotations

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Hive's FileUtils.charToEscape (the characters it escapes on every platform)
_ESCAPED = frozenset([chr(c) for c in range(0x00, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))
_HEX = frozenset("0123456789abcdefABCDEF")

PartitionFields = tuple[tuple[str, str | None], ...]


class PartitionKeyError(ValueError):
    """A partition key that is not ``name=value[/name=value…]`` (or is too long)."""


def escape_path_name(text: str) -> str:
    """Hive's ``escapePathName``: each character Hive escapes becomes ``%XX`` (upper-case hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape_path_name(text: str) -> str:
    """Hive's ``unescapePathName``: ``%XX`` back to its character; a ``%`` not followed by two hex digits stays."""
    out: list[str] = []
    i = 0
    while i < len(text):
        pair = text[i + 1 : i + 3]
        if text[i] == "%" and len(pair) == 2 and set(pair) <= _HEX:
            out.append(chr(int(pair, 16)))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def partition_fields(key: str) -> PartitionFields:
    """``(name, value)`` pairs of a key in its order, unescaped, ``__HIVE_DEFAULT_PARTITION__`` (or empty) as None.

    Raises :class:`PartitionKeyError` for an empty key, a part that is not ``name=value`` or a field named twice."""
    if not key:
        raise PartitionKeyError("a partition key is not empty")
    fields: list[tuple[str, str | None]] = []
    for segment in key.split("/"):
        name, equals, value = segment.partition("=")
        if not equals or not name:
            raise PartitionKeyError(f"partition key {key[:80]!r}: each part is name=value, not {segment[:40]!r}")
        plain = unescape_path_name(name)
        if any(plain == seen for seen, _ in fields):
            raise PartitionKeyError(f"partition key {key[:80]!r} names {plain[:40]!r} twice")
        fields.append((plain, None if value in ("", HIVE_DEFAULT_PARTITION) else unescape_path_name(value)))
    return tuple(fields)
