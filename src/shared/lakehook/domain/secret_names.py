"""Producer signing secrets have a namespace of their own, which nothing a rule or an asset names may enter.

A producer's secret is ``<producer prefix><producerId>`` (``lakehook-producers/<stack>/orders-writer`` on a
deployed stack): outside ``lakehook/<stack>/``, the names targets' ``secretRef`` / ``credentialsRef`` /
``tokenRef`` and asset sources' ``secretsmanager:`` references use, so neither can send a producer's secret
to a host of their writer's choice, and ``lakehook secret put`` cannot overwrite one. Producers registered
before the namespace existed kept theirs at ``<secret prefix>producers/<producerId>``; that spelling is
reserved as well, and a rotation moves such a producer into the namespace.

Whether a reference points into the namespace is decided on the name as Secrets Manager would resolve it
and on every spelling that could reach it: a full or partial ARN, leading slashes, any letter case, and
SSM's ``/aws/reference/secretsmanager/<name>`` (which reads a Secrets Manager secret through SSM).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LEGACY_PRODUCER_DIRECTORY = "producers/"  # under the stack's secret prefix, before the namespace existed
# arn:<partition>:secretsmanager:<region>:<account>:secret:<name>[-<6 random characters>]
_SECRET_ARN = re.compile(r"^arn:[^:]*:secretsmanager:[^:]*:[^:]*:secret:", re.IGNORECASE)
# GetParameter of /aws/reference/secretsmanager/<name> answers that Secrets Manager secret.
SSM_SECRETS_MANAGER_REFERENCE = "/aws/reference/secretsmanager/"


def secret_name(ref: str) -> str:
    """The name a reference reaches, compared case-insensitively: no ARN prefix, no leading slashes."""
    return _SECRET_ARN.sub("", ref.strip()).lstrip("/").casefold()


def ssm_secret_name(parameter: str) -> str | None:
    """The Secrets Manager secret an SSM parameter name reads, if it is a ``/aws/reference/secretsmanager/`` one."""
    spelled = "/" + parameter.strip().lstrip("/")
    if not spelled.casefold().startswith(SSM_SECRETS_MANAGER_REFERENCE):
        return None
    return spelled[len(SSM_SECRETS_MANAGER_REFERENCE) :]


@dataclass(frozen=True)
class ProducerSecrets:
    """Where producer signing secrets live, and the test every other secret reference must pass."""

    prefix: str  # the namespace: only the producer routes write or read under it
    legacy_prefix: str  # ``<secret prefix>producers/``, where producers registered before it keep theirs

    @classmethod
    def of(cls, producer_prefix: str, secret_prefix: str) -> ProducerSecrets:
        return cls(producer_prefix, f"{secret_prefix}{LEGACY_PRODUCER_DIRECTORY}")

    def name(self, producer_id: str) -> str:
        """The secret a new producer's signing secret is stored in."""
        return f"{self.prefix}{producer_id}"

    def is_current(self, ref: str) -> bool:
        """Whether a producer's stored reference is in the namespace (not the legacy place)."""
        return secret_name(ref).startswith(secret_name(self.prefix))

    def holds(self, ref: str) -> bool:
        """Whether a reference, however spelled, reaches a producer's signing secret."""
        name = secret_name(ref)
        return any(name.startswith(secret_name(p)) for p in (self.prefix, self.legacy_prefix) if secret_name(p))

    def refusal(self, ref: str) -> str:
        """The message a refused reference gets (it names the reference, never a value)."""
        return (
            f"secret {ref!r} is a producer signing secret ({self.prefix}*, {self.legacy_prefix}*): "
            "only the producer routes use those; store the target's or source's secret under another name"
        )
