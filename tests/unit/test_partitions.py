"""Partition keys (Hive's escaping, both ways) and the bounded set of partitions a commit touched."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.domain.limits import (
    MAX_PARTITION_KEY_LENGTH,
    MAX_TOUCHED_PARTITION_BYTES,
    MAX_TOUCHED_PARTITIONS,
    MAX_UNRECORDED_NAMED,
    UNRECORDED_KEY_TEXT,
)
from lakehook.domain.partitions import (
    HIVE_DEFAULT_PARTITION,
    PartitionKeyError,
    ReadPartitions,
    TouchedPartitions,
    canonical_partition_key,
    escape_path_name,
    format_partition_key,
    overflow_of,
    parse_partition_key,
    partitions_json,
    path_partition_key,
    unescape_path_name,
)
from tests.hypothesis_profiles import examples

# Names are distinct and non-empty; values are any text (the characters Hive escapes included) or None.
names = st.text(min_size=1, max_size=12)
values = st.one_of(st.none(), st.text(max_size=20))
fields = st.lists(st.tuples(names, values), min_size=1, max_size=4, unique_by=lambda f: f[0])


def test_hive_escapes_its_characters_in_upper_case_hex() -> None:
    assert escape_path_name("a/b=c%d:e") == "a%2Fb%3Dc%25d%3Ae"
    assert format_partition_key([("dt", "2026-12-01"), ("region", "eu")]) == "dt=2026-12-01/region=eu"
    assert format_partition_key([("dt", None), ("region", "")]) == (
        f"dt={HIVE_DEFAULT_PARTITION}/region={HIVE_DEFAULT_PARTITION}"
    )
    assert format_partition_key([("ts_hour", "2026-12-01-10")]) == "ts_hour=2026-12-01-10"
    assert unescape_path_name("100%") == "100%"  # a % without two hex digits stays, as in Hive


def test_exactly_hives_characters_are_escaped_and_any_two_hex_digits_read_back() -> None:
    assert escape_path_name("\x00\x1f\"#%'*/:=?\\\x7f{[]^") == "%00%1F%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E"
    assert escape_path_name(" -_.~}|é😀") == " -_.~}|é😀"  # not in Hive's list: as written
    assert unescape_path_name("%2f%2F%3a") == "//:"  # either case of hex
    assert unescape_path_name("%2G%%3") == "%2G%%3"  # no two hex digits: as written
    assert unescape_path_name("a%3D%") == "a=%"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "a partition key is not empty"),
        ("dt", "partition key 'dt': each part is name=value, not 'dt'"),
        ("dt=1/=2", "partition key 'dt=1/=2': each part is name=value, not '=2'"),
        ("a%3Db=1/a%3db=2", "partition key 'a%3Db=1/a%3db=2' names 'a=b' twice"),  # once unescaped
        ("dt=1/dt=2", "partition key 'dt=1/dt=2' names 'dt' twice"),
    ],
)
def test_what_is_no_key_is_refused_saying_why(key: str, why: str) -> None:
    with pytest.raises(PartitionKeyError) as refused:
        parse_partition_key(key)
    assert str(refused.value) == why


def test_a_keys_fields_are_unescaped_and_an_empty_or_default_value_is_null() -> None:
    assert parse_partition_key(f"a%3Db=%2F/e=/d={HIVE_DEFAULT_PARTITION}") == (("a=b", "/"), ("e", None), ("d", None))


@given(fields)
def test_a_key_parses_back_to_its_fields(pairs: list[tuple[str, str | None]]) -> None:
    key = format_partition_key(pairs)
    expected = tuple((name, None if value == "" else value) for name, value in pairs)
    assert parse_partition_key(key) == expected
    assert len(key.split("/")) == len(pairs)  # a '/' inside a name or value never splits it
    if len(key) <= MAX_PARTITION_KEY_LENGTH:
        assert canonical_partition_key(key) == key


@given(st.text(max_size=40))
def test_unescape_inverts_escape(text: str) -> None:
    assert unescape_path_name(escape_path_name(text)) == text


@given(fields)
def test_lower_case_escapes_are_made_canonical(pairs: list[tuple[str, str | None]]) -> None:
    key = format_partition_key(pairs)
    if len(key) <= MAX_PARTITION_KEY_LENGTH:
        lowered = "".join(
            key[i].lower() if i >= 1 and (key[i - 1] == "%" or (i >= 2 and key[i - 2] == "%")) else key[i]
            for i in range(len(key))
        )
        assert canonical_partition_key(lowered) == key


@given(st.sampled_from(["", "dt", "=x", "dt=1//r=2", "a=1/a=2", "dt=1/", "x" * (MAX_PARTITION_KEY_LENGTH + 1)]))
def test_what_is_no_key_is_refused(text: str) -> None:
    with pytest.raises(PartitionKeyError):
        canonical_partition_key(text)


def test_a_path_names_its_fields_hive_style_or_by_the_table() -> None:
    assert path_partition_key("city=san_francisco") == "city=san_francisco"
    assert path_partition_key("10", ["byteField"]) == "byteField=10"
    assert path_partition_key("2026/12/01", ["y", "m", "d"]) == "y=2026/m=12/d=01"
    assert path_partition_key(HIVE_DEFAULT_PARTITION, ["region"]) == f"region={HIVE_DEFAULT_PARTITION}"
    assert path_partition_key("", ["region"]) is None
    assert path_partition_key("2026/12/01", ["dt"]) == "dt=2026%2F12%2F01"  # one field whose value has slashes
    # a path written without url-encoding is taken as written: its % is a character, escaped in the key
    assert path_partition_key("50%25", ["p"], escaped=False) == "p=50%2525"
    assert path_partition_key("50%25", ["p"]) == "p=50%25"
    assert path_partition_key("/dt=2026-12-01/") == "dt=2026-12-01"  # a leading or trailing '/' is no segment
    assert path_partition_key("XX=XX") == "XX=XX"  # only '/' is stripped
    assert path_partition_key("q=a=b", escaped=False) == "q=a%3Db"  # the name ends at the first '='
    # bare values, not one per named field: the path is one value of the first field (or of "partition")
    assert path_partition_key("2026/12", ["y", "m", "d"]) == "y=2026%2F12"
    assert path_partition_key("2026/12") == "partition=2026%2F12"


@settings(max_examples=examples(50))
@given(st.lists(fields.map(format_partition_key), max_size=30))
def test_touched_partitions_are_sorted_unique_and_counted(keys: list[str]) -> None:
    keys = [k for k in keys if len(k) <= MAX_PARTITION_KEY_LENGTH]
    touched = TouchedPartitions.of(keys)
    assert touched.keys == tuple(sorted(set(keys)))
    assert touched.count == len(set(keys)) and not touched.truncated
    assert TouchedPartitions.model_validate(partitions_json(touched)) == touched
    assert TouchedPartitions.model_validate(list(reversed(keys))) == touched  # a push names them as a list


@settings(max_examples=examples(10))
@given(st.integers(min_value=MAX_TOUCHED_PARTITIONS + 1, max_value=3 * MAX_TOUCHED_PARTITIONS))
def test_a_commit_touching_more_keeps_a_bounded_prefix_and_says_so(count: int) -> None:
    keys = [f"id={i:05d}" for i in range(count)]
    touched = TouchedPartitions.of(reversed(keys))
    assert touched.keys == tuple(keys[:MAX_TOUCHED_PARTITIONS])
    assert touched.count == count and touched.truncated


def test_long_keys_are_bounded_by_bytes_too() -> None:
    long_keys = [format_partition_key([("k", f"{i:04d}" + "v" * 400)]) for i in range(400)]
    touched = TouchedPartitions.of(long_keys)
    assert sum(len(k.encode()) for k in touched.keys) <= MAX_TOUCHED_PARTITION_BYTES
    assert touched.truncated and touched.count == 400 and 0 < len(touched.keys) < 400


@given(
    st.one_of(
        st.just({"keys": ["b=1", "a=1"], "count": 2, "truncated": False}),  # not sorted
        st.just({"keys": ["a=1"], "count": 2, "truncated": False}),  # count says more, truncated says no
        st.just({"keys": ["a=1", "a=1"], "count": 2, "truncated": False}),
        st.just({"keys": ["a=%2f"], "count": 1, "truncated": False}),  # not canonical
        st.lists(st.text(max_size=5).filter(lambda t: "=" not in t), min_size=1, max_size=3),
        st.just([f"id={i}" for i in range(MAX_TOUCHED_PARTITIONS + 1)]),
    )
)
def test_inconsistent_values_are_refused(value: object) -> None:
    with pytest.raises(ValidationError):
        TouchedPartitions.model_validate(value)


# Values a writer may leave in a table's log: short, long (a key past MAX_PARTITION_KEY_LENGTH), and with lone
# surrogates (a JSON log may escape one: "\\ud800"), which no JSON document or DynamoDB item can hold.
wild_values = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.text(min_size=MAX_PARTITION_KEY_LENGTH // 2, max_size=MAX_PARTITION_KEY_LENGTH),
    st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), min_size=1, max_size=8),
)
wild_keys = st.lists(st.tuples(names, wild_values), min_size=1, max_size=3, unique_by=lambda f: f[0]).map(
    format_partition_key
)


def recordable(key: str) -> bool:
    try:
        key.encode()
    except UnicodeEncodeError:
        return False
    return len(key) <= MAX_PARTITION_KEY_LENGTH


@settings(max_examples=examples(200))
@given(st.lists(wild_keys, max_size=30))
def test_a_key_that_cannot_be_recorded_is_counted_and_named_never_an_error(keys: list[str]) -> None:
    """Issue 33: one over-long (or unrepresentable) key stopped polling the table for good."""
    touched = TouchedPartitions.of(keys)
    good = sorted({k for k in keys if recordable(k)})
    bad = sorted({k for k in keys if not recordable(k)})
    assert touched.keys == tuple(good) and touched.count == len(good) and not touched.truncated
    assert touched.unrecorded == len(bad)
    assert len(touched.unrecorded_keys) == min(len(bad), MAX_UNRECORDED_NAMED)
    for named, key in zip(touched.unrecorded_keys, bad, strict=False):
        assert len(named) <= UNRECORDED_KEY_TEXT and f"({len(key)} characters)" in named
        assert named.startswith(key[:16].encode("utf-8", "backslashreplace").decode()[:16])
    # what is kept is a JSON document DynamoDB can hold, and reads back as the same value
    stored = json.dumps(partitions_json(touched), ensure_ascii=False).encode()
    assert TouchedPartitions.model_validate(json.loads(stored)) == touched
    assert ("unrecorded" in partitions_json(touched)) == bool(bad)


def test_an_over_long_key_is_named_by_its_start_and_length() -> None:
    long_key = format_partition_key([("a", "x" * 600)])
    touched = TouchedPartitions.of(["dt=2026-12-01", long_key, "dt=" + chr(0xD800)])
    assert partitions_json(touched) == {
        "keys": ["dt=2026-12-01"],
        "count": 1,
        "truncated": False,
        "unrecorded": 2,
        "unrecordedKeys": [
            f"{long_key[:64]}… (602 characters): longer than the limit of 512 characters",
            "dt=\\ud800 (4 characters): not valid Unicode text (a lone surrogate)",
        ],
    }
    # a key no reader writes (lower-case escapes) is not recorded either, rather than failing the read
    guarded = TouchedPartitions.of(["a=%2f", "a=1"])
    assert guarded.keys == ("a=1",) and guarded.unrecorded_keys == ("a=%2f (5 characters): not a canonical key",)
    # a push still names its keys as keys: one it cannot record is refused, not counted
    with pytest.raises(ValidationError):
        TouchedPartitions.model_validate([long_key])


# --- the keys past the bound: recorded in chunks, none dropped (issue 33) -------------------------------------------


@settings(max_examples=examples(30), deadline=None)
@given(
    st.integers(0, 3 * MAX_TOUCHED_PARTITIONS),
    st.integers(0, 400),
    st.lists(st.sampled_from(["a=%2f", "a=" + chr(0xD800), "a=" + "x" * 600]), max_size=3),
)
def test_a_reader_keeps_every_recordable_key_the_bound_in_its_event_the_rest_in_chunks(
    count: int, width: int, odd: list[str]
) -> None:
    """Kept keys and chunks are every recordable key once, in sorted order; each chunk holds at most one event's keys
    and bytes; the bounded value is :meth:`TouchedPartitions.of`'s; keys that cannot be recorded are counted."""
    keys = [format_partition_key([("k", f"{i:05d}" + "v" * (width if i % 7 == 0 else 0))]) for i in range(count)]
    found = TouchedPartitions.read([*reversed(keys), *odd, *keys[:5]])
    recorded = [*found.keys, *(k for chunk in found.more for k in chunk)]
    assert recorded == sorted(set(keys)) and found.count == len(recorded)
    assert found.truncated == bool(found.more) and found.unrecorded == len(set(odd))
    for chunk in found.more:
        assert 0 < len(chunk) <= MAX_TOUCHED_PARTITIONS
        assert sum(len(k.encode()) for k in chunk) <= MAX_TOUCHED_PARTITION_BYTES
    assert found.recorded == TouchedPartitions.of([*keys, *odd])
    assert partitions_json(found.recorded) == partitions_json(found) and "more" not in found.model_dump()
    assert overflow_of(keys) == TouchedPartitions.read(keys).more


def test_the_chunks_hold_sorted_keys_after_the_kept_ones_and_are_counted() -> None:
    kept = {"keys": ["a=1"], "count": 3, "truncated": True}
    assert ReadPartitions(**kept, more=(("a=2", "a=3"),)).more == (("a=2", "a=3"),)
    for wrong in ((("a=3", "a=2"),), (("a=0", "a=2"),), (("a=2",),), (("a=2",), ("a=3",), ("a=4",)), ((),)):
        with pytest.raises(ValidationError):
            ReadPartitions(**kept, more=wrong)
