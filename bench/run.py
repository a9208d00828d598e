"""Run every benchmark and write bench/results.md (``make bench``; ``--only ingest,poll`` to pick).

Figures are measured on the machine that runs them; request counts are exact and stable, times are not.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCHES = ["ingest", "poll", "resolve", "coverage", "localstack", "commit_notices", "coldstart"]
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
        f"Written by `make bench` on {datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}, "
        f"{platform.machine()}, {platform.system()}. Request counts are exact; times are this machine's.\n",
    ]
    kept = _sections() if args.only else {}  # --only re-measures those and keeps the others' last figures
    for name in chosen:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError:
            continue
        began = time.perf_counter()
        rows = module.run()
        title = (module.__doc__ or name).strip().splitlines()[0]
        body = "\n".join((module.__doc__ or "").strip().splitlines()[1:]).strip()
        kept[name] = (
            f"## {name}: {title}\n\n{body}\n\nCommand: `make bench` (or `.venv/bin/python -m bench.{name}`)."
            f" Took {time.perf_counter() - began:.0f} s.\n\n{markdown_table(rows)}"
        )
        print(f"bench {name}: {len(rows)} rows", flush=True)
    sections += [kept[name] for name in BENCHES if name in kept]
    RESULTS.write_text("\n".join(sections))
    print(f"wrote {RESULTS}")
    return 0


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
