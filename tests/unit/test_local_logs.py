"""`lakehook local up` logs: a compact line per record for a person, JSON as on AWS, and the runtime's own
lines told apart from the functions'."""

from __future__ import annotations

import io
import json
import logging
import re
import uuid

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from lakehook.cli import build_parser
from lakehook.local.logs import LocalLogFormatter, resolve

LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (?P<level>[A-Z]+) +(?P<tag>\S+) +(?P<message>.+?)(?:  (?P<fields>.*))?$")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def powertools(human: bool) -> tuple[Logger, io.StringIO]:
    """A Powertools logger as a function has it, its handler's formatter wrapped as `local up` wraps it."""
    out = io.StringIO()
    # Powertools sets a logger's handler up once per name: a fresh name gets a fresh handler on `out`.
    logger = Logger(service=f"lakehook-test-logs-{uuid.uuid4().hex[:8]}", stream=out)
    handler = logger.registered_handler
    assert handler.formatter is not None
    handler.setFormatter(LocalLogFormatter(handler.formatter, human=human))
    logger.append_keys(function_name="ResolverFunction", function_request_id="r-1", cold_start=True)
    return logger, out


def runtime_record(formatter: LocalLogFormatter, message: str, **extra: object) -> str:
    record = logging.LogRecord("lakehook.local.streams", logging.WARNING, __file__, 1, message, None, None)
    record.__dict__.update(extra)
    return formatter.format(record)


def test_a_functions_line_is_one_compact_line_with_its_name_message_and_keys() -> None:
    logger, out = powertools(human=True)
    logger.info("trigger dispatched", extra={"trigger_key": "t-1", "rule_id": "daily orders", "attempt": 2})
    line = out.getvalue().rstrip("\n")
    assert "\n" not in line
    found = LINE.match(line)
    assert found, line
    assert (found["level"], found["tag"], found["message"]) == ("INFO", "ResolverFunction", "trigger dispatched")
    assert found["fields"] == 'trigger_key=t-1 rule_id="daily orders" attempt=2'
    assert "cold_start" not in line and "r-1" not in line  # the Lambda context stays out of the way


def test_an_exception_is_shown_below_its_line() -> None:
    logger, out = powertools(human=True)
    try:
        raise KeyError("missing")
    except KeyError:
        logger.exception("batch failed")
    first, *rest = out.getvalue().rstrip("\n").splitlines()
    assert LINE.match(first) and first.split()[1] == "ERROR"
    assert rest[0].startswith("    Traceback") and "KeyError: 'missing'" in rest[-1]


def test_in_json_a_functions_line_is_exactly_what_powertools_prints_on_aws() -> None:
    logger, out = powertools(human=False)
    logger.info("trigger dispatched", extra={"trigger_key": "t-1"})
    data = json.loads(out.getvalue())
    assert data["function_name"] == "ResolverFunction" and data["trigger_key"] == "t-1"
    assert data["cold_start"] is True and "source" not in data


@pytest.mark.parametrize("human", [True, False])
def test_the_runtimes_own_lines_say_local_and_carry_no_functions_context(human: bool) -> None:
    # The inner formatter holds the keys the last function appended; a runtime line must not borrow them.
    inner = LambdaPowertoolsFormatter()
    inner.append_keys(function_name="DispatcherFunction", cold_start=False)
    formatter = LocalLogFormatter(inner, human=human)
    rendered = runtime_record(formatter, "stream batch failed", shard="shard-0001")
    assert "DispatcherFunction" not in rendered and "cold_start" not in rendered
    if human:
        found = LINE.match(rendered)
        assert found and found["tag"] == "local.streams" and found["fields"] == "shard=shard-0001"
    else:
        data = json.loads(rendered)
        assert data["source"] == "local" and data["logger"] == "lakehook.local.streams"
        assert (data["level"], data["message"], data["shard"]) == ("WARNING", "stream batch failed", "shard-0001")


def test_keys_a_handler_appends_still_reach_the_lines() -> None:
    logger, out = powertools(human=True)
    logger.append_keys(function_name="IngestApiFunction")
    logger.info("push accepted")
    assert LINE.match(out.getvalue().strip())["tag"] == "IngestApiFunction"  # type: ignore[index]
    logger.remove_keys(["function_name"])
    logger.info("push accepted")
    assert LINE.match(out.getvalue().splitlines()[-1])["tag"].startswith("lakehook-test-logs-")  # type: ignore[index]


def test_auto_is_human_on_a_terminal_and_json_into_a_pipe_or_file() -> None:
    assert resolve("auto", Terminal()) == "human"
    assert resolve("auto", io.StringIO()) == "json"
    assert resolve("json", Terminal()) == "json" and resolve("human", io.StringIO()) == "human"


def test_local_up_takes_a_log_format() -> None:
    parser = build_parser()
    assert parser.parse_args(["local", "up"]).log_format == "auto"
    assert parser.parse_args(["local", "up", "--log-format", "json"]).log_format == "json"
    with pytest.raises(SystemExit):
        parser.parse_args(["local", "up", "--log-format", "xml"])
