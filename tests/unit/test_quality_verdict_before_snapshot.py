"""A quality verdict that arrives before its snapshot is reported does not make that snapshot pinnable: an
EACH_VERSION group that ran it on the verdict alone would answer the snapshot's own late push "will not run" after
it ran.

Found by ``TestExplainAgreesWithTheResolver`` (tests/unit/test_explain_agrees.py) on one of its random draws; these
are its shrunk steps. ``conditions.QualityPassed`` now blocks (BLOCKED_BY_SNAPSHOT) until a push or a poll reports
a snapshot of the asset.
"""

from __future__ import annotations

from tests.unit.test_explain_agrees import ExplainMachine

A, B = "paimon://lake/ods/a", "paimon://lake/ods/b"


def test_a_snapshot_run_on_its_verdict_is_not_answered_will_not_run_when_its_push_comes_late() -> None:
    machine = ExplainMachine()
    machine.put_every_rule(start_from=["LATEST"] * 7)
    for wait in (0, 0, 0, 0, 0, 4):
        machine.target_answers(fail=False, wait_ms=wait)
    machine.commit(asset=B, hold_back=False, verdict=None, wait_ms=0)
    machine.target_answers(fail=False, wait_ms=0)
    machine.commit(asset=A, hold_back=True, verdict=True, wait_ms=0)  # the verdict on snapshot 1, its push held back
    machine.target_answers(fail=False, wait_ms=0)
    machine.target_answers(fail=False, wait_ms=0)
    machine.commit(asset=A, hold_back=False, verdict=True, wait_ms=0)
    machine.target_answers(fail=False, wait_ms=0)
    machine.push_late(asset=A, index=0, wait_ms=0)  # snapshot 1's push, after 2's
    machine.target_answers(fail=False, wait_ms=0)  # explain checks: told "will not run", yet it ran
