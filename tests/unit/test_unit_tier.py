"""The unit tier needs only ``.venv``: no unit test reads the template through the SAM venv (``tests/sam_template``)
or starts the SAM CLI; those live in tests/integration. And a Hypothesis state machine is told apart from other
tests, so that tests/conftest.py marks every one slow."""

from __future__ import annotations

import re
import unittest
from types import SimpleNamespace
from typing import cast

import pytest
from hypothesis.stateful import RuleBasedStateMachine, rule

from tests.conftest import is_state_machine
from tests.support import ROOT

NEEDS_SAM = re.compile(r"tests\.sam_template|\.venv-sam|sam_translate")


def test_no_unit_test_needs_the_sam_venv() -> None:
    needing = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "tests" / "unit").rglob("*.py"))
        if path.name != "test_unit_tier.py" and NEEDS_SAM.search(path.read_text(encoding="utf-8"))
    ]
    assert needing == [], f"unit tests needing the SAM venv (move them to tests/integration): {needing}"


class _Machine(RuleBasedStateMachine):
    @rule()
    def step(self) -> None:
        pass


class _PlainCase(unittest.TestCase):
    __test__ = False  # only told apart here, never run

    def test_nothing(self) -> None:
        pass


def test_a_state_machine_is_told_apart_from_other_tests_to_be_marked_slow() -> None:
    assert is_state_machine(cast(pytest.Item, SimpleNamespace(cls=_Machine.TestCase)))
    assert not is_state_machine(cast(pytest.Item, SimpleNamespace(cls=_PlainCase)))
    assert not is_state_machine(cast(pytest.Item, SimpleNamespace(cls=None)))
    assert not is_state_machine(cast(pytest.Item, SimpleNamespace()))
