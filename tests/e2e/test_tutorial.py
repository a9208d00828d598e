"""docs/tutorial.md, run as a reader would: on an empty local stack, command by command.

The page's one ``python`` block is saved as ``receiver.py`` and its one ``yaml`` block as
``first-rule.yaml``; ``python receiver.py`` runs as a process of its own; every ``lakehook`` line runs in
order. What the reader copies from the output (the generated webhook secret, the producer's secret) is
taken from the output, as the page says to. ``lakehook watch`` runs alongside the next command, as in a
second terminal. Port 8000 becomes a free port.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.e2e.cli_support import ROOT, Ran, cli_stack, run_cli, wait_for

TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# What the page has the reader export: the test sets each from the stack or from an output.
EXPORTED = {"LAKEHOOK_URL", "LAKEHOOK_ADMIN_TOKEN", "HOOK_SECRET", "LAKEHOOK_PRODUCER_SECRET"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_tutorial_runs_command_by_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    port = str(free_port())
    text = TUTORIAL.read_text(encoding="utf-8").replace("8000", port)
    blocks = FENCE.findall(text)
    (receiver_code,) = [body for lang, body in blocks if lang == "python"]
    (rule_file,) = [body for lang, body in blocks if lang == "yaml"]
    (tmp_path / "receiver.py").write_text(receiver_code)
    (tmp_path / "first-rule.yaml").write_text(rule_file)
    monkeypatch.chdir(tmp_path)

    receiver: subprocess.Popen[str] | None = None
    watching: list[threading.Thread] = []
    watched: dict[str, Ran] = {}
    ran: list[tuple[str, Ran]] = []
    printed: list[str] = []
    with cli_stack():
        try:
            for lang, body in blocks:
                if lang != "bash":
                    continue
                for line in (raw.strip() for raw in body.splitlines()):
                    if not line or line.startswith("lakehook local up"):
                        continue  # the stack is already up (tests/e2e/test_local_up.py runs `local up`)
                    if line.startswith("export "):
                        names = {part.split("=", 1)[0] for part in shlex.split(line)[1:]}
                        assert names <= EXPORTED, f"the test does not know how to set {names - EXPORTED}"
                        continue
                    if line == "python receiver.py":
                        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src" / "shared"), str(ROOT)])}
                        receiver = subprocess.Popen(
                            [sys.executable, "-u", "receiver.py"],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            text=True,
                            env=env,
                        )
                        assert receiver.stdout is not None
                        assert "listening on" in receiver.stdout.readline()
                        threading.Thread(target=printed.extend, args=(receiver.stdout,), daemon=True).start()
                        continue
                    assert line.startswith("lakehook "), f"the tutorial uses the CLI only: {line}"
                    argv = shlex.split(os.path.expandvars(line))[1:]
                    if argv[0] == "watch":  # a second terminal: runs while the next command pushes
                        shown = io.StringIO()

                        def follow(argv: list[str] = argv, shown: io.StringIO = shown) -> None:
                            watched["watch"] = run_cli(argv, out=shown)

                        watching.append(threading.Thread(target=follow))
                        watching[-1].start()
                        # the reader pushes once the watch says it is watching (it has seen what exists)
                        assert wait_for(lambda shown=shown: "watching" in shown.getvalue(), seconds=30)
                        continue
                    result = run_cli(argv)
                    assert result.code == 0, f"`{line}` exited {result.code}: {result.err or result.out}"
                    ran.append((line, result))
                    if watching:  # the reader waits for the watch to end, and reads what the receiver printed
                        watching.pop().join(90)
                        assert wait_for(lambda: any("reported" in p for p in printed), seconds=30), printed
                    if argv[:2] == ["secret", "put"]:
                        value = re.search(r"value \(shown once[^:]*\): (\S+)", result.out)
                        assert value, result.out
                        monkeypatch.setenv("HOOK_SECRET", value.group(1))
                    if argv[0] == "apply" and "--dry-run" not in argv:
                        secret = re.search(
                            r"secret for producer tutorial-writer \(shown once[^:]*\): (\S+)", result.out
                        )
                        assert secret, result.out
                        monkeypatch.setenv("LAKEHOOK_PRODUCER_SECRET", secret.group(1))
            assert not watching

            # What the page promises
            explained = [r.out for line, r in ran if line.startswith("lakehook explain")]
            assert "NOT READY" in explained[0] and "NOT READY" in explained[1]
            assert "READY" in explained[1].split("paimon://lake/ods_db/orders", 1)[0].rsplit("\n", 1)[-1]
            assert watched["watch"].code == 0, watched["watch"].out + watched["watch"].err
            assert "SUCCEEDED" in watched["watch"].out
            assert "[paimon://lake/ods_db/orders@1, paimon://lake/ods_db/payments@7]" in watched["watch"].out
            state = run_cli(["--output", "json", "state", "paimon://lake/dwd_db/orders_enriched"])
            assert state.json()["latestSnapshotId"] == 8
            duplicate = ran[-1][1]
            assert duplicate.out.startswith("DUPLICATE"), duplicate.out
            triggers = run_cli(["--output", "json", "triggers", "--rule", "my_first_rule"]).json()["items"]
            assert len(triggers) == 1 and triggers[0]["runStatus"] == "SUCCEEDED"
            key = triggers[0]["triggerKey"]
            assert triggers[0]["targetRunId"] == f"tutorial-{key}"
        finally:
            if receiver is not None:
                receiver.terminate()
        output = "".join(printed)
        assert f"run {key}: reading paimon://lake/ods_db/orders@1, paimon://lake/ods_db/payments@7" in output
        assert f"run {key}: reported SUCCEEDED, wrote paimon://lake/dwd_db/orders_enriched@8" in output
