"""Partition keys at their edges: Hive's escaping of ``=``, ``/``, ``%`` and Unicode, nulls, the 512-character
limit, the exact byte bound of a commit's value and of its chunks, and the texts that say why a key is refused or
left out (issue 37: each test here kills mutants of ``domain/partitions.py`` or ``wire/partition_keys.py`` that the
other partition tests let live; bench/results.md, "mutation", names them)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lakehook.domain.limits import (
    MAX_PARTITION_KEY_LENGTH,
    MAX_TOUCHED_PARTITION_BYTES,
    MAX_TOUCHED_PARTITIONS,
    UNRECORDED_KEY_SHOWN,
    UNRECORDED_KEY_TEXT,
)
from lakehook.domain.partitions import (
    HIVE_DEFAULT_PARTITION,
    PartitionKeyError,
    TouchedPartitions,
    canonical_partition_key,
    format_partition_key,
    parse_partition_key,
    path_partition_key,
    unrecordable,
    unrecorded_key_shown,
)
from lakehook.wire.partition_keys import escape_path_name, partition_fields, unescape_path_name
from tests.hypothesis_profiles import examples

LIMIT = MAX_PARTITION_KEY_LENGTH
TOO_LONG = f"a partition key is at most {LIMIT} characters"
# Characters Hive escapes (each becomes three: %XX), '=' and '/' among them, then some it writes as they are.
ESCAPED = "=/%:#?*'\"[]{^\\\x00\x1f\x7f"
PLAIN = "az09-_. é€😀中"
key_text = st.text(st.one_of(st.sampled_from(ESCAPED + PLAIN), st.characters(exclude_categories=["Cs"])), max_size=60)


def key_of_length(text: str, length: int) -> str:
    """A canonical one-field key of exactly ``length`` characters whose value starts with ``text`` (escaped)."""
    key = f"k={escape_path_name(text)}"
    return key + "v" * (length - len(key))


# --- the 512-character limit ----------------------------------------------------------------------------------------


@settings(max_examples=examples(100))
@given(key_text, st.sampled_from([-1, 0, 1]))
@example("", 0)
@example("=/%", 0)
@example("😀中é", 1)
def test_a_key_of_the_limit_is_recorded_and_one_character_more_is_refused_saying_so(text: str, past: int) -> None:
    """512 characters is a key (parsed, canonical, recorded); 513 is refused with the limit named, and left out of a
    commit's value as too long. Kills ``>`` read as ``>=`` in parse_partition_key, canonical_partition_key and
    _unstorable, and a refusal without its text."""
    key = key_of_length(text, LIMIT + past)
    assert len(key) == LIMIT + past
    value = text + "v" * (LIMIT + past - len(key_of_length(text, 0)))
    if past <= 0:
        assert parse_partition_key(key) == (("k", value or None),)
        assert canonical_partition_key(key) == key and unrecordable(key) is None
        assert TouchedPartitions.of([key]).keys == (key,)
        return
    for refuse in (parse_partition_key, canonical_partition_key):
        with pytest.raises(PartitionKeyError) as refused:
            refuse(key)
        assert str(refused.value) == TOO_LONG
    assert unrecordable(key) == f"longer than the limit of {LIMIT} characters"
    left_out = TouchedPartitions.of([key])
    assert left_out.keys == () and left_out.unrecorded == 1


@settings(max_examples=examples(50))
@given(st.text(st.sampled_from(":=?*#[]^{'\"\\%"), min_size=1, max_size=60), st.sampled_from([-1, 0, 1]))
@example(":" * 170, 0)
def test_a_key_whose_canonical_form_passes_the_limit_is_refused_though_it_is_shorter(raw: str, past: int) -> None:
    """A key written with its escapable characters bare is shorter than its canonical form (each becomes ``%XX``):
    the canonical form is what is held to the limit. Kills ``>`` read as ``>=`` in canonical_partition_key and its
    refusal without its text."""
    canonical = f"k={escape_path_name(raw)}"
    pad = "v" * (LIMIT + past - len(canonical))
    written, canonical = f"k={raw}{pad}", canonical + pad
    assert len(written) < len(canonical) == LIMIT + past
    if past <= 0:
        assert canonical_partition_key(written) == canonical
        return
    with pytest.raises(PartitionKeyError) as refused:
        canonical_partition_key(written)
    assert str(refused.value) == TOO_LONG


# --- '=' and '/' in names and values, nulls, and what is no key -----------------------------------------------------


@given(key_text.filter(bool), key_text)
@example("q", "a=b")
@example("dt", "2026-12-01=x=y")
def test_a_name_ends_at_the_first_equals_sign_the_rest_is_the_value(name: str, value: str) -> None:
    """A key written with a bare ``=`` in its value (not canonical: lakehook writes ``%3D``) still reads as its
    name and the whole rest; its canonical form escapes it. Kills ``partition`` read as ``rpartition``."""
    written = f"{escape_path_name(name)}={escape_path_name(value).replace('%3D', '=')}"
    null = value in ("", HIVE_DEFAULT_PARTITION)
    assert partition_fields(written) == ((name, None if null else value),)
    assert canonical_partition_key(written) == format_partition_key([(name, value)])


@given(key_text.filter(bool), st.sampled_from([None, "", HIVE_DEFAULT_PARTITION]))
def test_a_null_an_empty_value_and_hives_default_name_are_one_null(name: str, value: str | None) -> None:
    key = format_partition_key([(name, value)])
    assert key == f"{escape_path_name(name)}={HIVE_DEFAULT_PARTITION}"
    assert parse_partition_key(key) == ((name, None),) and path_partition_key(key) == key


def test_what_cannot_be_formatted_is_refused_saying_why() -> None:
    """Kills the refusals of format_partition_key without (or with another) text."""
    with pytest.raises(PartitionKeyError) as refused:
        format_partition_key([])
    assert str(refused.value) == "a partition key names at least one field"
    with pytest.raises(PartitionKeyError) as refused:
        format_partition_key([("dt", "1"), ("", "x")])
    assert str(refused.value) == "a partition field has no name"


def test_a_refusal_quotes_the_first_80_characters_of_the_key_and_40_of_the_part() -> None:
    """A long key's refusal stays short: the key's start and the part's (or name's) start, each a fixed length.
    Kills the quoted lengths read one longer."""
    long_part = "x" * 100
    with pytest.raises(PartitionKeyError) as refused:
        partition_fields(f"dt=1/{long_part}")
    assert str(refused.value) == (
        f"partition key {('dt=1/' + long_part)[:80]!r}: each part is name=value, not {long_part[:40]!r}"
    )
    name = "n" * 50
    key = f"{name}=1/{name}=2"
    with pytest.raises(PartitionKeyError) as refused:
        partition_fields(key)
    assert str(refused.value) == f"partition key {key[:80]!r} names {name[:40]!r} twice"


@given(key_text)
@example("%2G%%3%")
@example("a/b=c:d")
def test_unescaping_reads_escapes_in_either_case_and_leaves_any_other_percent(text: str) -> None:
    """``%`` and two hex digits, upper- or lower-case, is one character; a ``%`` without two hex digits stays as
    written (Hive's unescapePathName). Kills a read past the two digits, and an escape read without its ``%``."""
    escaped = escape_path_name(text)
    lowered = re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), escaped)
    assert unescape_path_name(escaped) == unescape_path_name(lowered) == text
    assert unescape_path_name(escaped + escaped) == text + text  # one escape right after another
    for stray in ("%", "%4", "%G1", "%%41"):
        assert unescape_path_name(escaped + stray) == text + unescape_path_name(stray)
    assert unescape_path_name("%%41") == "%A" and unescape_path_name("%G1") == "%G1"
    bare = re.sub(r"[%0-9a-fA-F]", "", text)  # no escape to read: as written
    assert unescape_path_name(bare) == bare


