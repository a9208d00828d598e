"""The CLI's HTTP client: a bearer admin token, SigV4 (``execute-api``) for a deployed stack, or nothing."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import requests

DEFAULT_URL = "http://127.0.0.1:3000"
_EXECUTE_API_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", re.I)


class CliError(Exception):
    """A failure the CLI reports in one line and turns into an exit code."""

    exit_code = 1


class ApiError(CliError):
    """The API answered 4xx or 5xx; the message is the server's."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class UnreachableError(CliError):
    """Nothing answers at the URL (connection refused, DNS, timeout)."""

    exit_code = 2


def request_key_header(key: str | None) -> dict[str, str]:
    """The Idempotency-Key header of a request that starts a run: ``key``, or a new UUID (so a request the CLI
    sends again, e.g. after a timeout, under the same key starts nothing twice)."""
    from lakehook.domain.requests import IDEMPOTENCY_KEY_HEADER

    return {IDEMPOTENCY_KEY_HEADER: key if key is not None else str(uuid.uuid4())}


def path_part(value: str) -> str:
    """One path segment, percent-encoded."""
    return quote(value, safe="")


@dataclass
class ApiClient:
    """Calls the lakehook API at ``url`` with management credentials."""

    url: str = DEFAULT_URL
    admin_token: str | None = None
    region: str | None = None
    timeout: float = 30.0
    session: requests.Session = field(default_factory=requests.Session)

    @property
    def uses_sigv4(self) -> bool:
        return not self.admin_token and self.url.lower().startswith("https://")

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        accept: tuple[int, ...] = (),
    ) -> tuple[int, Any]:
        """Send one request; answer (status, parsed JSON). 4xx/5xx raise ApiError unless listed in ``accept``."""
        url = self._url(path, query)
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        all_headers = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            all_headers.setdefault("Content-Type", "application/json")
        if self.admin_token:
            all_headers["Authorization"] = f"Bearer {self.admin_token}"
        elif self.uses_sigv4:
            all_headers = self._sigv4(method, url, data, all_headers)
        answer = self._send(method, url, data, all_headers)
        parsed = _parse(answer)
        if answer.status_code >= 400 and answer.status_code not in accept:
            message = parsed.get("message") if isinstance(parsed, dict) else None
            text = message or answer.text or answer.reason
            raise ApiError(answer.status_code, f"{answer.status_code}: {text}", parsed)
        return answer.status_code, parsed

    def _url(self, path: str, query: dict[str, Any] | None) -> str:
        """The path under the API's URL, with the query's set parameters (a boolean as ``true``/``false``)."""
        url = self.url.rstrip("/") + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()})
        return url

    def _send(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> requests.Response:
        """The API's answer; UnreachableError when it cannot be reached or does not answer in time."""
        try:
            return self.session.request(method, url, data=data, headers=headers, timeout=self.timeout)
        except requests.ConnectionError as exc:
            raise UnreachableError(
                f"cannot reach the lakehook API at {self.url} ({type(exc).__name__}); "
                "start a local stack with `lakehook local up`, or pass --url / set LAKEHOOK_URL"
            ) from exc
        except requests.Timeout as exc:
            raise UnreachableError(f"the lakehook API at {self.url} did not answer within {self.timeout} s") from exc

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)[1]

    def _sigv4(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        import boto3
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        session = boto3.session.Session()
        credentials = session.get_credentials()
        if credentials is None:
            raise CliError(
                "no admin token and no AWS credentials: pass --admin-token (local stack) or configure AWS credentials"
            )
        found = _EXECUTE_API_HOST.search(url)
        region = self.region or (found.group(1) if found else None) or session.region_name
        if not region:
            raise CliError("cannot tell the AWS region to sign for: pass --region or set AWS_REGION")
        request = AWSRequest(method=method, url=url, data=data or b"", headers=headers)
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", region).add_auth(request)
        return dict(request.headers.items())


def _parse(answer: requests.Response) -> Any:
    if not answer.content:
        return None
    try:
        return answer.json()
    except ValueError:
        return answer.text
