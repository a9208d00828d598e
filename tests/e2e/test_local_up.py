"""`lakehook local up` as a user runs it: prints the URL and a ready line, serves, and stops on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]


def test_local_up_serves_until_interrupted() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "shared")}
    process = subprocess.Popen(
        [sys.executable, "-m", "lakehook.cli", "local", "up", "--port", "0", "--admin-token", "t0ken"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        url = None
        deadline = time.monotonic() + 60
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if line.startswith("ready: "):
                url = line.split("ready: ", 1)[1].strip()
                break
        assert url, "no ready line"
        answer = requests.put(
            f"{url}/assets",
            headers={"Authorization": "Bearer t0ken"},
            json={"assetKey": "custom://demo/orders", "format": "custom"},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
        assert requests.get(f"{url}/assets", timeout=10).status_code == 401
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
