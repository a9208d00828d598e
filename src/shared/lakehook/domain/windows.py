"""Windows of a group: which aligned window it claims next (the newest closed one, or with EACH_VERSION or coverage
the next after its cursor's), by its members' watermarks, coverage and CDC recoveries (``cdcRecoveredTo: window``),
or which member is short of it and why (the exact missing ranges of a coverage member, the CDC source's recovery).
Pure; :mod:`lakehook.domain.evaluation` calls it for a windowed group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from lakehook.domain.coverage import Span, covered_ratio, is_covered, missing, newest_covered_window
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.rules import Group, Member, Mode, Rule, WindowSpec
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.time import MAX_ISO_MS, ms_to_iso
from lakehook.domain.triggers import GroupCursor, Window
from lakehook.domain.verdicts import GroupEvaluation, first_blocked, with_status


def next_window(
    rule: Rule,
    group: Group,
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    members: list[MemberEvaluation],
    now: int,
    coverage: Mapping[str, Sequence[Span]],
) -> tuple[Window, int] | GroupEvaluation:
    """The window to claim: the newest closed one, or with EACH_VERSION (or coverage) the next one after the cursor;
    with it how many closed windows are still to run, that one included (arithmetic: none is enumerated)."""
    spec = group.window
    assert spec is not None
    size = spec.size_ms
    last = cursor.window if cursor is not None else None
    ends = _closed_ends(group, states, coverage, now, last)
    caught_up = _cdc_ends(group, states, size)
    newest = min([*ends.values(), *caught_up.values()])
    need = max(size, newest) if last is None else last.end + size
    if newest < need:
        _cdc_short(group, states, members, caught_up, need)
        return _not_closed_yet(group, members, ends, need, coverage, now, last)
    stepwise = (rule.policy.mode is Mode.EACH_VERSION or group.covers) and last is not None
    end = need if stepwise else newest
    for i, member in enumerate(group.members):  # the newest watermark window may be one a coverage member lacks
        spans = coverage.get(member.asset_key, ())
        if member.condition.coverage is not None and not is_covered(spans, end - size, end):
            _coverage_block(members, i, member, coverage, now, None, Span(end - size, end))
    if any(m.status is not Status.READY for m in members):
        return first_blocked(group.group_id, members)
    return Window(start=end - size, end=end), (newest - end) // size + 1


def cover_partition(
    group: Group,
    key: str,
    span: Span | None,
    states: Mapping[str, AssetState],
    members: list[MemberEvaluation],
    coverage: Mapping[str, Sequence[Span]],
    now: int,
) -> list[int]:
    """A partition's window is its own time ``span`` (a partitioned group with a coverage member, or EACH_VERSION with
    a watermark window): block each coverage member that has not covered it (the exact gaps) or whose lateness has not
    passed its end, and each ``cdcRecoveredTo: window`` member not caught up to its end; a partition with no span (no
    time value) blocks its coverage and watermark window members, saying so. A watermark window member is judged
    against the span: its watermark must have passed the span's end by its allowed lateness (:func:`_watermark_past`).
    Answers when a covered span closes, for a wait only its lateness holds."""
    closes: list[int] = []
    for i, member in enumerate(group.members):
        if member.condition.window is not None and span is not None:
            _watermark_past(key, span, member, states.get(member.asset_key), members, i)
        elif member.condition.window is not None:
            with_status(members, i, Status.BLOCKED_BY_WATERMARK, _no_span(group, key, "the watermark to close"))
        spec = member.condition.coverage
        if spec is not None and span is None:
            with_status(members, i, Status.BLOCKED_BY_COVERAGE, _no_span(group, key, "the coverage member to cover"))
        elif spec is not None and span is not None:
            spans = coverage.get(member.asset_key, ())
            if not is_covered(spans, span.start, span.end) or span.end + spec.lateness_ms > now:
                closes.extend(_coverage_block(members, i, member, coverage, now, None, span))
        state = states.get(member.asset_key)
        recovered = state.cdc_recovered_watermark if state is not None else None
        if member.condition.cdc_window and span is not None and recovered is not None:
            _cdc_short(group, states, members, {i: recovered}, span.end)
    return closes


def _no_span(group: Group, key: str, what: str) -> str:
    """Why partition ``key`` of a group whose partitions are their own windows has none."""
    return (
        f"{key} has no time value (a year, month, day or hour) naming instants in "
        f"{group.partition_timezone or 'UTC'}: there is no window for {what}"
    )


def _watermark_past(
    key: str, span: Span, member: Member, state: AssetState | None, members: list[MemberEvaluation], index: int
) -> None:
    """A watermark window member of a group whose partitions are their own windows: partition ``key``'s window is its
    span (the member's own window size is not used), closed once the watermark reached the span's end plus the
    member's allowed lateness; BLOCKED_BY_WATERMARK until then, naming the span and the watermark it needs."""
    windowed = member.condition.window
    assert windowed is not None
    need = span.end + windowed.lateness_ms
    watermark = state.watermark if state is not None else None
    if watermark is None or watermark >= need:
        return  # no watermark at all: its own condition blocks it already
    shown = f"[{ms_to_iso(span.start)}, {ms_to_iso(span.end)})"
    reason = (
        f"window {shown} of {key} is not closed yet: the watermark is {ms_to_iso(watermark)}, it closes at a "
        f"watermark of {ms_to_iso(need)}"
        if need <= MAX_ISO_MS
        else f"window {shown} of {key} can never close: with its allowed lateness it closes after "
        f"{ms_to_iso(MAX_ISO_MS)}, the last instant a watermark can hold"
    )
    required = {"watermarkAtLeast": need, "window": {"start": ms_to_iso(span.start), "end": ms_to_iso(span.end)}}
    with_status(members, index, Status.BLOCKED_BY_WATERMARK, reason, required)


def _closed_ends(
    group: Group,
    states: Mapping[str, AssetState],
    coverage: Mapping[str, Sequence[Span]],
    now: int,
    last: Window | None,
) -> dict[int, int]:
    """Per windowed or coverage member (by index), the end of the newest window it has closed: by its watermark, and
    for a coverage member by what is covered contiguously (after the last window, else the newest covered)."""
    ends: dict[int, int] = {}
    for i, member in enumerate(group.members):
        windowed = member.condition.window
        state = states.get(member.asset_key)
        if windowed is not None and state is not None and state.watermark is not None:
            ends[i] = windowed.newest_complete_end(state.watermark)
        covering = member.condition.coverage
        if covering is not None:
            end = _covered_end(coverage.get(member.asset_key, ()), covering, now, last.end if last else None)
            ends[i] = min(ends.get(i, end), end)
    return ends


def _cdc_ends(group: Group, states: Mapping[str, AssetState], size: int) -> dict[int, int]:
    """Per ``cdcRecoveredTo: window`` member (by index), the end of the newest window its CDC source has caught up
    to: a window ``[start, end)`` is caught up once the recovery watermark is at ``end`` or past it (no lateness:
    the source says every change before the watermark is in the table). A member with no recovery yet is blocked
    by its own condition before the window step."""
    ends: dict[int, int] = {}
    for i, member in enumerate(group.members):
        state = states.get(member.asset_key)
        if member.condition.cdc_window and state is not None and state.cdc_recovered_watermark is not None:
            ends[i] = (state.cdc_recovered_watermark // size) * size
    return ends


def _cdc_short(
    group: Group,
    states: Mapping[str, AssetState],
    members: list[MemberEvaluation],
    caught_up: Mapping[int, int],
    need: int,
) -> None:
    """Block each member whose CDC source has not caught up to the end of the window the group needs next."""
    for i, end in caught_up.items():
        if end < need:
            recovered = states[group.members[i].asset_key].cdc_recovered_watermark
            assert recovered is not None
            reason = (
                f"window ending {ms_to_iso(need)} needs the CDC source caught up to its end; it caught up to "
                f"{ms_to_iso(recovered)} (CDC_LAG_RECOVERED)"
            )
            with_status(members, i, Status.BLOCKED_BY_CDC_LAG, reason, {"cdcRecoveredTo": need})


def _not_closed_yet(
    group: Group,
    members: list[MemberEvaluation],
    ends: Mapping[int, int],
    need: int,
    coverage: Mapping[str, Sequence[Span]],
    now: int,
    last: Window | None,
) -> GroupEvaluation:
    """The window ending at ``need`` is not closed for every member: each member short of it is blocked (by its
    watermark, or its coverage with the exact gaps), and the group waits for the first coverage window to close."""
    closes: list[int] = []
    for i, end in ends.items():
        if end >= need:
            continue
        if group.members[i].condition.coverage is not None and (last is not None or end == 0):
            closes.extend(_coverage_block(members, i, group.members[i], coverage, now, last))
            continue
        windowed = group.members[i].condition.window
        assert windowed is not None
        with_status(
            members,
            i,
            Status.BLOCKED_BY_WATERMARK,
            _not_closed(need, windowed.lateness_ms),
            {"watermarkAtLeast": need + windowed.lateness_ms},
        )
    return first_blocked(group.group_id, members, until=min(closes, default=None))


def _not_closed(end: int, lateness_ms: int) -> str:
    """Why the window ending at ``end`` has not fired; one that could only close after the last instant
    lakehook holds (a watermark at 9999-12-31T23:59:59.999Z) never will, and says so."""
    if end + lateness_ms <= MAX_ISO_MS:
        return f"window ending {ms_to_iso(end)} is not closed yet"
    last = f"{ms_to_iso(MAX_ISO_MS)}, the last instant a watermark can hold"
    if end > MAX_ISO_MS:
        return f"the next window can never close: it ends after {last}"
    return f"window ending {ms_to_iso(end)} can never close: with its allowed lateness it closes after {last}"


def coverage_from(spec: WindowSpec, cursor: GroupCursor | None, now: int) -> int:
    """Where the coverage a group needs starts: the last triggered window's end, else a few windows back."""
    if cursor is not None and cursor.window is not None:
        return cursor.window.end
    return max(0, now - 3 * spec.size_ms - spec.lateness_ms)


def _covered_end(spans: Sequence[Span], spec: WindowSpec, now: int, after_end: int | None) -> int:
    """The end of the windows a coverage member can fire: contiguous from ``after_end``, else the newest (0: none)."""
    size, horizon = spec.size_ms, now - spec.lateness_ms
    if after_end is None:
        newest = newest_covered_window(spans, spec, now)
        return newest.end if newest is not None else 0
    # spans are merged, so what is covered contiguously from after_end lies in one span: no window is enumerated
    # (one interval covering years of minute windows costs the same as one covering a single window)
    span = next((s for s in spans if s.start <= after_end < s.end), None)
    if span is None:
        return after_end
    reach = min(span.end, horizon)
    return after_end + max(0, (reach - after_end) // size) * size


def _coverage_block(
    members: list[MemberEvaluation],
    index: int,
    member: Member,
    coverage: Mapping[str, Sequence[Span]],
    now: int,
    last: Window | None,
    window: Span | None = None,
) -> list[int]:
    """Mark a coverage member blocked on the window it needs next (after the last one, else the newest that
    ended), with the exact gaps; answer when that window closes if only its allowed lateness holds it."""
    spec = member.condition.coverage
    assert spec is not None
    size = spec.size_ms
    if window is None:
        end = last.end + size if last is not None else (now // size) * size
        window = Span(end - size, end)
    gaps = missing(coverage.get(member.asset_key, ()), window.start, window.end)
    shown = f"[{ms_to_iso(window.start)}, {ms_to_iso(window.end)})"
    closes = window.end + spec.lateness_ms
    if gaps:
        listed = ", ".join(f"[{ms_to_iso(g.start)}, {ms_to_iso(g.end)})" for g in gaps)
        reason = f"window {shown} is not covered; missing {listed}"
    else:
        reason = f"window {shown} is covered; it closes at {ms_to_iso(closes)} (allowedLatenessSeconds)"
    m = members[index]
    current = {
        **m.current,
        "missing": [{"start": ms_to_iso(g.start), "end": ms_to_iso(g.end)} for g in gaps],
        "coveredRatio": covered_ratio(window.length - sum(g.length for g in gaps), window.length),
    }
    required = {"window": {"start": ms_to_iso(window.start), "end": ms_to_iso(window.end)}}
    members[index] = replace(
        m, status=Status.BLOCKED_BY_COVERAGE, reason=reason, current=current, required={**m.required, **required}
    )
    return [] if gaps or closes <= now else [closes]
