"""How commands print: ``--output json`` for scripts (one JSON document on stdout), text for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO

# Where this command's output goes. Tests capture it here rather than by swapping sys.stdout, which
# would also catch what the local stack's threads print in the same process.
_streams: ContextVar[tuple[TextIO, TextIO] | None] = ContextVar("lakehook_cli_streams", default=None)


def out() -> TextIO:
    streams = _streams.get()
    return streams[0] if streams else sys.stdout


def err() -> TextIO:
    streams = _streams.get()
    return streams[1] if streams else sys.stderr


@contextmanager
def captured(stdout: TextIO, stderr: TextIO) -> Iterator[None]:
    """Send the CLI's output (in this thread) to these streams."""
    token = _streams.set((stdout, stderr))
    try:
        yield
    finally:
        _streams.reset(token)


def emit(output: str, data: Any, text: Callable[[Any], Iterable[str]]) -> None:
    """Print ``data`` as JSON, or the lines ``text(data)`` renders."""
    stream = out()
    if output == "json":
        json.dump(data, stream, indent=2, sort_keys=True)
        stream.write("\n")
    else:
        for line in text(data):
            print(line, file=stream)
    stream.flush()


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A plain, aligned text table (no colours: it is read in CI logs and piped to grep)."""
    cells = [[str(h) for h in headers], *[["" if v is None else str(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def emit_items(
    output: str,
    items: list[dict[str, Any]],
    headers: Sequence[str],
    row: Callable[[dict[str, Any]], Sequence[Any]],
    empty: str,
) -> None:
    """A listing: ``{"items": [...]}`` as JSON, or a table of one ``row`` per item (``empty`` when there is none)."""
    emit(output, {"items": items}, lambda d: table(headers, [row(i) for i in d["items"]]) if d["items"] else [empty])


def compact(value: Any) -> str:
    """A short one-line rendering of a JSON value."""
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={compact(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return "[" + "; ".join(compact(v) for v in value) + "]"
    return str(value)


def error_document(exc: Exception, exit_code: int | None = None) -> dict[str, Any]:
    """An error as ``--output json`` prints it: ``{"error": {"message", "exitCode", "status"?, "body"?}}``."""
    error: dict[str, Any] = {"message": str(exc), "exitCode": exit_code if exit_code is not None else 1}
    code = getattr(exc, "exit_code", None)
    if exit_code is None and isinstance(code, int):
        error["exitCode"] = code
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        error["status"] = status
    body = getattr(exc, "body", None)
    if body is not None:
        error["body"] = body
    return {"error": error}


def report_error(output: str, exc: Exception, exit_code: int | None = None) -> int:
    """Print an error: a line on stderr, and with ``--output json`` also a JSON document on stdout (scripts
    read one document whether the command worked or not). Answer the exit code."""
    document = error_document(exc, exit_code)
    print(f"lakehook: error: {exc}", file=err())
    if output == "json":
        stream = out()
        json.dump(document, stream, indent=2, sort_keys=True)
        stream.write("\n")
        stream.flush()
    return int(document["error"]["exitCode"])
