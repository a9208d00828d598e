"""The README's first command: `make demo` runs `python -m lakehook.demo`, which must exit 0.

It is run as `make demo KEEP=1` runs it (``--keep``): the console it prints must serve the demo's stack
while it stays up, and Ctrl-C must then stop everything with the story's exit status.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_every_expectation_holds_and_keep_leaves_the_console_up() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "shared")}
    demo = subprocess.Popen(
        [sys.executable, "-m", "lakehook.demo", "--keep"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in demo.stdout or ()], daemon=True).start()
    seen: list[str] = []
    try:
        while not any("kept up until Ctrl-C" in line for line in seen):
            seen.append(lines.get(timeout=300))
        output = "".join(seen)
        console = re.search(r"console (http://127\.0\.0\.1:\d+/)", output)
        assert console, output[-3000:]
        rules = requests.get(f"{console.group(1)}api/rules", timeout=30).json()["items"]
        assert len(rules) == 3
        assert "<title>lakehook console</title>" in requests.get(console.group(1), timeout=30).text
    finally:
        demo.send_signal(signal.SIGINT)
        code = demo.wait(timeout=120)
    output = "".join(seen)
    while not lines.empty():
        output += lines.get()
    assert code == 0, output[-3000:]
    assert "FAIL" not in output
    assert "expectations held" in output
