"""`lakehook local up` as a user runs it: prints the URL and a ready line, serves, and stops on Ctrl-C; its
logs are JSON into a pipe and one compact line each with `--log-format human`, the runtime's own told apart."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]


def local_up(*options: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start the stack; answer the process, its URL and the lines it printed before the ready line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "shared")}
    process = subprocess.Popen(
        [sys.executable, "-m", "lakehook.cli", "local", "up", "--port", "0", "--admin-token", "t0ken", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 60
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("ready: "):
            return process, line.split("ready: ", 1)[1].strip(), lines
        if not line and process.poll() is not None:
            break
        lines.append(line.rstrip("\n"))
    process.kill()
    raise AssertionError("no ready line:\n" + "\n".join(lines))


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0


def test_local_up_serves_until_interrupted() -> None:
    process, url, lines = local_up()
    try:
        answer = requests.put(
            f"{url}/assets",
            headers={"Authorization": "Bearer t0ken"},
            json={"assetKey": "custom://demo/orders", "format": "custom"},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
        assert requests.get(f"{url}/assets", timeout=10).status_code == 401
        # Into a pipe the logs are JSON (auto); the runtime's own lines say so and carry no function's context.
        logged = [json.loads(line) for line in lines if line.startswith("{")]
        ready = [entry for entry in logged if entry["message"].startswith("local stack ready")]
        assert ready and ready[0]["source"] == "local" and "function_name" not in ready[0], lines
        stop(process)
    finally:
        if process.poll() is None:
            process.kill()


def test_local_up_logs_one_compact_line_per_record_for_a_person() -> None:
    process, _, lines = local_up("--log-format", "human")
    try:
        assert not [line for line in lines if line.startswith("{")], lines
        human = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} INFO +local +local stack ready at http://127\.0\.0\.1:\d+")
        assert any(human.match(line) for line in lines), lines
        stop(process)
    finally:
        if process.poll() is None:
            process.kill()