# --- why a key is left out ------------------------------------------------------------------------------------------


def test_unrecordable_says_why_each_key_cannot_be_recorded() -> None:
    """Kills ``or`` read as ``and`` in unrecordable and the parser's reason lost (``str(None)``)."""
    assert unrecordable("dt=2026-12-01") is None
    assert unrecordable("a=%2f") == "not a canonical key"
    assert unrecordable("nokey") == "partition key 'nokey': each part is name=value, not 'nokey'"
    assert unrecordable("dt=" + chr(0xD800)) == "not valid Unicode text (a lone surrogate)"
    assert unrecordable("a=" + "x" * LIMIT) == f"longer than the limit of {LIMIT} characters"
    named = TouchedPartitions.of(["nokey"]).unrecorded_keys
    assert named == ("nokey (5 characters): partition key 'nokey': each part is name=value, not 'nokey'",)


@given(st.text(min_size=1, max_size=300), st.text(max_size=300))
@example("a=" + "x" * 600, "w" * 172)  # exactly UNRECORDED_KEY_TEXT characters: shown whole
@example("a=" + "x" * 600, "w" * 173)  # one more: cut to the limit, ending in '…'
@example("a=" + chr(0xD800) * 100, "not valid Unicode text (a lone surrogate)")
def test_a_left_out_key_is_named_in_at_most_256_characters(key: str, why: str) -> None:
    """Its first 64 characters (a lone surrogate as ``\\ud800``), '…' when there are more, its length and why; cut
    to 255 characters and '…' when that is longer than 256. Kills the bound read as ``<`` and the cut one off."""
    start = key[:UNRECORDED_KEY_SHOWN].encode("utf-8", "backslashreplace").decode()
    whole = f"{start}{'…' if len(key) > UNRECORDED_KEY_SHOWN else ''} ({len(key)} characters): {why}"
    shown = unrecorded_key_shown(key, why)
    if len(whole) <= UNRECORDED_KEY_TEXT:
        assert shown == whole
    else:
        assert shown == whole[: UNRECORDED_KEY_TEXT - 1] + "…" and len(shown) == UNRECORDED_KEY_TEXT


