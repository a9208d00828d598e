"""Keep the story readable: drop the CloudWatch EMF lines the functions print while the demo runs.

Powertools' ``single_metric`` prints its EMF document whatever ``POWERTOOLS_METRICS_DISABLED`` says, so the
dispatcher's and resolver's per-event metrics would interleave with the story (and tear rich's live view).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

EMF_PREFIX = '{"_aws":'


class WithoutMetricLines:
    """A stdout that forwards everything except EMF documents (and the newline print() writes after one)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._dropped = False

    def write(self, text: str) -> int:
        if text.startswith(EMF_PREFIX) or (self._dropped and text == "\n"):
            self._dropped = text != "\n"
            return len(text)
        self._dropped = False
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


@contextmanager
def without_metric_lines() -> Iterator[TextIO]:
    """Replace sys.stdout for the block; answers the real stdout (for rich's console)."""
    real = sys.stdout
    sys.stdout = WithoutMetricLines(real)
    try:
        yield real
    finally:
        sys.stdout = real
