"""Where a poller may connect: the endpoints an asset source names, under the targets' outbound URL policy.

An asset source's properties are handed to pyiceberg, pypaimon or boto3, which connect wherever they
say: a REST catalog's ``uri``, ``s3.endpoint`` / ``glue.endpoint`` / ``fs.s3.endpoint``, delta-rs style
``AWS_ENDPOINT_URL``, an OAuth ``oauth2-server-uri`` .... So the same :class:`UrlPolicy` that guards
webhook targets applies to them, when the asset is written (``PUT /assets``, a 400 naming the property)
and again at poll time, to the values secret references resolve to (see
``lakehook.adapters.lakehouse.credentials``):

- every property value that is an ``http://`` / ``https://`` URL must satisfy the policy (so on a deployed
  stack: https, no metadata, link-local, loopback or private address unless ``TargetAllowedNetworks``
  allows its network; on the local stack plain http to moto on ``127.0.0.1`` is fine);
- a property whose name says it is an endpoint (a word of it ``host`` or ending in ``endpoint``, ``uri``,
  ``url``) must
  be written as a URL, ``<scheme>://...``: libraries take a bare ``host:port`` too, and would dial it over
  plain http. Non-web schemes (``sqlite:///``, ``postgresql://``, ``thrift://``, ``s3://``) are not HTTP
  endpoints and are left to their catalogs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from lakehook.domain.errors import ValidationError
from lakehook.domain.url_policy import UrlPolicy, UrlRefusedError

_NAME_WORDS = re.compile(r"[._\-\s]+")
_ENDPOINT_WORDS = ("endpoint", "url", "uri")  # as a word or a word's end: jdbcurl, metadataendpoint
_HOST_WORDS = frozenset({"host", "hostname"})
_WEB_URL = re.compile(r"^\s*https?://", re.I)
_ANY_URL = re.compile(r"^[a-z][a-z0-9+.:-]*://", re.I)


class EndpointRefusedError(ValueError):
    """A source property names an endpoint the outbound policy refuses; ``name`` is the property."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def is_endpoint_property(name: str) -> bool:
    """Whether a property's name says it holds an endpoint (``s3.endpoint``, ``uri``, ``AWS_ENDPOINT_URL`` ...)."""
    words = _NAME_WORDS.split(name.lower())
    return any(w.endswith(_ENDPOINT_WORDS) or w in _HOST_WORDS for w in words)


def check_endpoint(name: str, value: str, policy: UrlPolicy) -> None:
    """Refuse (EndpointRefusedError) a property value that is an endpoint the policy does not allow."""
    if _WEB_URL.match(value):
        try:
            policy.check_url(value)
        except (UrlRefusedError, ValueError) as exc:  # urlsplit raises ValueError on a malformed [host]
            raise EndpointRefusedError(name, f"endpoint {_shown(value)} is refused: {exc}") from exc
        return
    if is_endpoint_property(name) and not _ANY_URL.match(value):
        raise EndpointRefusedError(
            name,
            f"write the endpoint as a URL (https://host[:port]), not {_shown(value)}; a bare host is dialled"
            " over plain http",
        )


def check_endpoints(properties: Mapping[str, str], policy: UrlPolicy, *, skip: tuple[str, ...] = ()) -> None:
    """Every property (except values starting with one of ``skip``: secret references, checked once
    resolved) against :func:`check_endpoint`."""
    for name, value in properties.items():
        if skip and value.startswith(skip):
            continue
        check_endpoint(name, value, policy)


def check_source_properties(properties: Mapping[str, str], policy: UrlPolicy, skip: tuple[str, ...]) -> None:
    """The write-time check of an asset source: a ValidationError (400) naming ``source.properties.<name>``."""
    try:
        check_endpoints(properties, policy, skip=skip)
    except EndpointRefusedError as exc:
        field = f"source.properties.{exc.name}"
        raise ValidationError(f"{field}: {exc.reason}", field=field) from exc


def web_endpoints(properties: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """``(property, host, port)`` of every http(s) URL among the values (what a poll-time DNS check looks up).
    Values are assumed checked (:func:`check_endpoints`)."""
    found: list[tuple[str, str, int]] = []
    for name, value in properties.items():
        if _WEB_URL.match(value):
            parts = urlsplit(value.strip())
            if parts.hostname:
                found.append((name, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)))
    return found


def _shown(value: str) -> str:
    """The value for a message: scheme and host only (a URL's path or query may carry a token)."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return "(malformed URL)"
    if parts.scheme and parts.netloc:
        return repr(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}")
    return repr(value[:64])
