"""How AWS SDK failures become Outcomes for the AWS targets (Step Functions, Lambda, EventBridge, Glue)."""

from __future__ import annotations

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from lakehook.domain.dispatch import Outcome

# Error codes that mean "slow down" or "try again": nothing is known to have happened.
THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "EC2ThrottledException",
        "ExecutionLimitExceeded",
        "ResourceNotReadyException",
        "ResourceConflictException",
    }
)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def client_error_outcome(exc: ClientError, what: str, busy: frozenset[str] = frozenset()) -> Outcome:
    """Throttling (and a target's own "busy, try later" codes ``busy``) retries (not ambiguous), a 5xx retries
    (ambiguous: the service may have acted), any other error (validation, missing resource, access denied) is
    FATAL."""
    code = error_code(exc)
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    message = str(exc.response.get("Error", {}).get("Message", ""))[:300]
    if code in THROTTLING or code in busy or status == 429:
        return Outcome.retryable(f"{what}: {code}: {message}", "throttled")
    if status >= 500 or code in (
        "ServiceException",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalException",
        "InternalServerError",
    ):
        return Outcome.retryable(f"{what}: {code}: {message}", f"aws_{code}"[:64], ambiguous=True)
    return Outcome.fatal(f"{what}: {code}: {message}", f"aws_{code}"[:64])


def transport_outcome(exc: BotoCoreError, what: str) -> Outcome:
    """A connect failure never reached the service; a read timeout or dropped connection may have."""
    if isinstance(exc, ConnectTimeoutError | EndpointConnectionError):
        return Outcome.retryable(f"{what}: could not connect ({type(exc).__name__})", "connect")
    if isinstance(exc, ReadTimeoutError):
        return Outcome.retryable(f"{what}: no answer within the timeout", "timeout", ambiguous=True)
    return Outcome.retryable(f"{what}: {type(exc).__name__}", "transport", ambiguous=True)
