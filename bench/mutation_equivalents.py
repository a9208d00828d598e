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
    "lakehook.domain.coverage.x__read_varints__mutmut_14": (
        "if shift > 64:",
        "a shift grows by 7: past 63 and past 64 are both 70",
    ),
    "lakehook.domain.coverage.x_clip__mutmut_13": (
        "last = bisect_left([s.start for s in merged], end, )  # spans starting at or after end are outside",
        "the spans before `first` end at or before `start`, so start before `end`: the search finds the same index",
    ),
    "lakehook.domain.coverage.x_clip__mutmut_17": (
        "if out[0].start <= start:",
        "when the edge span starts at `start` it is replaced by itself",
    ),
    "lakehook.domain.coverage.x_clip__mutmut_27": (
        "if out[-1].end >= end:",
        "when the edge span ends at `end` it is replaced by itself",
    ),
    "lakehook.domain.coverage.x_join_sorted__mutmut_6": (
        "if span.end >= out[-1].end:",
        "an equal end replaces the last span by itself",
    ),
    "lakehook.domain.coverage.x_merge__mutmut_11": (
        "if end >= merged[-1].end:",
        "an equal end replaces the last span by itself",
    ),
    "lakehook.domain.coverage.x_newest_covered_window__mutmut_5": (
        "if span.start > horizon:",
        "a span starting at the horizon holds no closed window (its aligned end is at or before its start): skipped "
        "either way",
    ),
    "lakehook.domain.coverage.x_segments_between__mutmut_14": (
        "return list(range(segment_start(start), segment_start(end - 1) + 2, SEGMENT_MS))",
        "the stop is a day start plus 1 or 2 ms: either way the range ends with that day",
    ),
    "lakehook.domain.late_versions.x_ran_among__mutmut_18": (
        "if pin.ordinal[0] <= record.order and trigger.replay_of is None:",
        "here the pin names another snapshot, and two snapshots of an asset never share an order",
    ),
    "lakehook.domain.producers.xǁProducerǁtakes_bus_events_from__mutmut_4": (
        "allowed = self.bus_accounts or ([stack_account] if (stack_account) or True else [])",
        "the stack's account is 12 digits or None (account_of) and an event's a string: `[None]` admits none",
    ),
    "lakehook.domain.state.x__manifest_claim__mutmut_29": (
        'key = order_key(event, recorded_at, rank=0 if claim == "SEALED" else 2)',
        "the rank only orders an interruption after a seal at the same time: 2 does as 1 does",
    ),
    "lakehook.domain.state.x__manifest_claim__mutmut_34": (
        "settled_later=None,",
        "settled_later is read only for an equality guard without applied_if; this one is Below with applied_if",
    ),
    "lakehook.domain.state.x__manifest_claim__mutmut_38": (
        "",
        "settled_later dropped: it is read only for an equality guard without applied_if; this one is Below with "
        "applied_if",
    ),
    "lakehook.domain.state.x__manifest_claim__mutmut_7": (
        'claim = "SEALED" if event.event_type is EventType.MANIFEST_SEALED else "XXINTERRUPTEDXX"',
        "the stored claim is compared only with SEALED and with the same event's own spelling (applied_if)",
    ),
    "lakehook.domain.state.x__manifest_claim__mutmut_8": (
        'claim = "SEALED" if event.event_type is EventType.MANIFEST_SEALED else "interrupted"',
        "the stored claim is compared only with SEALED and with the same event's own spelling (applied_if)",
    ),
    "lakehook.domain.state.x__quality_verdict__mutmut_1": (
        "assert event.snapshot_id is not None or event.snapshot_order is not None",
        "the event's validation requires both for a quality verdict: the weaker assert never fails either",
    ),
    "lakehook.domain.state.x__snapshot_committed__mutmut_1": (
        "assert event.snapshot_id is not None or event.snapshot_order is not None",
        "the event's validation requires both for a snapshot: the weaker assert never fails either",
    ),
    "lakehook.domain.state.x_snapshot_record__mutmut_1": (
        "assert event.snapshot_id is not None or event.snapshot_order is not None",
        "the event's validation requires both for a snapshot: the weaker assert never fails either",
    ),
    "lakehook.domain.state.x_advance_for__mutmut_1": (
        "def advance_for(event: AssetEvent, recorded_at: int = 1) -> Advance \\| None:",
        "no caller leaves recorded_at out (usecases/ingest.py, usecases/ingest_state.py): the default is never used",
    ),
    "lakehook.domain.state.x_advance_for__mutmut_5": (
        "return advance(event, recorded_at) if (advance is not None) or True else None",
        "every EventType has its rule in _ADVANCES: `advance` is never None",
    ),
    "lakehook.domain.state.x_verification_advance__mutmut_7": (
        "changes = ((StateField.MANIFEST_SHA256, sha256),)",
        "a hash is stored only with SEALED (a claim and INVALID clear it): the hash alone tells this verdict applied",
    ),
    "lakehook.domain.state.xǁAssetStateǁquality_of__mutmut_10": (
        "if failed is None or failed <= record.order:",
        "an equal order is this very snapshot, whose failure the first test already answered",
    ),
    "lakehook.wire.partition_keys.x_unescape_path_name__mutmut_17": (
        'if text[i] == "%" and len(pair) == 2 and set(pair) < _HEX:',
        "two characters are never all 22 hex digits: a subset of them is always a proper one",
    ),
}
