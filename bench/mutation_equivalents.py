"""Equivalent mutants: survivors no test can kill, because the mutated code behaves as the code does.

Each entry is the mutant's name, the line mutmut wrote (the reason holds for that line only: a mutant renumbered by a
change of its function shows without a reason until it is judged again) and the reason, one line, written into the
survivors list of ``bench/results.md`` by ``bench.mutation``.
"""

from __future__ import annotations

EQUIVALENT: dict[str, tuple[str, str]] = {
    "lakehook.domain.signing.x_verify__mutmut_13": (
        'expected = sign(secret, body, timestamp).split("v1=", )[1]',
        "a header `sign` writes (`t=<int>,v1=<hex>`) holds `v1=` once: every split gives the same second part",
    ),
    "lakehook.domain.signing.x_verify__mutmut_14": (
        'expected = sign(secret, body, timestamp).rsplit("v1=", 1)[1]',
        "a header `sign` writes holds `v1=` once: splitting from the right gives the same second part",
    ),
    "lakehook.domain.signing.x_verify__mutmut_23": (
        'expected = sign(secret, body, timestamp).split("v1=", 2)[1]',
        "a header `sign` writes holds `v1=` once: a second split never happens",
    ),
    "lakehook.domain.partitions.x_path_partition_key__mutmut_26": (
        "elif i <= len(names) and len(segments) == len(names):",
        "with as many segments as names, a segment's index is below len(names), so `<=` and `<` agree",
    ),
    "lakehook.domain.partitions.x__path_value__mutmut_1": (
        "return None if (text == HIVE_DEFAULT_PARTITION) and False else unescape(text)",
        "the default partition's name read as text formats to the same key as a null (and unescapes to itself)",
    ),
    "lakehook.domain.partitions.x_unrecorded_key_shown__mutmut_8": (
        'shown = start.encode("UTF-8", "backslashreplace").decode()',
        "codec names are case-insensitive: `UTF-8` is `utf-8`",
    ),
    "lakehook.domain.partitions.xǁTouchedPartitionsǁof__mutmut_3": (
        "fields, _ = _bounded(keys, every=None)",
        "`every` is only read as `not every`, and None is false as False is",
    ),
    "lakehook.domain.partitions.x__bounded__mutmut_16": (
        "full = None",
        "`full` is first read after `full = full or …` made it a bool, and None is false as False is",
    ),
    "lakehook.domain.partitions.x__chunked__mutmut_6": (
        "if chunk or (len(chunk) == MAX_TOUCHED_PARTITIONS or size + length > MAX_TOUCHED_PARTITION_BYTES):",
        "with no chunk yet the test is `length > 65,536`, and a recordable key is at most 512 characters (2,048 bytes)",
    ),
    "lakehook.wire.partition_keys.x_unescape_path_name__mutmut_17": (
        'if text[i] == "%" and len(pair) == 2 and set(pair) < _HEX:',
        "two characters are never all 22 hex digits: a subset of them is always a proper one",
    ),
}
