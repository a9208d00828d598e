"""Run every benchmark and write bench/results.md (``make bench``; ``--only ingest,poll`` to pick).

Figures are measured on the machine that runs them; request counts are exact and stable, times are not.
Each section says how it was made: the command (with the ``LAKEHOOK_BENCH_*`` knobs set), the date, the
machine and the 1-minute load average before and after it. ``--only`` re-measures the benches named and
keeps every other section as it was written.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCHES = [
    "ingest",
    "poll",
    "poll_partitions",
    "resolve",
    "partitions",
    "partition_drain",
    "dispatch",
    "coverage",
    "localstack",
    "stack_start",
    "commit_notices",
    "coldstart",
    "imports",
    "cost",
    "loop",
]
# Sections another command writes (`make mutation`: bench.mutation); make bench keeps them as they were written.
WRITTEN_ELSEWHERE = ["mutation"]
RESULTS = Path(__file__).resolve().parent / "results.md"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no rows)\n"
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated subset of " + ", ".join(BENCHES))
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHES if not args.only or b in args.only.split(",")]
    sections = [
        "# Benchmark results\n",
        "Written by `make bench` (`python -m bench.run`); each section says when, with which command and knobs, "
        "on which machine and under what load. Request counts are exact; times are that machine's.\n",
    ]
    kept = _sections()  # --only re-measures those and keeps the others' last figures
    if not args.only:
        kept = {name: text for name, text in kept.items() if name in WRITTEN_ELSEWHERE}
    for name in chosen:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError:
            continue
        began, load_before = time.perf_counter(), os.getloadavg()[0]
        rows = module.run()
        title = (module.__doc__ or name).strip().splitlines()[0]
        body = "\n".join((module.__doc__ or "").strip().splitlines()[1:]).strip()
        kept[name] = (
            f"## {name}: {title}\n\n{body}\n\n"
            + _provenance(name, time.perf_counter() - began, load_before, os.getloadavg()[0])
            + f"\n\n{markdown_table(rows)}"
        )
        print(f"bench {name}: {len(rows)} rows", flush=True)
    _write(sections, kept)
    return 0


def _write(head: list[str], kept: dict[str, str]) -> None:
    RESULTS.write_text("\n".join(head + [kept[name] for name in BENCHES + WRITTEN_ELSEWHERE if name in kept]))
    print(f"wrote {RESULTS}")


def replace_section(name: str, text: str) -> None:
    """Write one section (``## name: ...``), keeping every other one as it was written."""
    kept = _sections()
    kept[name] = text
    head = RESULTS.read_text().split("\n## ")[0].rstrip("\n") + "\n" if RESULTS.exists() else "# Benchmark results\n"
    _write([head], kept)


def read_section(name: str) -> str | None:
    """One section as written (``## name: ...`` to the next), or None where there is none."""
    return _sections().get(name)


def _provenance(name: str, seconds: float, load_before: float, load_after: float) -> str:
    """How the section was made: command, date, machine, load (the figures mean little without them)."""
    knobs = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("LAKEHOOK_BENCH_"))
    command = f"{knobs} " if knobs else ""
    command += f"PYTHONPATH=src/shared:. .venv/bin/python -m bench.run --only {name}"
    return (
        f"Command: `{command}` (all benches: `make bench`). Run on {datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC, "
        f"took {seconds:.0f} s; Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.node() or 'this machine'}; load average (1 min) {load_before:.2f} before, {load_after:.2f} after."
    )


def _sections() -> dict[str, str]:
    """The sections of the results file as written, by bench name."""
    if not RESULTS.exists():
        return {}
    found: dict[str, str] = {}
    for part in RESULTS.read_text().split("\n## ")[1:]:
        found[part.split(":", 1)[0]] = "## " + part.rstrip("\n") + "\n"
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
