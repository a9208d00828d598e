"""Clients at init: each function's module builds its clients as it loads in Lambda (``container.prewarm``), and
nowhere else (tests and the local runtime keep parts lazy, so moto or a test's container comes first)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakehook import container as container_module
from lakehook.container import LAMBDA_INIT, Container, part, prewarm
from lakehook.settings import Settings

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


@pytest.fixture
def wired() -> Iterator[Container]:
    built = Container(Settings(region="us-east-1"))
    container_module.use(built)
    yield built
    container_module.use(None)


def test_outside_lambda_nothing_is_built(wired: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LAMBDA_INIT, raising=False)
    prewarm("table", "secret_store")
    assert wired.built == {}


def test_in_lambda_the_named_clients_are_built_at_init(wired: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LAMBDA_INIT, "on-demand")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    prewarm("table", "secret_store")
    assert set(wired.built) == {"table", "secret_store"}
    table = wired.built["table"]
    assert wired.table is table  # the first invocation uses what init built


def test_a_part_that_fails_at_init_is_left_to_its_first_use(wired: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LAMBDA_INIT, "on-demand")
    prewarm("work_queue")  # no LAKEHOOK_POLL_QUEUE_URL: its first use raises, init does not
    assert "work_queue" not in wired.built
    with pytest.raises(RuntimeError, match="LAKEHOOK_POLL_QUEUE_URL"):
        _ = wired.work_queue


def test_every_function_prewarms_parts_the_container_has() -> None:
    for app in sorted(FUNCTIONS.glob("*/app.py")):
        calls = [
            node
            for node in ast.walk(ast.parse(app.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "prewarm"
        ]
        assert len(calls) == 1, f"{app.parent.name} builds its clients at init with one prewarm(...)"
        names = [arg.value for arg in calls[0].args if isinstance(arg, ast.Constant)]
        assert names and names[0] == "table", app.parent.name
        assert all(isinstance(getattr(Container, n, None), part) for n in names), (app.parent.name, names)
