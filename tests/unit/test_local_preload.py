"""The local runtime's fork server imports only what reads nothing from the environment.

Each function's environment is its own (``lakehook.local.worker``); a module imported before the fork,
in the fork server, would have read the fork server's instead. So the preload must not bring in lakehook's
settings, logger, metrics, container or any adapter, and must start no thread (a fork copies one thread).
"""

from __future__ import annotations

import json
import subprocess
import sys

from lakehook.local.invoker import PURE_PACKAGES, preload_modules

PROBE = """
import json, sys, threading
for name in json.loads(sys.argv[1]):
    __import__(name)
lakehook = sorted(m for m in sys.modules if m == "lakehook" or m.startswith("lakehook."))
print(json.dumps({"lakehook": lakehook, "threads": threading.active_count()}))
"""
ALLOWED = ("lakehook.domain", "lakehook.ports", "lakehook.wire")


def test_the_preload_reads_no_setting_and_starts_no_thread() -> None:
    modules = preload_modules()
    assert "lakehook.domain.rules" in modules and "lakehook.ports.store" in modules  # the packages, whole
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules)], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["threads"] == 1
    strays = [
        m
        for m in found["lakehook"]
        if m != "lakehook" and not m.startswith(tuple(p + "." for p in ALLOWED)) and m not in ALLOWED
    ]
    assert strays == [], f"the fork server would import {strays}: they may read the fork server's environment"
    assert set(PURE_PACKAGES) == set(ALLOWED)
