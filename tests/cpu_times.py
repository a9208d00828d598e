"""Per-test CPU time, for finding where the suite's time goes on a shared machine (wall time lies there).

Set ``LAKEHOOK_TEST_CPU_LOG=path`` and every test appends one tab-separated line to ``path``: its node id, the CPU
seconds of this process (setup, call and teardown, ``time.process_time``), the CPU seconds of the child processes
it waited for (``resource.getrusage(RUSAGE_CHILDREN)``) and its wall seconds. Under pytest-xdist each worker appends
its own lines; the controller empties the file when the session starts and, at the end, prints the total, each
tier's (tests/unit, tests/integration, ...) and the costliest tests. ``LAKEHOOK_TEST_CPU_BUDGET=seconds`` is the
unit tier's budget, shown beside its total (``make test-fast`` sets 60 s for the unit tests not marked slow under
Hypothesis's fast profile): a report for whoever runs the suite, never a test's verdict. Nothing is recorded
without the log.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

LOG_VARIABLE = "LAKEHOOK_TEST_CPU_LOG"
BUDGET_VARIABLE = "LAKEHOOK_TEST_CPU_BUDGET"
SHOWN = 15


@dataclass(frozen=True)
class Spent:
    """One test's line of the log."""

    nodeid: str
    cpu: float
    children: float
    wall: float

    @property
    def total(self) -> float:
        return self.cpu + self.children

    @classmethod
    def parse(cls, line: str) -> Spent:
        nodeid, cpu, children, wall = line.rstrip("\n").rsplit("\t", 3)
        return cls(nodeid, float(cpu), float(children), float(wall))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _log() -> Path | None:
    path = os.environ.get(LOG_VARIABLE)
    return Path(path) if path else None


def read_log(path: Path) -> list[Spent]:
    return [Spent.parse(line) for line in path.read_text(encoding="utf-8").splitlines() if line.count("\t") >= 3]


def tier(nodeid: str) -> str:
    """``unit`` for ``tests/unit/test_x.py::test_y``: the folder under tests/ (or the file, at the top)."""
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[-1]


def summary(spent: list[Spent], unit_budget: float | None) -> list[str]:
    """The lines printed at the end of a logged session: the total, each tier's (the unit tier's beside its budget,
    if any), the costliest tests."""
    lines = [f"CPU: {sum(s.total for s in spent):.1f} s in {len(spent)} tests"]
    for name in sorted({tier(s.nodeid) for s in spent}):
        in_tier = [s for s in spent if tier(s.nodeid) == name]
        total = sum(s.total for s in in_tier)
        shown = ""
        if name == "unit" and unit_budget is not None:
            shown = f" (budget {unit_budget:.0f} s: {'within' if total <= unit_budget else 'OVER'})"
        lines.append(f"  {name}: {total:.1f} s in {len(in_tier)} tests{shown}")
    for s in sorted(spent, key=lambda s: s.total, reverse=True)[:SHOWN]:
        lines.append(f"{s.total:8.2f} s CPU {s.wall:8.2f} s wall  {s.nodeid}")
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    path = _log()
    if path is not None and not hasattr(session.config, "workerinput"):  # the controller, or a single process
        path.write_text("", encoding="utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    path = _log()
    if path is None:
        yield
        return
    cpu, children, wall = time.process_time(), _children_cpu(), time.perf_counter()
    yield
    line = (
        f"{item.nodeid}\t{time.process_time() - cpu:.3f}\t{_children_cpu() - children:.3f}"
        f"\t{time.perf_counter() - wall:.3f}\n"
    )
    with path.open("a", encoding="utf-8") as log:
        log.write(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    path = _log()
    if path is None or hasattr(terminalreporter.config, "workerinput") or not path.exists():
        return
    budget = os.environ.get(BUDGET_VARIABLE)
    terminalreporter.section("CPU per test")
    for line in summary(read_log(path), float(budget) if budget else None):
        terminalreporter.write_line(line)
