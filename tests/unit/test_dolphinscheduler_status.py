"""DolphinScheduler's start result codes, classified as its source raises them (see the module's notes)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lakehook.adapters.targets.dolphinscheduler_status import (
    AMBIGUOUS,
    PERMANENT,
    RETRYABLE,
    classify_start_code,
    run_state_word,
)
from lakehook.domain.triggers import RunState


def test_configuration_errors_are_permanent_and_server_state_is_retryable() -> None:
    for code in PERMANENT:
        assert not classify_start_code(code, "").retryable, code
    assert classify_start_code(10025, "master does not exist").retryable  # 3.2: MASTER_NOT_EXISTS
    start_error = classify_start_code(50014, "start process instance error")
    assert start_error.retryable and start_error.ambiguous  # it may follow a written command
    assert not set(PERMANENT) & (set(RETRYABLE) | set(AMBIGUOUS))


def test_3_3_internal_errors_are_told_apart_by_their_message() -> None:
    unknown = classify_start_code(10000, "Internal Server Error: Cannot find the workflow: 999")
    assert not unknown.retryable and "does not exist" in unknown.meaning
    no_master = classify_start_code(10000, "Internal Server Error: no master server available")
    assert no_master.retryable and not no_master.ambiguous
    refused = classify_start_code(10000, "Internal Server Error: Trigger workflow failed: busy")
    assert refused.retryable and not refused.ambiguous


@given(code=st.integers() | st.text() | st.none() | st.booleans(), message=st.text(max_size=60))
def test_an_unknown_code_is_never_retried(code: object, message: str) -> None:
    known = {10000, *RETRYABLE, *AMBIGUOUS}
    refusal = classify_start_code(code, message)
    if isinstance(code, bool) or not isinstance(code, int) or code not in known:
        assert not refusal.retryable


# WorkflowExecutionStatus of 3.2.2 and of dev (dolphinscheduler-common .../common/enums/WorkflowExecutionStatus.java)
INSTANCE_STATES = {
    "SUBMITTED_SUCCESS": False,
    "RUNNING_EXECUTION": False,
    "READY_PAUSE": False,
    "PAUSE": True,
    "READY_STOP": False,
    "STOP": True,
    "FAILURE": True,
    "SUCCESS": True,
    "DELAY_EXECUTION": False,
    "SERIAL_WAIT": False,
    "READY_BLOCK": False,
    "BLOCK": False,
    "WAIT_TO_RUN": False,
    "FAILOVER": False,
}


@given(st.sampled_from(sorted(INSTANCE_STATES)) | st.text(min_size=1, max_size=30))
def test_an_instance_frees_its_run_slot_exactly_when_dolphinscheduler_counts_it_finished(state: str) -> None:
    """isFinished() is SUCCESS, FAILURE, STOP or PAUSE; every other state, known or not, keeps the run waiting (its
    slot held until it reports or maxRunSeconds)."""
    run = RunState(state=run_state_word(state), checked_at=0)
    assert run.waiting is not INSTANCE_STATES.get(state, False)
    if not run.waiting:
        assert run.state == state.lower()
