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

Every other reference follows one naming rule, :class:`SecretNames`: a name is relative to the stack's
prefix (``lakehook/<stack>/``) unless it already starts with it, and an ARN is used as it is. ``lakehook
secret put``, ``PUT /rules`` (which checks the secret exists), the dispatcher and the pollers all resolve a
reference with it, so a secret is found under any name the CLI printed or the user typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LEGACY_PRODUCER_DIRECTORY = "producers/"  # under the stack's secret prefix, before the namespace existed
# arn:<partition>:secretsmanager:<region>:<account>:secret:<name>[-<6 random characters>]
_SECRET_ARN = re.compile(r"^arn:[^:]*:secretsmanager:[^:]*:[^:]*:secret:", re.IGNORECASE)
# GetParameter of /aws/reference/secretsmanager/<name> answers that Secrets Manager secret.
SSM_SECRETS_MANAGER_REFERENCE = "/aws/reference/secretsmanager/"


# What a secret reference may be: a Secrets Manager name, or a (full or partial) ARN of one.
SECRET_NAME_PATTERN = r"[A-Za-z0-9/_+=.@-]{1,512}"
SECRET_ARN_PATTERN = r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:" + SECRET_NAME_PATTERN
SECRET_REF_PATTERN = rf"^(?:{SECRET_NAME_PATTERN}|{SECRET_ARN_PATTERN})$"
MAX_SECRET_NAME = 512
_NAME = re.compile(rf"^{SECRET_NAME_PATTERN}$")
_ARN = re.compile(rf"^{SECRET_ARN_PATTERN}$")


class SecretNameError(ValueError):
    """A secret reference that names no secret this stack may read."""


@dataclass(frozen=True)
class SecretNames:
    """The one naming rule of the secrets targets (``secretRef``, ``credentialsRef``, ``tokenRef``) and asset
    sources (``secretsmanager:<ref>``) name: a name is relative to the stack's prefix unless it already
    starts with it; an ARN is used as it is and must name a secret under the prefix."""

    prefix: str  # ``lakehook/<stack>/`` (Settings.secret_prefix); empty: names are used as they are

    @property
    def rule(self) -> str:
        """The rule in a sentence, for messages and docs."""
        if not self.prefix:
            return "a name is used as it is"
        return f"a name is under {self.prefix} unless it already starts with it; an ARN is used as it is"

    def resolve(self, ref: str) -> str:
        """The SecretId Secrets Manager is asked for (a name under the prefix, or the ARN as given).

        Raises SecretNameError when that is no valid secret name, or an ARN names a secret outside the prefix."""
        if _ARN.fullmatch(ref):
            name = ref.split(":secret:", 1)[1]
            if not name.startswith(self.prefix):
                raise SecretNameError(
                    f"secret {ref!r} is outside {self.prefix}*, the only secrets this stack may read ({self.rule})"
                )
            return ref
        name = ref if ref.startswith(self.prefix) else f"{self.prefix}{ref.lstrip('/')}"
        if name == self.prefix or name.endswith("/"):
            raise SecretNameError(f"secret {ref!r} names no secret, only the directory {name!r} ({self.rule})")
        if not _NAME.fullmatch(name):
            raise SecretNameError(
                f"secret {ref!r} names {name!r}, not a valid secret name (letters, digits and /_+=.@-, at most "
                f"{MAX_SECRET_NAME}; {self.rule})"
            )
        return name

    def missing(self, ref: str) -> str:
        """What a message says of a reference that names no existing secret: the name looked up and how to
        make it (a secret is created by its name, never by an ARN)."""
        how = "by its name" if _ARN.fullmatch(ref) else f"with `lakehook secret put {ref}`"
        return f"secret {self.spelled(ref)} does not exist; create it first {how}"

    def spelled(self, ref: str) -> str:
        """How a message names a reference: as given and, when they differ, the name looked up."""
        try:
            name = self.resolve(ref)
        except SecretNameError:
            return repr(ref)
        return repr(ref) if name == ref else f"{ref!r} (looked up as {name!r}: {self.rule})"


AS_GIVEN = SecretNames("")  # no prefix: every name is used as it is (tests, a store of its own)


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

    def reached_by(self, ref: str, names: SecretNames) -> bool:
        """Whether a reference reaches a producer's signing secret as typed or as the stack's naming rule
        resolves it: one test for a rule's target and for ``lakehook secret put``, so what one refuses the other
        refuses too (``lakehook-producers/<stack>/x`` typed is the namespace, wherever the prefix would put it).
        Raises SecretNameError for a reference that names no valid secret."""
        return self.holds(ref) or self.holds(names.resolve(ref))

    def refusal(self, ref: str) -> str:
        """The message a refused reference gets (it names the reference, never a value)."""
        return (
            f"secret {ref!r} is a producer signing secret ({self.prefix}*, {self.legacy_prefix}*): "
            "only the producer routes use those; store the target's or source's secret under another name"
        )
