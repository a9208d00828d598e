"""Shared by the HTTP targets (webhook, Airflow, DolphinScheduler): which URLs may be dialled, bounded
timeouts, how a transport failure becomes an Outcome (ambiguous when the request may have arrived), and a
request with a bearer token read again once when the target refuses it (Airflow, Databricks).

The URL as written is checked here (:func:`refuse_insecure`); the addresses its host resolves to are
checked on every connect by the session's guard (:mod:`lakehook.adapters.targets.egress`), and a refused
one is a FATAL outcome (``refused_destination``), never a retry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import NameResolutionError, NewConnectionError

from lakehook.adapters.targets.egress import DestinationRefusedError
from lakehook.domain.dispatch import Outcome, TargetUnavailableError
from lakehook.domain.url_policy import UrlPolicy, UrlRefusedError

CONNECT_TIMEOUT_SECONDS = 3.05
USER_AGENT = "lakehook-dispatcher"


class RefusedDestination(requests.ConnectionError):
    """The request was not sent: its host resolves to an address the outbound policy refuses."""


def refuse_insecure(url: str, policy: UrlPolicy | bool) -> Outcome | None:
    """A FATAL outcome unless the outbound policy allows ``url`` as written (https; plain http only to a
    loopback host in local mode; no refused host). ``policy`` may be the local-mode switch alone."""
    if isinstance(policy, bool):
        policy = UrlPolicy(local_mode=policy)
    try:
        policy.check_url(url)
    except UrlRefusedError as exc:
        parts = urlsplit(url)
        return Outcome.fatal(f"refusing to dial {parts.scheme}://{parts.hostname}: {exc}", exc.code)
    return None


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
    if isinstance(exc, RefusedDestination):
        return Outcome.fatal(f"{what}: {exc}", "refused_destination")
    if isinstance(exc, requests.ReadTimeout):
        return Outcome.retryable(f"{what}: no answer within the timeout", "timeout", ambiguous=True)
    if _never_connected(exc):
        return Outcome.retryable(f"{what}: could not connect ({type(exc).__name__})", "connect", ambiguous=False)
    return Outcome.retryable(f"{what}: {type(exc).__name__}", "transport", ambiguous=True)


def send(session: requests.Session, method: str, url: str, timeout: float, **kwargs: Any) -> requests.Response:
    """One request with bounded timeouts and no redirects (a redirect is answered as the 3xx it is)."""
    headers = {"User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
    try:
        return session.request(
            method,
            url,
            timeout=(min(CONNECT_TIMEOUT_SECONDS, timeout), timeout),
            allow_redirects=False,
            headers=headers,
            **kwargs,
        )
    except DestinationRefusedError as exc:
        raise RefusedDestination(str(exc)) from exc


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


def _refused_401(response: requests.Response) -> bool:
    return response.status_code == 401


def with_bearer(
    session: requests.Session,
    token: Callable[[bool], str | Outcome],
    request: tuple[str, str, float],
    lookup: bool,
    refused: Callable[[requests.Response], bool] = _refused_401,
    **kwargs: Any,
) -> requests.Response | Outcome:
    """One ``request`` (method, URL, timeout) with the bearer token ``token(fresh)`` answers; when the target
    ``refused`` the token (a 401 unless told) it is read again (``fresh``) once, as it may have been rotated. The
    answer is the last response, refused or not. A token that cannot be had is its Outcome (a look-up, ``lookup``:
    TargetUnavailableError); a look-up's transport failure raises as :func:`ask` does, a start's as :func:`send`."""
    method, url, timeout = request
    call = ask if lookup else send
    response: requests.Response | None = None
    for fresh in (False, True):
        bearer = token(fresh)
        if isinstance(bearer, Outcome):
            if lookup:
                raise TargetUnavailableError(bearer.reason or "no token")
            return bearer
        headers = {"Authorization": f"Bearer {bearer}", "Accept": "application/json"}
        response = call(session, method, url, timeout, headers=headers, **kwargs)
        if not refused(response):
            return response
    assert response is not None
    return response
