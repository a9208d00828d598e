"""Each function of the local stack runs in execution environments of its own, with the template's limits.

The fixture template (tests/fixtures/environments) has three functions running one piece of code that does
what its event asks: report its environment, log, sleep, allocate memory, exit, fail.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pytest
import requests

from lakehook.local.invoker import FunctionError, LocalFunction
from lakehook.local.runtime import LocalStack
from lakehook.local.template import Template
from tests.waiting import wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "environments" / "template.yaml"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    os.environ["LAKEHOOK_TEST_LEAK"] = "the stack's process only"
    try:
        with LocalStack(template=FIXTURE, port=0, extra_env={"POWERTOOLS_LOG_LEVEL": "INFO"}) as running:
            yield running
    finally:
        os.environ.pop("LAKEHOOK_TEST_LEAK", None)


def _fn(stack: LocalStack, name: str) -> LocalFunction:
    [fn] = [f for f in stack.functions if f.spec.name == name]
    return fn


def test_each_function_has_its_own_environment_logger_and_namespace(stack: LocalStack) -> None:
    red = _fn(stack, "Red").invoke({})
    blue = _fn(stack, "Blue").invoke({})
    assert (red["color"], blue["color"]) == ("red", "blue")
    assert red["other"] is None and blue["other"] == "only blue has this"  # nothing of another function's
    assert (red["service"], blue["service"]) == ("red-service", "blue-service")
    assert (red["namespace"], blue["namespace"]) == ("RedSpace", "Shared")  # its own over the Globals'
    assert (red["function"], blue["function"]) == ("Red", "Blue")
    assert (red["memory"], blue["memory"]) == ("256", "1024")
    assert (red["context_memory"], blue["context_memory"]) == (256, 1024)
    assert 0 < red["remaining_ms"] <= 2000 and 2000 < blue["remaining_ms"] <= 5000
    assert red["pid"] != blue["pid"] != os.getpid()


def test_the_environment_does_not_inherit_the_stack_process(stack: LocalStack) -> None:
    probe = _fn(stack, "Red")
    assert "LAKEHOOK_TEST_LEAK" in os.environ
    assert "LAKEHOOK_TEST_LEAK" not in probe.environment
    assert probe.environment["AWS_ENDPOINT_URL"] == stack.endpoint_url  # the stack's values it does get


def test_a_warm_environment_is_reused_and_concurrency_starts_more(stack: LocalStack) -> None:
    red = _fn(stack, "Red")
    first, second = red.invoke({}), red.invoke({})
    assert first["pid"] == second["pid"] and second["invocations"] == first["invocations"] + 1
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda _: red.invoke({"sleep": 0.5}), range(3)))
    assert len({a["pid"] for a in answers}) == 3  # three at once: three environments
    assert red.environments >= 3


def test_an_invocation_past_its_timeout_is_stopped_and_fails_as_lambda_s(stack: LocalStack) -> None:
    red = _fn(stack, "Red")
    before = red.invoke({})["pid"]
    with pytest.raises(FunctionError) as failed:
        red.invoke({"sleep": 30})
    assert failed.value.error_type == "Sandbox.Timedout"
    assert "Task timed out after 2.00 seconds" in failed.value.error["errorMessage"]
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(before, 0)  # the timed-out environment was killed (it may be reaped a moment later)
            time.sleep(0.05)
    assert red.invoke({})["pid"] != before  # the next invocation has a new environment


def test_an_environment_past_its_memory_size_is_stopped(stack: LocalStack) -> None:
    red = _fn(stack, "Red")  # MemorySize 256
    with pytest.raises(FunctionError) as failed:
        red.invoke({"allocate_mb": 400})
    assert failed.value.error_type == "Runtime.OutOfMemory"
    assert "of 256 MB" in failed.value.error["errorMessage"]
    assert _fn(stack, "Blue").invoke({"allocate_mb": 300})["color"] == "blue"  # 1024 MB: room for it


def test_a_crash_and_an_error_are_lambda_s_error_objects(stack: LocalStack) -> None:
    red = _fn(stack, "Red")
    with pytest.raises(FunctionError) as crashed:
        red.invoke({"exit": 3})
    assert crashed.value.error_type == "Runtime.ExitError"
    assert crashed.value.error["errorMessage"].endswith("Runtime exited with error: exit status 3")
    with pytest.raises(FunctionError) as failed:
        red.invoke({"fail": "on purpose"})
    assert failed.value.error_type == "RuntimeError" and failed.value.error["errorMessage"] == "on purpose"
    assert any("app.py" in line for line in failed.value.error["stackTrace"])
    with pytest.raises(FunctionError) as unmarshalled:
        red.invoke({"unserializable": True})
    assert unmarshalled.value.error_type == "Runtime.MarshalError"
    assert red.invoke({})["color"] == "red"  # an error leaves the environment usable


def test_the_api_answers_502_when_the_function_fails_or_times_out(stack: LocalStack) -> None:
    ok = requests.post(f"{stack.api_url}/blue", json={"http": True}, timeout=30)
    assert ok.status_code == 200 and ok.json()["color"] == "blue"
    failed = requests.post(f"{stack.api_url}/blue", json={"fail": "boom"}, timeout=30)
    assert (failed.status_code, failed.json()) == (502, {"message": "Internal server error"})
    timed_out = requests.post(f"{stack.api_url}/slow", json={"sleep": 10}, timeout=30)
    assert (timed_out.status_code, timed_out.json()) == (502, {"message": "Internal server error"})


def test_a_function_s_output_is_relayed_tagged_with_its_name(stack: LocalStack) -> None:
    from lakehook.local import logs

    lines: list[tuple[str, str]] = []
    original = logs.emit
    try:
        logs.emit = lambda function, line: lines.append((function, line))  # type: ignore[assignment]
        _fn(stack, "Blue").invoke({"log": "hello-from-blue", "print_stderr": "to-stderr"})
        _fn(stack, "Red").invoke({"log": "hello-from-red"})
        wait_for(lambda: sum("hello-from-red" in line for _, line in lines) >= 3, 5, every=0.05)
    finally:
        logs.emit = original  # type: ignore[assignment]
    blue = [line for fn, line in lines if fn == "Blue"]
    red = [line for fn, line in lines if fn == "Red"]
    records = [json.loads(line) for line in blue if line.startswith("{")]
    [record] = [r for r in records if r.get("marker") == "hello-from-blue"]
    assert record["service"] == "blue-service" and record["function_name"] == "Blue"  # Powertools' own context
    assert any("printed: hello-from-blue" in line for line in blue) and any("to-stderr" in line for line in blue)
    assert all("hello-from-blue" not in line for line in red)  # never under another function's name
    assert any("hello-from-red" in line for line in red)


def test_a_relayed_line_is_human_or_json_as_the_stack_s_format_says() -> None:
    from lakehook.local.logs import function_line

    record = json.dumps({"level": "INFO", "message": "polled", "function_name": "Red", "asset": "a.b"})
    human = function_line("Red", record)
    assert " INFO    Red " in human and "polled" in human and "asset=a.b" in human
    assert "function_name" not in human
    assert function_line("Red", "a plain line").endswith("Red                    a plain line")


def test_a_broken_handler_fails_its_function_s_start(tmp_path: Path) -> None:
    """What makes the stack's start fail when a handler does not import (a second stack here would reset
    the module's moto, which every stack of a process shares)."""
    (tmp_path / "app.py").write_text("raise ImportError('a dependency is missing')\n")
    (tmp_path / "template.yaml").write_text(FIXTURE.read_text())
    [spec] = [f for f in Template.load(tmp_path / "template.yaml").functions() if f.name == "Red"]
    with pytest.raises(FunctionError) as failed:
        LocalFunction(spec).start()
    assert failed.value.error_type == "ImportError" and "a dependency is missing" in str(failed.value)


