"""Per-test CPU time, for finding where the suite's time goes on a shared machine (wall time lies there).

Set ``LAKEHOOK_TEST_CPU_LOG=path`` and every test appends one tab-separated line to ``path``: its node id, the CPU
seconds of this process (setup, call and teardown, ``time.process_time``), the CPU seconds of the child processes
it waited for (``resource.getrusage(RUSAGE_CHILDREN)``) and its wall seconds. Under pytest-xdist each worker appends
its own lines. Nothing is recorded (and nothing decides a verdict) without the variable.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator

import pytest

LOG_VARIABLE = "LAKEHOOK_TEST_CPU_LOG"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        yield
        return
    cpu, children, wall = time.process_time(), _children_cpu(), time.perf_counter()
    yield
    line = (
        f"{item.nodeid}\t{time.process_time() - cpu:.3f}\t{_children_cpu() - children:.3f}"
        f"\t{time.perf_counter() - wall:.3f}\n"
    )
    with open(path, "a", encoding="utf-8") as log:
        log.write(line)
