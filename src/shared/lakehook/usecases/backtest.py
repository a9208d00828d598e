"""Backtest: ``POST /rules/{ruleId}/backtest`` and ``lakehook backtest``: a rule not applied yet, or a changed
version of one, tried on the stored event history. It answers the runs the rule would have started in
``[from, to)``, each with its pinned inputs and partition, and what it would be waiting for at ``to``.

How: the rule is checked as a PUT checks it (a 400 naming what is wrong). The accepted events of its members, every
one still kept (raw events expire ``eventRetentionDays`` after they were received) and received before ``to``, are
read newest first, a page of :data:`PAGE` events a query, at most :data:`MAX_EVENTS` of them (more is a 400 that
says so, never a silent cut), replayed in at most :data:`BUDGET_S` seconds (past it, a 400 too). They are replayed
in the order they were received (:mod:`.backtest_replay`): those before ``from`` make the members' states, the rule
is applied at ``from`` as a PUT would apply it, and the rest run through the real resolver on throw-away stores.
Nothing is written to the stack's stores; nothing is dispatched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.errors import ValidationError
from lakehook.domain.rules import Rule
from lakehook.domain.time import instant_from_json, ms_to_iso, now_ms
from lakehook.ports.rules import RuleStore
from lakehook.ports.store import AssetStore, RecordedEvent
from lakehook.usecases.backtest_replay import ReplayWorld
from lakehook.usecases.rule_reads import read_rule
from lakehook.usecases.rule_writes import PutRule

PAGE = 500  # events a query reads (one DynamoDB query of the events index each)
MAX_EVENTS = 1000  # events one backtest replays; a history holding more is a 400
BUDGET_S = 20.0  # seconds of replay one request may take (API Gateway answers 504 at 29 s); past it: a 400
DAY_MS = 86_400_000
_FIELDS = {"rule", "from", "to"}


@dataclass(frozen=True)
class Span:
    """``[start, end)`` in epoch milliseconds, and how far back the history goes (``floor``)."""

    start: int
    end: int
    floor: int


@dataclass(frozen=True)
class History:
    """The members' recorded events before ``to``, oldest first, and the queries it took."""

    events: list[RecordedEvent]
    queries: int


class BacktestRule:
    """Try a rule on the stored history. ``check``: the PUT's own checks (:meth:`PutRule.check`)."""

    def __init__(
        self,
        rules: RuleStore,
        assets: AssetStore,
        check: PutRule,
        retention_days: int,
        clock: Callable[[], int] = now_ms,
        max_events: int = MAX_EVENTS,
        budget_s: float = BUDGET_S,
    ) -> None:
        self._rules = rules
        self._assets = assets
        self._check = check
        self._retention_ms = retention_days * DAY_MS
        self._clock = clock
        self._max_events = max_events
        self._budget_s = budget_s

    def backtest(self, rule_id: str, body: Any) -> dict[str, Any]:
        """The runs the rule (``body["rule"]``, or the stored one) would have started in ``[from, to)``."""
        body = _body(body)
        rule = self._rule(rule_id, body.get("rule"))
        span = self._span(body)
        deadline = time.monotonic() + self._budget_s  # one budget for the reads and every phase of the replay
        history = self._history(rule, span)
        world = ReplayWorld(history.events[0].received_at if history.events else span.start)
        earlier = [e for e in history.events if e.received_at < span.start]
        events = len(history.events)
        self._replay(world, earlier, deadline, 0, events)
        world.apply(rule, span.start)
        self._replay(world, history.events[len(earlier) :], deadline, len(earlier), events)
        world.until(span.end)
        self._in_time(deadline, events, events)
        return {
            "ruleId": rule.rule_id,
            "from": ms_to_iso(span.start),
            "to": ms_to_iso(span.end),
            "history": {
                "keptFrom": ms_to_iso(span.floor),
                "eventRetentionDays": self._retention_ms // DAY_MS,
                "eventsRead": len(history.events),
                "eventsBeforeFrom": len(earlier),
                "queries": history.queries,
            },
            "runs": [TriggerAnswer.from_domain(t).dump() for t in world.claims()],
            "waitingNow": world.explain(rule.rule_id),
            "errors": world.failures,
        }

    def _replay(
        self, world: ReplayWorld, events: list[RecordedEvent], deadline: float, before: int, total: int
    ) -> None:
        for done, recorded in enumerate(events):
            self._in_time(deadline, before + done, total)
            world.feed(recorded)

    def _in_time(self, deadline: float, done: int, total: int) -> None:
        """A clear 400 once the backtest's one budget is spent (API Gateway gives a request 29 s)."""
        if time.monotonic() > deadline:
            raise ValidationError(
                f"the backtest took more than {self._budget_s:g} s (after {done} of {total} events): set to "
                "earlier (fewer events), then try the rest",
                field="to",
            )

    def _rule(self, rule_id: str, given: Any) -> Rule:
        if given is None:
            return read_rule(self._rules, rule_id).rule
        try:
            return self._check.check(rule_id, given)
        except ValidationError as exc:
            raise ValidationError(f"rule: {exc}", field=f"rule.{exc.field}" if exc.field else "rule") from exc

    def _span(self, body: Mapping[str, Any]) -> Span:
        now = self._clock()
        floor = now - self._retention_ms
        end = _instant(body, "to", now)
        start = _instant(body, "from", floor)
        if start >= end:
            raise ValidationError(f"from ({ms_to_iso(start)}) must be before to ({ms_to_iso(end)})", field="from")
        if end > now:
            raise ValidationError(f"to ({ms_to_iso(end)}) is in the future (now: {ms_to_iso(now)})", field="to")
        if start < floor:
            raise ValidationError(
                f"from ({ms_to_iso(start)}) is before the oldest history kept ({ms_to_iso(floor)}): events are kept "
                f"{self._retention_ms // DAY_MS} days (eventRetentionDays)",
                field="from",
            )
        return Span(start, end, floor)

    def _history(self, rule: Rule, span: Span) -> History:
        """The members' kept events received before ``span.end``, oldest first (ties: by event id)."""
        found: list[RecordedEvent] = []
        queries = 0
        for key in sorted(set(rule.asset_keys)):
            token: str | None = None
            while True:
                page = self._assets.list_events(key, PAGE, token)
                queries += 1
                kept = [e for e in page.items if e.received_at >= span.floor]
                found.extend(e for e in kept if e.received_at < span.end)
                if len(found) > self._max_events:
                    raise ValidationError(
                        f"the history of the rule's members before to holds more than {self._max_events} events "
                        f"(the most one backtest replays): set to earlier, or try fewer members",
                        field="to",
                    )
                token = page.next_token
                if token is None or len(kept) < len(page.items):  # past the oldest kept event
                    break
        found.sort(key=lambda e: (e.received_at, e.event.event_id))
        return History(found, queries)


def _body(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ValidationError('body must be an object: {"rule": {...}, "from": ..., "to": ...}', field="body")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise ValidationError(f"unknown field {unknown[0]!r}: a backtest takes rule, from and to", field=unknown[0])
    return body


def _instant(body: Mapping[str, Any], name: str, default: int) -> int:
    value = body.get(name)
    if value is None:
        return default
    try:
        return instant_from_json(value)
    except ValueError as exc:
        raise ValidationError(f"{name}: {exc}", field=name) from exc
