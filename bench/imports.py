"""Import cost: each function's handler import against `import boto3` alone, and lakehook's own share of it.

From the source tree (no build needed), on this interpreter (the project's venv): each sample is a fresh
interpreter with the environment Lambda's runtime sets (AWS_LAMBDA_FUNCTION_NAME, LAMBDA_TASK_ROOT and the rest,
as `bench.coldstart` sets them; tracing not disabled) and the function's code directory and src/shared on
PYTHONPATH, importing either `boto3` alone or the handler (`import app`, from the template's CodeUri). Every
module's import is timed in CPU time (`time.process_time`), as `python -X importtime` times it in wall-clock
time (a finder first in `sys.meta_path` wraps each loader: cumulative = finding + executing the module, self =
that less the imports it makes): on a shared machine the wall clock follows the other processes' load, the CPU
time much less. For each function, in the same run, the two imports are interleaved
`LAKEHOOK_BENCH_IMPORTS_REPEATS` times (default 7, after one uncounted import of each that writes the bytecode,
as `make build` ships it); figures are medians in CPU ms. "boto3 alone" is the cumulative time of `boto3` in
its own process; "handler" the cumulative time of `app`; "lakehook's own" the sum of the self times of `app`
and every `lakehook.*` module in the handler's process: the time spent running the project's module bodies (its
classes, pydantic models among them, and its builders), every third-party import (boto3, pydantic, Powertools
and what they import) left out. The goal (issue 26): lakehook's own share at most half of boto3's. "own / boto3"
is the ratio of the medians; the median (min-max) of each run's own time over the boto3 run just before it, and
the fastest own time over the fastest boto3 time, are given too. "largest own" names the three lakehook modules
with the largest median self times. pydantic's plugin discovery on its first model
(`importlib.metadata.entry_points()`, reading every installed distribution's metadata: the more distributions,
as in this dev venv, the longer) is third-party work whichever module defines that first model (`lakehook.settings`
in the spool verifier and the poll worker, which import Powertools' batch utility before pydantic): it is timed
apart, like an import ("entry-point scan"), and not counted as lakehook's; the rest of pydantic's one-time work
for a first model is (the own share is counted conservatively). This is the venv's Python (3.11), not the
Lambda runtime's 3.12; `bench.coldstart` measures the built artefacts on 3.12.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "src" / "shared"
REPEATS = int(os.environ.get("LAKEHOOK_BENCH_IMPORTS_REPEATS", "7"))
GOAL_RATIO = 0.5

# Times each module's import in CPU time (``time.process_time``), as ``-X importtime`` does in wall-clock time:
# a finder first in ``sys.meta_path`` asks the others for the spec and wraps the loader's ``exec_module``; a
# module's cumulative time is its finding plus its execution, its self time that less its imports' cumulative time.
PROBE = """
import json, sys, time
clock = time.process_time
stack, found, selfs, cumulative = [], {{}}, {{}}, {{}}

class Timing:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        began = clock()
        spec = None
        for finder in sys.meta_path:
            if finder is not cls and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        took = clock() - began
        if stack:
            stack[-1] += took
        loader = getattr(spec, "loader", None)
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec  # built-in and frozen modules: their time is their importer's
        found[name], inner = took, loader.exec_module

        def exec_module(module):
            began = clock()
            stack.append(0.0)
            try:
                inner(module)
                if name == "importlib.metadata":
                    timed_scan(module)
            finally:
                took, children = clock() - began, stack.pop()
                selfs[name], cumulative[name] = took - children, took + found[name]
                if stack:
                    stack[-1] += took

        loader.exec_module = exec_module
        return spec

# pydantic's plugin discovery (on its first model): importlib.metadata reading every installed distribution's
# entry points, third-party work whichever module defines that model: timed apart, like an import, once
# importlib.metadata is imported (importing it here would take its imports out of boto3's time).
scans = []

def timed_scan(metadata):
    scan = metadata.entry_points

    def entry_points(*args, **kwargs):
        began = clock()
        try:
            return scan(*args, **kwargs)
        finally:
            took = clock() - began
            scans.append(took)
            if stack:
                stack[-1] += took

    metadata.entry_points = entry_points

