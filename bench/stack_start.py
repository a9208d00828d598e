"""Local stack start: how long `LocalStack.start()` takes on the project's template, until every function is ready.

Each start makes the moto server and the template's resources, starts one zygote per function (its init:
the handler's import, in an environment of its own) and forks one execution environment from each; the
stack's process parses the template once. `LAKEHOOK_BENCH_STARTS` starts (default 5), one after the other in
one process, so every start but the first reuses the fork server (the first's figure is given apart):
wall clock, and the CPU of the stack's own process (the functions' inits run in their processes, on the
other core when there is one). Then what an idle stack costs: the CPU of the stack's process over
`LAKEHOOK_BENCH_IDLE_SECONDS` (default 10) after each start, nothing pushed (its pollers, the stream tailer,
the schedules waiting for their next run), per second.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from lakehook.local.runtime import LocalStack

STARTS = int(os.environ.get("LAKEHOOK_BENCH_STARTS", "5"))
IDLE_SECONDS = float(os.environ.get("LAKEHOOK_BENCH_IDLE_SECONDS", "10"))


def _one() -> tuple[float, float, int, float]:
    """Start's wall and CPU seconds, functions ready, and the idle stack's CPU seconds per second."""
    wall, cpu = time.perf_counter(), time.process_time()
    stack = LocalStack(port=0, extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})
    stack.start()
    took = (time.perf_counter() - wall, time.process_time() - cpu, len(stack.functions))
    idle_wall, idle_cpu = time.perf_counter(), time.process_time()
    time.sleep(IDLE_SECONDS)
    idle = (time.process_time() - idle_cpu) / (time.perf_counter() - idle_wall)
    stack.stop()
    return (*took, idle)


def run() -> list[dict[str, Any]]:
    load = os.getloadavg()[0]
    starts = [_one() for _ in range(STARTS)]
    first, rest = starts[0], starts[1:] or starts
    walls, cpus = [s[0] for s in rest], [s[1] for s in rest]
    idles = [s[3] for s in starts]
    load = f"load average (1 min) {min(load, os.getloadavg()[0]):.1f}-{max(load, os.getloadavg()[0]):.1f}"
    return [
        {
            "case": f"local stack start, {first[2]} functions ready",
            "value": f"{statistics.median(walls):.2f} s",
            "spread": f"{min(walls):.2f}-{max(walls):.2f} s over {len(rest)} starts",
            "detail": f"the stack's process {statistics.median(cpus):.2f} s CPU (median); the first start, which "
            f"also starts the fork server: {first[0]:.2f} s; {load}",
        },
        {
            "case": "an idle stack's process, CPU per second",
            "value": f"{statistics.median(idles) * 1000:.0f} ms",
            "spread": f"{min(idles) * 1000:.0f}-{max(idles) * 1000:.0f} ms over {len(starts)} stacks",
            "detail": f"{IDLE_SECONDS:g} s idle after each start, nothing pushed; {load}",
        },
    ]


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
