"""How ``lakehook local up`` prints logs: one compact line per record for a person, or JSON as on AWS.

Functions log through the Powertools logger (``lakehook``); the local runtime's own modules log under
``lakehook.local``, a child of it, so both reach the same handler. :class:`LocalLogFormatter` wraps the
Powertools formatter (which keeps the keys a handler appends) and tells the two apart: a function's line
carries its function name, the runtime's says ``local`` and drops the function context it would
otherwise inherit from whichever function logged last.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any, Literal, TextIO

LogFormat = Literal["auto", "human", "json"]

RUNTIME_LOGGER = "lakehook.local"
RUNTIME_TAG = "local"
# The function context Powertools adds to every line; the runtime's own lines drop it (it belongs to whichever
# function logged last), and the human format shows the function's name alone.
FUNCTION_CONTEXT = frozenset(
    {
        "service",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "xray_trace_id",
        "sampling_rate",
    }
)
# Keys the human format shows in its own way (time, level, tag, message, traceback) or not at all.
SHOWN_APART = FUNCTION_CONTEXT | {"level", "location", "message", "timestamp", "exception", "exception_name"}
SHOWN_APART |= {"stack_trace", "source", "logger"}
TAG_WIDTH = 22


def is_runtime(record: logging.LogRecord) -> bool:
    return record.name == RUNTIME_LOGGER or record.name.startswith(RUNTIME_LOGGER + ".")


class LocalLogFormatter(logging.Formatter):
    """Renders what the Powertools formatter ``inner`` makes, as a human line or as JSON.

    Everything else a formatter is asked (``append_keys``, ``remove_keys``, ``clear_state`` …, which the
    Powertools logger calls on its handler's formatter) goes to ``inner``.
    """

    def __init__(self, inner: logging.Formatter, human: bool) -> None:
        super().__init__()
        self.inner = inner
        self.human = human

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def format(self, record: logging.LogRecord) -> str:
        rendered = self.inner.format(record)
        try:
            data: dict[str, Any] = json.loads(rendered)
        except ValueError:
            return rendered  # not a Powertools JSON line: leave it as it is
        if is_runtime(record):
            data = {"source": RUNTIME_TAG, "logger": record.name}
            data |= {k: v for k, v in json.loads(rendered).items() if k not in FUNCTION_CONTEXT}
            return human_line(record, data) if self.human else json.dumps(data, default=str, separators=(",", ":"))
        return human_line(record, data) if self.human else rendered  # a function's JSON line, as on AWS


def human_line(record: logging.LogRecord, data: dict[str, Any]) -> str:
    """``08:26:11.123 INFO    IngestApiFunction      message  key=value …``, a traceback below if any; the
    runtime's own lines are tagged ``local`` (``local.streams`` …) where a function's carry its name."""
    clock = time.strftime("%H:%M:%S", time.localtime(record.created)) + f".{int(record.msecs):03d}"
    if data.get("source") == RUNTIME_TAG:
        tag = RUNTIME_TAG + record.name.removeprefix(RUNTIME_LOGGER)  # local, local.streams, local.gateway …
    else:
        tag = str(data.get("function_name") or record.name)
    return _line(clock, record.levelname, tag, str(data.get("message", record.getMessage())), data)


def _line(clock: str, level: str, tag: str, message: str, data: dict[str, Any]) -> str:
    """The human line: time, level, tag, message and the record's other keys, its traceback below."""
    fields = " ".join(f"{key}={_value(value)}" for key, value in data.items() if key not in SHOWN_APART)
    line = f"{clock} {level:<7} {tag:<{TAG_WIDTH}} {message}" + (f"  {fields}" if fields else "")
    if data.get("exception"):
        line += "\n" + "\n".join("    " + part for part in str(data["exception"]).splitlines())
    return line


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value if value and not any(c.isspace() or c in '"=' for c in value) else json.dumps(value)
    return json.dumps(value, default=str, separators=(",", ":"))


def resolve(choice: LogFormat, stream: TextIO) -> Literal["human", "json"]:
    """``auto``: the human format on a terminal, JSON (as on AWS) when the output goes to a file or a pipe."""
    if choice == "auto":
        return "human" if stream.isatty() else "json"
    return choice


def configure(choice: LogFormat, stream: TextIO) -> Literal["human", "json"]:
    """Put the chosen format on the Powertools logger's handler (the functions' and the runtime's lines)."""
    from lakehook.observability import logger

    chosen = resolve(choice, stream)
    handler = logger.registered_handler
    inner = handler.formatter
    if isinstance(inner, LocalLogFormatter):
        inner = inner.inner
    assert inner is not None
    handler.setFormatter(LocalLogFormatter(inner, human=chosen == "human"))
    return chosen


# --- the functions' output, relayed from their execution environments ------------------------------------


def relay(function: str, fd: int) -> None:
    """Copy what a function's processes print (their stdout and stderr, one pipe, read from ``fd``) to where
    the stack's own lines go, a line at a time, until the last of them ends and the pipe closes."""
    pending = b""
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                emit(function, line.decode("utf-8", "replace"))
        if pending:
            emit(function, pending.decode("utf-8", "replace"))
    finally:
        os.close(fd)


def emit(function: str, line: str) -> None:
    """Write one line of a function's output in the stack's format: as it is in JSON (as CloudWatch keeps
    it), or as a human line tagged with the function's name."""
    if not line.strip():
        return
    from lakehook.observability import logger

    handler = logger.registered_handler
    formatter = handler.formatter
    human = isinstance(formatter, LocalLogFormatter) and formatter.human
    text = function_line(function, line) if human else line
    stream = getattr(handler, "stream", None) or sys.stdout
    handler.acquire()
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass  # the stack's output is gone (closed at exit): the line cannot be shown
    finally:
        handler.release()


def function_line(function: str, line: str) -> str:
    """A function's printed line as a human line: a Powertools JSON record rendered, anything else as it is."""
    try:
        data = json.loads(line)
    except ValueError:
        data = None
    clock = time.strftime("%H:%M:%S") + f".{int(time.time() * 1000) % 1000:03d}"
    if not isinstance(data, dict) or "message" not in data:
        return f"{clock} {'':<7} {function:<{TAG_WIDTH}} {line}"
    return _line(clock, str(data.get("level", "INFO")), function, str(data["message"]), data)
