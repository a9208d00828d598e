"""What the AWS job targets (Glue, ...) share: asking the service about a run, and its status in lakehook's words.

A run's status becomes a :class:`RunState` whose ``state`` is ``queued`` or ``running`` while the run has not
ended (the words that keep a ``maxInFlight`` slot) and the service's own word in lower case once it has; the
``detail`` keeps the service's word as it answered it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import error_code
from lakehook.domain.dispatch import TargetUnavailableError
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import RunState


def ask_aws(what: str, call: Callable[[], dict[str, Any]], missing: Collection[str] = ()) -> dict[str, Any] | None:
    """The answer of ``call`` (one AWS request named ``what``), None when it fails with an error code in ``missing``
    (no such run); any other failure raises TargetUnavailableError (the target cannot be asked now)."""
    try:
        return call()
    except ClientError as exc:
        if error_code(exc) in missing:
            return None
        raise TargetUnavailableError(f"{what}: {error_code(exc)}") from exc
    except BotoCoreError as exc:
        raise TargetUnavailableError(f"{what}: {type(exc).__name__}") from exc


def run_state_of(service: str, native: str, queued: Collection[str], running: Collection[str]) -> RunState:
    """A run's status ``native`` as the service answered it: ``queued`` / ``running`` when it is among those words,
    else the word in lower case (the run has ended)."""
    if native in queued:
        state = "queued"
    elif native in running:
        state = "running"
    else:
        state = native.lower()[:64] or "unknown"
    return RunState(state=state, detail=f"{service}: {native}", checked_at=now_ms())
