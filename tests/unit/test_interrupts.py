"""Ctrl-C stops `lakehook local up`, the demo and the console even when the kernel hands SIGINT to a thread
that is not the main one (CPython issue #85300: such a signal does not wake a main thread blocked in
``Event.wait()``; `lakehook local up` then never stopped, as CI once saw)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support import ROOT

SCRIPT = textwrap.dedent(
    """
    import signal, threading, time
    from lakehook.interrupts import stop_on_signals, wait_until_set

    stop = stop_on_signals()

    def interrupt_from_another_thread() -> None:
        time.sleep(0.2)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # delivered to this thread, not to main

    threading.Thread(target=interrupt_from_another_thread, daemon=True).start()
    wait_until_set(stop)
    print("stopped")
    """
)


def test_a_signal_delivered_to_another_thread_stops_the_wait() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src" / "shared")},
        capture_output=True,
        text=True,
        timeout=20,  # a plain Event.wait() never returns here: the run would time out
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
