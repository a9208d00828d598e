"""The README's first command: `make demo` runs `python -m lakehook.demo`, which must exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_every_expectation_holds() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "shared")}
    done = subprocess.run(
        [sys.executable, "-m", "lakehook.demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "FAIL" not in done.stdout
    assert "expectations held" in done.stdout
