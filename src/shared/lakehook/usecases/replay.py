"""Replay a trigger: pre-flight every pinned input, then claim a new trigger that re-reads exactly the same.

Any trigger whose run manifest exists can be replayed, a FAILED one included (the dispatcher writes the
manifest before it does anything else, so a claim that was ever dispatched has one; a claim whose
dispatcher died before marking it is found through the manifest store).

``POST /triggers/{triggerKey}/replay`` answers the pre-flight checklist item by item (every pinned
spool manifest still sealed and verifying, every pinned Iceberg / Paimon snapshot still retained,
no incompatible schema drift). When any item fails, nothing is claimed and the answer is 409 with the
checklist. Otherwise a new claim carries the next free replay epoch, the same pinned inputs and
window, the run manifest of the trigger it replays, and ``replayOf``; the dispatcher starts it like
any claim, re-using that manifest. The claim item is the audit record (listed with the rule's triggers).

The request may choose where the rerun starts and which variables it overrides (``{"startFrom": ..., "variables":
{...}}``, :mod:`lakehook.domain.replay_choices`); they are stored on the replay's claim (its key is the same as
without them), so every attempt of its dispatch sends the same, and a choice the rule's target cannot honour is a
400 before anything is claimed.

Under an ``Idempotency-Key`` (:mod:`lakehook.domain.requests`) the claim and the answer are recorded in one
transaction, so the same request repeated answers the first answer again and claims nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakehook.answers.triggers import ReplayAnswer
from lakehook.domain.dispatch import ManifestIntegrityError
from lakehook.domain.errors import ConflictError, LakehookError, NotFoundError
from lakehook.domain.json_form import json_form
from lakehook.domain.replay_choices import ReplayChoices, check_for_target
from lakehook.domain.requests import RecordedRequest, RequestAnswer, RequestKey
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import Trigger, TriggerStatus, trigger_key
from lakehook.observability import logger
from lakehook.ports.dispatch import ManifestStore
from lakehook.ports.rules import RuleStore, TriggerStore
from lakehook.usecases.spool import PreflightReplay, PreflightReport, ReplayInput

MAX_EPOCH_TRIES = 100


class ReplayRefusedError(LakehookError):
    """The pre-flight found an input a replay could not read exactly as the trigger did."""

    def __init__(self, trigger_key: str, report: PreflightReport) -> None:
        failed = "; ".join(f"{i.check.value} {i.asset_key}: {i.reason}" for i in report.failures)
        super().__init__(f"trigger {trigger_key!r} cannot be replayed: {failed}")
        self.trigger_key = trigger_key
        self.report = report


@dataclass(frozen=True)
class ReplayOutcome:
    """The checklist, and the new claim (None for a dry run): ``lakehook.answers.triggers.ReplayAnswer`` answers it."""

    replays: Trigger
    report: PreflightReport
    replay: Trigger | None = None


class ReplayTrigger:
    """Pre-flight a trigger's pinned inputs and, unless it is a dry run, claim its replay."""

    def __init__(
        self,
        triggers: TriggerStore,
        preflight: PreflightReplay,
        clock: Callable[[], int] = now_ms,
        manifests: ManifestStore | None = None,
        rules: RuleStore | None = None,
    ) -> None:
        self._triggers = triggers
        self._preflight = preflight
        self._clock = clock
        self._manifests = manifests
        self._rules = rules

    def replay(self, key: str, dry_run: bool = False, choices: ReplayChoices | None = None) -> ReplayOutcome:
        """Raises NotFoundError, ConflictError (nothing to replay) or ReplayRefusedError (the checklist failed);
        ValidationError for ``choices`` the rule's target cannot honour."""
        outcome = self._replay(key, dry_run, None, choices or ReplayChoices())
        assert isinstance(outcome, ReplayOutcome)  # only a request key has a recorded answer
        return outcome

    def answer(
        self,
        key: str,
        dry_run: bool = False,
        idempotency_key: str | None = None,
        choices: ReplayChoices | None = None,
    ) -> RequestAnswer:
        """The route's answer (201 with the claim; 200 for a dry run). Under an ``idempotency_key`` a request made
        before answers its first answer again (``replayed``), and a key used for another trigger (or the same
        trigger with other choices) raises IdempotencyKeyReusedError; a dry run claims nothing, so nothing is
        recorded (the key is still checked)."""
        choices = choices or ReplayChoices()
        # a plain replay's fingerprint is what it always was; the choices made are part of the request
        request = RequestKey.of(idempotency_key, "replay", {"triggerKey": key, **json_form(choices)})
        if request is not None and not dry_run:
            recorded = self._triggers.get_request(request.key, self._clock())
            if recorded is not None:
                return RequestAnswer.replay_of(recorded.answer_to(request))
        outcome = self._replay(key, dry_run, None if dry_run else request, choices)
        if isinstance(outcome, RecordedRequest):  # a racing twin of this request claimed first
            assert request is not None
            return RequestAnswer.replay_of(outcome.answer_to(request))
        return RequestAnswer(200 if dry_run else 201, replay_body(outcome))

    def _replay(
        self, key: str, dry_run: bool, request: RequestKey | None, choices: ReplayChoices
    ) -> ReplayOutcome | RecordedRequest:
        original = self._triggers.get(key)
        if original is None:
            raise NotFoundError(f"trigger {key!r} does not exist")
        self._check_target(original.rule_id, choices)
        if original.status is TriggerStatus.SKIPPED:
            raise ConflictError(f"trigger {key!r} was skipped (a backfill's versions); it had no run to replay")
        manifest_uri = original.manifest_uri or self._stored_manifest(key)
        if manifest_uri is None:
            raise ConflictError(
                f"trigger {key!r} has no run manifest yet; replay it once it has been dispatched"
                + (f" (or retry it: POST /triggers/{key}/retry)" if original.status is TriggerStatus.FAILED else "")
            )
        original = original.model_copy(update={"manifest_uri": manifest_uri})
        inputs = [ReplayInput.from_pin(p, p.manifest_uri, p.manifest_sha256) for p in original.inputs]
        report = self._preflight.check(inputs)
        if not report.ok:
            raise ReplayRefusedError(key, report)
        if dry_run:
            return ReplayOutcome(original, report)
        claimed = self._claim(original, report, request, choices)
        return claimed if isinstance(claimed, RecordedRequest) else ReplayOutcome(original, report, claimed)

    def _check_target(self, rule_id: str, choices: ReplayChoices) -> None:
        """Refuse choices the rule's target cannot honour (a rule since deleted: its dispatch will say so)."""
        if choices.empty or self._rules is None:
            return
        stored = self._rules.get_rule(rule_id)
        if stored is not None:
            check_for_target(choices, stored.rule.target.type)

    def _stored_manifest(self, key: str) -> str | None:
        """The URI of the trigger's manifest when the store has it (the claim may not say so yet)."""
        if self._manifests is None:
            return None
        uri = self._manifests.uri_for(key)
        try:
            self._manifests.get(uri)
        except NotFoundError:
            return None
        except ManifestIntegrityError as exc:
            raise ConflictError(f"trigger {key!r} cannot be replayed: its run manifest is unusable: {exc}") from exc
        return uri

    def _claim(
        self, original: Trigger, report: PreflightReport, request: RequestKey | None, choices: ReplayChoices
    ) -> Trigger | RecordedRequest:
        """The replay's claim under the next epoch nobody took (concurrent replays each get their own), or, under a
        request key another request took first, that request's answer."""
        now = self._clock()
        for epoch in range(original.replay_epoch + 1, original.replay_epoch + 1 + MAX_EPOCH_TRIES):
            replay = original.model_copy(
                update={
                    "trigger_key": trigger_key(
                        original.rule_id,
                        original.group_id,
                        original.inputs,
                        original.window,
                        epoch,
                        partition=original.partition,
                    ),
                    "status": TriggerStatus.TRIGGERING,
                    "replay_epoch": epoch,
                    "attempts": 0,
                    "created_at": now,
                    "updated_at": now,
                    "reason": f"replay of {original.trigger_key}",
                    "target_run_id": None,
                    "replay_of": original.trigger_key,
                    "failure": None,
                    "failure_code": None,
                    "failing_since": None,
                    "next_attempt_at": None,
                    "retries": 0,
                    "run_state": None,
                    # stored with the claim, so a retried dispatch sends the same; never the replayed trigger's
                    "start_from": choices.start_from,
                    "variables": choices.variables,
                }
            )
            recorded = (
                None
                if request is None
                else RecordedRequest.of(
                    request, 201, replay_body(ReplayOutcome(original, report, replay)), replay.trigger_key, now
                )
            )
            claimed = self._triggers.put_replay_answered(replay, recorded)
            if isinstance(claimed, RecordedRequest):
                return claimed
            if claimed:
                logger.info(
                    "replay claimed",
                    extra={
                        "trigger_key": replay.trigger_key,
                        "rule_id": replay.rule_id,
                        "replay_of": original.trigger_key,
                        "status": replay.status.value,
                    },
                )
                return replay
        raise ConflictError(f"trigger {original.trigger_key!r} has {MAX_EPOCH_TRIES} replays already")


def replay_body(outcome: ReplayOutcome) -> dict[str, Any]:
    """The answer's body, as the route answers it and as an idempotent request records it (unchanged)."""
    return ReplayAnswer.from_domain(outcome).dump()
