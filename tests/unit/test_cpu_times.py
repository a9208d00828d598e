"""The per-test CPU log's reading and summary (tests/cpu_times.py)."""

from __future__ import annotations

from pathlib import Path

from tests.cpu_times import Spent, read_log, summary, tier


def test_a_log_is_read_back_and_summed_with_the_costliest_first(tmp_path: Path) -> None:
    log = tmp_path / "cpu.tsv"
    log.write_text(
        "tests/unit/test_a.py::test_x[a\tb]\t1.500\t0.250\t3.000\n"  # a tab inside a parameter id
        "tests/unit/test_b.py::test_y\t0.100\t0.000\t0.200\n"
        "half a line\n",
        encoding="utf-8",
    )
    spent = read_log(log)
    assert spent == [
        Spent("tests/unit/test_a.py::test_x[a\tb]", 1.5, 0.25, 3.0),
        Spent("tests/unit/test_b.py::test_y", 0.1, 0.0, 0.2),
    ]
    lines = summary([*spent, Spent("tests/integration/test_c.py::test_z", 2.0, 0.0, 2.0)], unit_budget=1.0)
    assert lines[:3] == [
        "CPU: 3.9 s in 3 tests",
        "  integration: 2.0 s in 1 tests",
        "  unit: 1.9 s in 2 tests (budget 1 s: OVER)",
    ]
    assert lines[3].endswith("tests/integration/test_c.py::test_z") and "2.00 s CPU" in lines[3]
    assert lines[4].endswith("tests/unit/test_a.py::test_x[a\tb]") and "1.75 s CPU" in lines[4]
    assert summary(spent, unit_budget=None)[1] == "  unit: 1.9 s in 2 tests"
    assert summary(spent, unit_budget=60)[1].endswith("(budget 60 s: within)")


def test_a_test_belongs_to_the_folder_under_tests() -> None:
    assert tier("tests/unit/test_a.py::test_x") == "unit"
    assert tier("tests/e2e/test_cli.py::test_y[p/q]") == "e2e"
    assert tier("tests/test_top.py::test_z") == "test_top.py"
