"""tests/waiting.py, the one timed loop of the e2e and integration suites: what it answers, never how long it took."""

from __future__ import annotations

import itertools

import pytest

from tests.waiting import wait_for, wait_until


def test_wait_for_answers_the_first_truthy_answer() -> None:
    answers = iter([None, [], {"ready": True}, {"later": True}])
    assert wait_for(lambda: next(answers), seconds=60, every=0) == {"ready": True}


def test_wait_for_answers_the_last_falsy_answer_when_time_is_up() -> None:
    calls = itertools.count(1)
    assert wait_for(lambda: 0 * next(calls), seconds=0, every=0) == 0
    assert next(calls) >= 2  # asked at least once


def test_wait_until_names_what_never_came_and_describes_it_then() -> None:
    with pytest.raises(AssertionError, match=r"the run never ended \(not within 0 s\)"):
        wait_until("the run never ended", lambda: None, seconds=0, every=0)
    seen = iter(["state RUNNING", "state FAILED"])
    with pytest.raises(AssertionError, match="state RUNNING"):
        wait_until(lambda: next(seen), lambda: False, seconds=0, every=0)
    assert wait_until("never", lambda: "done", seconds=0, every=0) == "done"
