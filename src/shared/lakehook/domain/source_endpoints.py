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
- every property value that is a URL of another scheme a catalog or a file system dials (``thrift://`` to a
  Hive metastore, ``postgresql+psycopg2://`` or ``jdbc:mysql://`` to a SQL catalog, ``hdfs://``, several of them
  comma-separated as ``hive.metastore.uris`` takes them) has its host checked as a target's would be: no
  metadata, link-local or unspecified address ever, loopback only in local mode, a private address only in an
  allow-listed network, and at poll time every address its name resolves to. The protocol is the catalog's, so
  it need not be https. Object-store URLs (``s3://bucket/...``, ``gs://``, ``oss://`` ...) name a bucket, read
  through the store's own endpoint, and a URL without a host (``sqlite:////tmp/catalog.db``) dials nothing;
- a property whose name says it is an endpoint (a word of it ``host`` or ending in ``endpoint``, ``uri``,
  ``url``) must be written as a URL, ``<scheme>://...``, of a network address: libraries take a bare
  ``host:port`` too, and would dial it over plain http; and ``file://`` is this machine's files, never an
  endpoint (``fs.s3.endpoint: file:///etc``). A ``file://`` warehouse is fine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit

from lakehook.domain.errors import ValidationError
from lakehook.domain.url_policy import UrlPolicy, UrlRefusedError, host_address

_NAME_WORDS = re.compile(r"[._\-\s]+")
_ENDPOINT_WORDS = ("endpoint", "url", "uri")  # as a word or a word's end: jdbcurl, metadataendpoint
_HOST_WORDS = frozenset({"host", "hostname"})
_WEB_URL = re.compile(r"^\s*https?://", re.I)
_ANY_URL = re.compile(r"^[a-z][a-z0-9+.:-]*://", re.I)
_JDBC = "jdbc:"
# Schemes whose authority is a bucket or container, read through the store's own endpoint (checked as one).
_STORE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "oss", "cos", "cosn", "obs", "r2"})
_FILE_SCHEMES = frozenset({"file"})  # this machine's files
# The port a client dials when the URL names none (for the poll-time DNS check; 0 for any other scheme).
_DEFAULT_PORTS = {"thrift": 9083, "postgresql": 5432, "postgres": 5432, "mysql": 3306, "mariadb": 3306, "hive2": 10000}


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


def _scheme(parts: SplitResult) -> str:
    """The scheme without a driver (``postgresql+psycopg2`` is ``postgresql``)."""
    return parts.scheme.lower().split("+", 1)[0]


def _dialled_urls(value: str) -> list[SplitResult]:
    """The URLs of a non-web value, each split (a ``jdbc:`` prefix dropped, a comma-separated list taken apart).
    Raises ValueError for a malformed one."""
    found = []
    for part in value.split(","):
        text = part.strip()
        if text.lower().startswith(_JDBC):
            text = text[len(_JDBC) :]
        if text:
            found.append(urlsplit(text))
    return found


def _dialled_host(parts: SplitResult) -> str | None:
    """The host a client dials for this URL, or None when it dials none (an object store's bucket, a local
    file, no authority). Raises UrlRefusedError for an authority without a host, ValueError for a bad port."""
    if _scheme(parts) in _STORE_SCHEMES | _FILE_SCHEMES or not parts.netloc:
        return None
    parts.port  # noqa: B018 - a port that is not a number in 0..65535 raises here
    if not parts.hostname:
        raise UrlRefusedError("names no host")
    return parts.hostname


def _check_dialled(name: str, value: str, policy: UrlPolicy) -> None:
    """A non-web URL value: every host it dials under the policy's address rules; ``file:`` never as an endpoint."""
    try:
        for parts in _dialled_urls(value):
            if _scheme(parts) in _FILE_SCHEMES and is_endpoint_property(name):
                raise UrlRefusedError("an endpoint is a network address; file:// is this machine's own files")
            host = _dialled_host(parts)
            if host is None:
                continue
            address = host_address(host)
            if address is not None:
                policy.check_address(address)
            else:
                policy.check_name(host)
    except (UrlRefusedError, ValueError) as exc:  # urlsplit raises ValueError on a malformed [host] or port
        raise EndpointRefusedError(name, f"endpoint {_shown(value)} is refused: {exc}") from exc


def check_endpoint(name: str, value: str, policy: UrlPolicy) -> None:
    """Refuse (EndpointRefusedError) a property value that is an endpoint the policy does not allow."""
    if _WEB_URL.match(value):
        try:
            policy.check_url(value)
        except (UrlRefusedError, ValueError) as exc:  # urlsplit raises ValueError on a malformed [host]
            raise EndpointRefusedError(name, f"endpoint {_shown(value)} is refused: {exc}") from exc
        return
    if _ANY_URL.match(value):
        _check_dialled(name, value, policy)
        return
    if is_endpoint_property(name):
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


def dialled_endpoints(properties: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """``(property, host, port)`` of every host the values dial: http(s) URLs and the other schemes' hosts (what a
    poll-time DNS check looks up). Values are assumed checked (:func:`check_endpoints`)."""
    found: list[tuple[str, str, int]] = []
    for name, value in properties.items():
        if _WEB_URL.match(value):
            parts = urlsplit(value.strip())
            if parts.hostname:
                found.append((name, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)))
        elif _ANY_URL.match(value):
            for parts in _dialled_urls(value):
                host = _dialled_host(parts)
                if host is not None:
                    found.append((name, host, parts.port or _DEFAULT_PORTS.get(_scheme(parts), 0)))
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
