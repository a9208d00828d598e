"""Resolve credential references in source properties at poll time; values are never logged or stored."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lakehook.domain.assets import SECRET_REFERENCE_PREFIXES, referenced_secret
from lakehook.domain.errors import NotFoundError
from lakehook.domain.secret_names import AS_GIVEN, ProducerSecrets, SecretNameError, SecretNames
from lakehook.domain.source_endpoints import EndpointRefusedError, check_endpoints, dialled_endpoints
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports import SecretStore
from lakehook.ports.lakehouse import SourceAccessError

SECRETS_MANAGER = "secretsmanager:"
SSM = "ssm:"
FIELD_SEPARATOR = "#"  # "secretsmanager:<name>#<field>" picks one field of a JSON secret

ParameterReader = Callable[[str], str]
"""Reads an SSM parameter's decrypted value by name; raises NotFoundError when it does not exist."""
EndpointGuard = Callable[[str, int], object]
"""``(host, port)``: resolves a host and raises when it resolves to a refused address (see
``lakehook.adapters.targets.egress.AddressGuard.address_for``)."""


@dataclass(frozen=True)
class ResolvedProperties:
    """Properties ready for a catalog, and the secret values among them (to keep out of messages)."""

    values: dict[str, str]
    secrets: frozenset[str] = frozenset()

    def scrub(self, text: str) -> str:
        """The text with every secret value replaced by ``***`` (library errors may quote a URI)."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret:
                text = text.replace(secret, "***")
        return text


class CredentialResolver:
    """Turns ``secretsmanager:<name>[#field]`` and ``ssm:<name>[#field]`` values into their secrets.

    ``secretsmanager:<ref>`` names a secret by the stack's naming rule (``names``: relative to the stack's
    prefix unless it starts with it, or an ARN), as targets' ``secretRef`` do; ``ssm:<name>`` is an SSM
    parameter's name, used as it is.

    A reference to a producer signing secret (``reserved``) is never resolved: ``PUT /assets`` refuses one,
    and a source stored before that check reads as a source whose credentials cannot be read.

    With a ``policy`` (the stack's outbound URL policy) the resolved properties' endpoints are checked
    before any catalog is built from them (:mod:`lakehook.domain.source_endpoints`): the endpoints a secret
    reference resolves to (unknown when the asset was written) and those the policy refuses since; and,
    with a ``guard``, every endpoint host name is resolved and refused if any address it resolves to is.
    """

    def __init__(
        self,
        secrets: SecretStore,
        parameters: ParameterReader | None = None,
        reserved: ProducerSecrets | None = None,
        policy: UrlPolicy | None = None,
        guard: EndpointGuard | None = None,
        names: SecretNames = AS_GIVEN,
    ) -> None:
        self._secrets = secrets
        self._names = names
        self._parameters = parameters
        self._reserved = reserved
        self._policy = policy
        self._guard = guard

    def resolve(self, properties: Mapping[str, str]) -> ResolvedProperties:
        """The properties with every reference replaced by its value. Raises SourceAccessError naming the key."""
        values = {name: self._value(name, value) for name, value in properties.items()}
        secrets = frozenset(values[name] for name, value in properties.items() if values[name] != value)
        resolved = ResolvedProperties(values, secrets)
        if self._policy is not None:
            self._check_endpoints(resolved)
        return resolved

    def check_catalog_config(self, resolved: ResolvedProperties, config: Mapping[str, str]) -> None:
        """Check the properties a catalog ended up with (a REST catalog's server merges its own ``defaults``
        and ``overrides`` into them, ``uri`` and ``s3.endpoint`` included) as the source's own; a refused
        one is a SourceAccessError saying the catalog's config set it."""
        if self._policy is None:
            return
        merged = ResolvedProperties({k: str(v) for k, v in config.items()}, resolved.secrets)
        try:
            self._check_endpoints(merged)
        except SourceAccessError as exc:
            raise SourceAccessError(f"{exc} (as the catalog's server configured it)") from None

    def _check_endpoints(self, resolved: ResolvedProperties) -> None:
        try:
            check_endpoints(resolved.values, self._policy or UrlPolicy())
        except EndpointRefusedError as exc:
            raise SourceAccessError(resolved.scrub(f"property {exc.name!r}: {exc.reason}")) from None
        if self._guard is None:
            return
        for name, host, port in dialled_endpoints(resolved.values):
            try:
                self._guard(host, port)
            except Exception as exc:  # refused (DestinationRefusedError) or not resolvable (gaierror)
                reason = resolved.scrub(f"{type(exc).__name__}: {exc}")
                raise SourceAccessError(f"property {name!r}: endpoint refused: {reason}") from None

    def _value(self, name: str, value: str) -> str:
        if not value.startswith(SECRET_REFERENCE_PREFIXES):
            return value
        reference, _, json_field = value.partition(FIELD_SEPARATOR)
        looked_up = self._looked_up(name, reference)
        if self._reserved is not None and any(
            ref is not None and self._reserved.holds(ref) for ref in (referenced_secret(value), looked_up)
        ):
            raise SourceAccessError(
                f"property {name!r}: {reference} is a producer signing secret; sources may not read it"
            )
        secret = self._read(name, reference, looked_up)
        if not json_field:
            return secret
        try:
            return str(json.loads(secret)[json_field])
        except (ValueError, KeyError, TypeError):
            # from None: a parse error's context could quote the secret
            raise SourceAccessError(f"property {name!r}: {reference} has no JSON field {json_field!r}") from None

    def _looked_up(self, name: str, reference: str) -> str | None:
        """The secret name a Secrets Manager reference resolves to (None for an SSM reference)."""
        if not reference.startswith(SECRETS_MANAGER):
            return None
        try:
            return self._names.resolve(reference.removeprefix(SECRETS_MANAGER))
        except SecretNameError as exc:
            raise SourceAccessError(f"property {name!r}: {exc}") from None

    def _read(self, name: str, reference: str, looked_up: str | None) -> str:
        """The referenced secret's value, from Secrets Manager (``looked_up``) or SSM; a failure names the reference,
        never a value."""
        try:
            if looked_up is not None:
                return self._secrets.get_secret(looked_up)
            if self._parameters is None:
                raise SourceAccessError(f"property {name!r}: SSM references are not configured here")
            return self._parameters(reference.removeprefix(SSM))
        except NotFoundError as exc:
            if looked_up is not None and looked_up != reference.removeprefix(SECRETS_MANAGER):
                raise SourceAccessError(
                    f"property {name!r}: {reference} does not exist (looked up as {looked_up!r}: {self._names.rule})"
                ) from exc
            raise SourceAccessError(f"property {name!r}: {reference} does not exist") from exc
        except SourceAccessError:
            raise
        except Exception as exc:  # the secret backend failed: report the reference, never a value
            raise SourceAccessError(f"property {name!r}: {reference} could not be read ({type(exc).__name__})") from exc


def properties_fingerprint(catalog: str, properties: Mapping[str, str]) -> str:
    """A cache key for a catalog built from these (unresolved) properties: references, not secrets."""
    text = json.dumps([catalog, sorted(properties.items())], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def ssm_parameter_reader(client: object) -> ParameterReader:
    """A ParameterReader on a boto3 SSM client (SecureString parameters are decrypted)."""

    def read(name: str) -> str:
        try:
            answer = client.get_parameter(Name=name, WithDecryption=True)  # type: ignore[attr-defined]
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code == "ParameterNotFound":
                raise NotFoundError(f"parameter {name!r} does not exist") from exc
            raise
        return str(answer["Parameter"]["Value"])

    return read