sys.meta_path.insert(0, Timing)
began = clock()
import {module}
total = clock() - began
print(json.dumps({{"cpu_ms": total * 1000, "scan_ms": sum(scans) * 1000,
                  "self_ms": {{k: v * 1000 for k, v in selfs.items()}},
                  "cumulative_ms": {{k: v * 1000 for k, v in cumulative.items()}}}}))
"""


def _functions() -> dict[str, Path]:
    """Function logical id -> its code directory, from template.yaml."""
    from lakehook.local.template import Template

    template = Template.load(ROOT / "template.yaml")
    return {
        logical_id: ROOT / resource["Properties"]["CodeUri"]
        for logical_id, resource in sorted(template.resources.items())
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def _environment(code_dir: Path) -> dict[str, str]:
    from bench.coldstart import _environment as lambda_environment

    env = lambda_environment([code_dir, SHARED])
    del env["PYTHONDONTWRITEBYTECODE"]  # from the source tree: bytecode is written once, then read, as Lambda reads it
    return env


def _sample(code_dir: Path, module: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        env=_environment(code_dir),
        cwd=code_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing {module} from {code_dir} failed:\n{done.stderr[-2000:]}")
    times = json.loads(done.stdout.strip().splitlines()[-1])
    own = {name: ms for name, ms in times["self_ms"].items() if name == "app" or name.split(".")[0] == "lakehook"}
    return {
        "cumulative_ms": times["cumulative_ms"][module],
        "scan_ms": times["scan_ms"],
        "own_ms": sum(own.values()),
        "own": own,
        "lakehook_modules": sum(1 for name in own if name != "app"),
    }


def _median(values: list[float]) -> float:
    return statistics.median(values)


def measure(functions: dict[str, Path] | None = None, repeats: int = REPEATS) -> list[dict[str, Any]]:
    rows = []
    for function, code_dir in (functions or _functions()).items():
        _sample(code_dir, "boto3"), _sample(code_dir, "app")  # uncounted: writes the bytecode
        boto3_runs, app_runs = [], []
        for _ in range(repeats):
            boto3_runs.append(_sample(code_dir, "boto3"))
            app_runs.append(_sample(code_dir, "app"))
        boto3_ms = _median([r["cumulative_ms"] for r in boto3_runs])
        own_ms = _median([r["own_ms"] for r in app_runs])
        ratios = [a["own_ms"] / b["cumulative_ms"] for a, b in zip(app_runs, boto3_runs, strict=True)]
        by_module: dict[str, list[float]] = defaultdict(list)
        for run in app_runs:
            for name, ms in run["own"].items():
                by_module[name].append(ms)
        paired = f"{_median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        fastest = min(r["own_ms"] for r in app_runs) / min(r["cumulative_ms"] for r in boto3_runs)
        largest = sorted(by_module, key=lambda name: -_median(by_module[name]))[:3]
        rows.append(
            {
                "function": function,
                "boto3 alone (ms)": f"{boto3_ms:.0f}",
                "handler (ms)": f"{_median([r['cumulative_ms'] for r in app_runs]):.0f}",
                "lakehook's own (ms)": f"{own_ms:.1f}",
                "own / boto3": f"{own_ms / boto3_ms:.2f}",
                "own / boto3, paired runs: median (min-max)": f"{paired}",
                "own / boto3, fastest runs": f"{fastest:.2f}",
                "goal ≤ 0.5": "met" if own_ms / boto3_ms <= GOAL_RATIO else "MISSED",
                "entry-point scan (ms)": f"{_median([r['scan_ms'] for r in app_runs]):.1f}",
                "lakehook modules": app_runs[-1]["lakehook_modules"],
                "largest own (ms)": ", ".join(f"{name} {_median(by_module[name]):.1f}" for name in largest),
                "runs": repeats,
            }
        )
    return rows


def run() -> list[dict[str, Any]]:
    return measure()


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(measure()), file=sys.stdout)