def test_a_key_of_lone_surrogates_is_named_cut_to_the_limit_in_the_commits_value() -> None:
    """Sixty-four lone surrogates shown as ``\\udXXX`` are 384 characters: the name is cut, the value still valid.
    Kills the cut left out (the value would refuse a name past 256 characters)."""
    key = "a=" + chr(0xD800) * 100
    (named,) = TouchedPartitions.of([key, "a=1"]).unrecorded_keys
    assert len(named) == UNRECORDED_KEY_TEXT and named.endswith("…") and named.startswith("a=\\ud800\\ud800")


# --- the bound of a commit's value, and of each chunk past it ------------------------------------------------------

FILLERS = ["v", "é", "€", "😀"]  # one to four bytes each in UTF-8


def keys_of(widths: list[tuple[int, int]]) -> list[str]:
    """Sorted distinct keys, the i-th ``k=`` and five digits then ``repeat`` characters of ``width`` bytes."""
    return [f"k={i:05d}{FILLERS[width - 1] * repeat}" for i, (width, repeat) in enumerate(widths)]


def size(keys: tuple[str, ...] | list[str]) -> int:
    return sum(len(k.encode()) for k in keys)


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, LIMIT - 7)), max_size=400))
@example([(1, LIMIT - 7)] * (3 * 128 + 5))  # 512-byte keys: 128 of them are the byte bound exactly
@example([(1, 0)] * (2 * MAX_TOUCHED_PARTITIONS + 500))  # short keys: the count bound
@example([(4, 126)] * 200)  # four-byte characters: 512 bytes in 134 characters
def test_the_kept_keys_and_each_chunk_take_as_many_keys_as_fit(widths: list[tuple[int, int]]) -> None:
    """The kept keys, then each chunk, are the longest run of the sorted keys within both bounds (at most 1,000 keys
    and 65,536 bytes of UTF-8): each group full but the last, a key of the next one would not fit. Kills the byte
    bound read as ``>=``, a byte count started at 1 (the kept keys' or a chunk's) and the count bound alone."""
    keys = keys_of(widths)
    found = TouchedPartitions.read(reversed(keys))
    groups = [found.keys, *found.more]
    assert [k for group in groups for k in group] == keys and found.count == len(keys)
    for group, after in itertools.pairwise(groups):
        assert len(group) <= MAX_TOUCHED_PARTITIONS and size(group) <= MAX_TOUCHED_PARTITION_BYTES
        assert (
            len(group) == MAX_TOUCHED_PARTITIONS or size(group) + len(after[0].encode()) > MAX_TOUCHED_PARTITION_BYTES
        )
    assert size(groups[-1]) <= MAX_TOUCHED_PARTITION_BYTES and len(groups[-1]) <= MAX_TOUCHED_PARTITIONS


def test_512_byte_keys_fill_the_value_and_each_chunk_with_exactly_128() -> None:
    keys = keys_of([(1, LIMIT - 7)] * (3 * 128 + 5))
    assert {len(k.encode()) for k in keys} == {512} and MAX_TOUCHED_PARTITION_BYTES == 128 * 512
    found = TouchedPartitions.read(keys)
    assert len(found.keys) == 128 and [len(c) for c in found.more] == [128, 128, 5]
    assert TouchedPartitions.of(keys) == found.recorded


def test_a_value_checks_only_the_keys_it_keeps_and_a_reader_checks_them_all() -> None:
    """:meth:`TouchedPartitions.of` parses the kept keys only (a commit may name 10,000): a key past the bound that
    is no canonical key is counted as touched there, and left out (unrecorded) by a reader, who checks every key.
    Kills ``of`` checking every key."""
    kept = [f"id={i:05d}" for i in range(MAX_TOUCHED_PARTITIONS)]
    odd = "id=zz%2f"  # lower-case escape: sorts after the kept keys, no canonical key
    bounded = TouchedPartitions.of([*kept, odd])
    assert bounded.keys == tuple(kept) and bounded.count == MAX_TOUCHED_PARTITIONS + 1 and bounded.unrecorded == 0
    read = TouchedPartitions.read([*kept, odd])
    assert read.keys == tuple(kept) and read.count == MAX_TOUCHED_PARTITIONS and read.unrecorded == 1
    assert read.more == () and not read.truncated
