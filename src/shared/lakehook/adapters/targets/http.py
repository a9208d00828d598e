"""Shared by the HTTP targets (webhook, Airflow, DolphinScheduler): which URLs may be dialled, bounded
timeouts, and how a transport failure becomes an Outcome (ambiguous when the request may have arrived)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import NameResolutionError, NewConnectionError

from lakehook.domain.dispatch import Outcome, TargetUnavailableError
from lakehook.domain.targets import is_loopback_host

CONNECT_TIMEOUT_SECONDS = 3.05
USER_AGENT = "lakehook-dispatcher"


def refuse_insecure(url: str, allow_insecure_loopback: bool) -> Outcome | None:
    """A FATAL outcome unless ``url`` is https, or plain http to a loopback host in local mode."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and allow_insecure_loopback and is_loopback_host(parts.hostname):
        return None
    return Outcome.fatal(
        f"refusing to dial {parts.scheme}://{parts.hostname}: only https (plain http to a loopback host in local mode)",
        "insecure_url",
    )


def _never_connected(exc: BaseException) -> bool:
    """Whether the failure happened before any byte was sent (refused, unresolvable, connect timeout)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, requests.ConnectTimeout | NewConnectionError | NameResolutionError):
            return True
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException) and id(reason) not in seen:
            current = reason
            continue
        current = current.__cause__ or current.__context__
    return False


def transport_outcome(exc: requests.RequestException, what: str) -> Outcome:
    """A RETRYABLE outcome for a transport failure; ambiguous unless the request surely never left."""
    if isinstance(exc, requests.ReadTimeout):
        return Outcome.retryable(f"{what}: no answer within the timeout", "timeout", ambiguous=True)
    if _never_connected(exc):
        return Outcome.retryable(f"{what}: could not connect ({type(exc).__name__})", "connect", ambiguous=False)
    return Outcome.retryable(f"{what}: {type(exc).__name__}", "transport", ambiguous=True)


def send(session: requests.Session, method: str, url: str, timeout: float, **kwargs: Any) -> requests.Response:
    """One request with bounded timeouts and no redirects (a redirect is answered as the 3xx it is)."""
    headers = {"User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
    return session.request(
        method,
        url,
        timeout=(min(CONNECT_TIMEOUT_SECONDS, timeout), timeout),
        allow_redirects=False,
        headers=headers,
        **kwargs,
    )


def ask(session: requests.Session, method: str, url: str, timeout: float, **kwargs: Any) -> requests.Response:
    """Like :func:`send`, for look-ups: a transport failure raises TargetUnavailableError."""
    try:
        return send(session, method, url, timeout, **kwargs)
    except requests.RequestException as exc:
        raise TargetUnavailableError(f"{method} {urlsplit(url).path}: {type(exc).__name__}") from exc


def json_or_none(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
