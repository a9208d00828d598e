"""The unit tier needs only ``.venv``: no unit test reads the template through the SAM venv (``tests/sam_template``)
or starts the SAM CLI; those live in tests/integration. And a Hypothesis state machine is told apart from other
tests, so that tests/conftest.py marks every one slow; every e2e test has a timeout safety net."""

from __future__ import annotations

import re
import unittest
from types import SimpleNamespace
from typing import cast

import pytest
from hypothesis.stateful import RuleBasedStateMachine, rule

from tests.conftest import E2E_TIMEOUT, is_state_machine
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


def test_an_e2e_test_without_a_timeout_of_its_own_gets_the_e2e_safety_net(pytester: pytest.Pytester) -> None:
    """tests/conftest.py's collection hook, run on a tests/e2e of its own: the e2e tests are slow and get
    ``E2E_TIMEOUT`` unless they name their own; a test outside e2e keeps pytest-timeout's default."""
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    e2e = pytester.path / "tests" / "e2e"
    e2e.mkdir(parents=True)
    (e2e / "test_stack.py").write_text(
        "import pytest\n\n"
        "def timeout(request):\n"
        "    marker = request.node.get_closest_marker('timeout')\n"
        "    return marker.args[0] if marker else None\n\n"
        "def test_default(request):\n"
        f"    assert timeout(request) == {E2E_TIMEOUT} and request.node.get_closest_marker('slow')\n\n"
        "@pytest.mark.timeout(5)\n"
        "def test_own(request):\n"
        "    assert timeout(request) == 5\n",
        encoding="utf-8",
    )
    (pytester.path / "test_elsewhere.py").write_text(
        "def test_plain(request):\n    assert request.node.get_closest_marker('timeout') is None\n", encoding="utf-8"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "--import-mode=importlib")
    result.assert_outcomes(passed=3)