def test_a_stream_batch_that_times_out_is_stopped_and_retried(stack: LocalStack, tmp_path: Path) -> None:
    table = boto3.resource("dynamodb", endpoint_url=stack.endpoint_url, region_name="us-east-1").Table(stack.table_name)
    out, once = tmp_path / "handled.txt", tmp_path / "hung-once"
    table.put_item(Item={"PK": "slow", "out": str(out), "once": str(once)})  # hangs past Timeout: 1 once
    table.put_item(Item={"PK": "next", "out": str(out)})
    assert stack.wait_idle(30)
    assert once.exists()  # the first delivery hung and was stopped
    assert out.read_text().splitlines() == ["slow", "next"]  # then the batch was retried, in order, once


ORPHAN_PROBE = """
import json, sys
from pathlib import Path
from lakehook.local import invoker
from lakehook.local.runtime import LocalStack

if __name__ == "__main__":
    stack = LocalStack(template=Path(sys.argv[1]), port=0)
    stack.start()
    pids = [invoker._ForkServer.get().process.pid] + [p for f in stack.functions for p in f.processes()]
    print(json.dumps(pids), flush=True)
    sys.stdin.read()  # until killed
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_no_process_outlives_a_killed_stack(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(ORPHAN_PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    probe = subprocess.Popen(
        [sys.executable, str(script), str(FIXTURE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert probe.stdout is not None
    pids = json.loads(probe.stdout.readline())
    assert len(pids) >= 1 + 2 * 4 and all(_alive(pid) for pid in pids)  # the fork server, zygotes, environments
    probe.send_signal(signal.SIGKILL)
    probe.wait(timeout=10)
    wait_for(lambda: not any(_alive(pid) for pid in pids), 15)
    assert [pid for pid in pids if _alive(pid)] == []
