"""What the AWS job targets (Glue, EMR Serverless, ...) share: asking the service about a run, looking a run up
page by page, and its status in lakehook's words.

A run's status becomes a :class:`RunState` whose ``state`` is ``queued`` or ``running`` while the run has not
ended (the words that keep a ``maxInFlight`` slot) and the service's own word in lower case once it has; the
``detail`` keeps the service's word as it answered it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import error_code
from lakehook.adapters.targets.stepfunctions import execution_name
from lakehook.domain.dispatch import Invocation, TargetUnavailableError
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import RunState


class LazyClient:
    """A boto3 client made on its first use: the job targets' clients (Glue's model alone takes ~170 ms to load) cost a
    dispatcher's cold start nothing until a rule of theirs dispatches."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = self._make()
        return getattr(self._client, name)


def client_token(trigger_key: str) -> str:
    """The idempotency token of every attempt of one trigger (EMR Serverless, ECS): 64 hex digits of SHA-256(key)."""
    return hashlib.sha256(trigger_key.encode()).hexdigest()


def run_name(trigger_key: str) -> str:
    """``lakehook-<the Step Functions execution name of the key>``: distinct keys get distinct names of at most 89
    characters of ``[A-Za-z0-9_-]``, starting with a letter (a Batch job's name, an ECS task's ``startedBy``)."""
    return f"lakehook-{execution_name(trigger_key)}"


KEY_VARIABLE = "LAKEHOOK_TRIGGER_KEY"
PAYLOAD_VARIABLE = "LAKEHOOK_PAYLOAD"


def run_environment(invocation: Invocation) -> list[dict[str, str]]:
    """The environment variables a container run receives (Batch, ECS): the trigger key and the payload as JSON."""
    return [
        {"name": KEY_VARIABLE, "value": invocation.trigger_key},
        {"name": PAYLOAD_VARIABLE, "value": invocation.body().decode()},
    ]


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


def find_in_pages(
    what: str,
    page: Callable[[str | None], tuple[list[dict[str, Any]], str | None]],
    match: Callable[[dict[str, Any]], str | None],
    max_pages: int,
) -> str | None:
    """The first run id ``match`` finds among the items of up to ``max_pages`` pages (``page(token)`` answers a page's
    items and the next token), None when the last page was read without one. More pages than that raise
    TargetUnavailableError: a run that may be on a page not read is never taken for no run."""
    token: str | None = None
    for _ in range(max_pages):
        items, token = page(token)
        for item in items:
            found = match(item)
            if found is not None:
                return found
        if not token:
            return None
    raise TargetUnavailableError(f"{what}: more than {max_pages} pages of runs to look through")


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
