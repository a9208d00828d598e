"""``lakehook secret put NAME``: create or update a target secret (a webhook's signing key, Airflow or
DolphinScheduler credentials) where the stack's dispatcher reads it.

- A local stack (an admin token, an ``http://`` URL): in the stack's own moto server, which the stack
  names at ``GET /_local/stack``.
- A deployed stack (SigV4): in Secrets Manager, with your AWS credentials, in the API's region.

Either way the name follows the stack's one naming rule (:class:`lakehook.domain.secret_names.SecretNames`):
it is put under the stack's prefix (``lakehook/<stack name>/``, the only secrets a deployed dispatcher may
read) unless it already starts with it, and an ARN names an existing secret. ``--stack`` (or
``LAKEHOOK_STACK``) names the deployed stack. The answer is the full name; a rule's ``secretRef`` may
spell it that way or as typed here, since ``PUT /rules`` and the dispatcher resolve it by the same rule.

Producer signing secrets are not written here: a name in their namespace (``lakehook-producers/<stack>/``,
or ``producers/…`` under the stack's prefix, where producers registered before it keep theirs) is refused,
in any spelling, as typed or as the prefix would resolve it: the same test a rule's ``secretRef`` gets.
``PUT /producers/{id}?rotateSecret=true`` (``lakehook producers rotate``) replaces one.
"""

from __future__ import annotations

import argparse
import os
import secrets as random
from dataclasses import dataclass
from typing import Any

from lakehook.cli_commands.api import _EXECUTE_API_HOST, ApiClient, CliError
from lakehook.cli_commands.inputs import read_text
from lakehook.cli_commands.output import emit
from lakehook.domain.secret_names import ProducerSecrets, SecretNameError, SecretNames
from lakehook.local.gateway import LOCAL_INFO_PATH

_LOCAL_KEY = "testing"  # moto takes any credentials
DEFAULT_PRODUCER_PREFIX = "lakehook-producers/"  # Settings.producer_secret_prefix's default
MAX_SECRET_BYTES = 65_536  # Secrets Manager's limit on a SecretString


@dataclass(frozen=True)
class SecretsPlace:
    """Where a stack's target secrets live: a Secrets Manager client, the names' prefix, and the producer
    signing secrets' namespace, which is not theirs."""

    client: Any
    prefix: str
    local: bool
    producer_prefix: str = DEFAULT_PRODUCER_PREFIX

    @property
    def names(self) -> SecretNames:
        """The stack's one naming rule, the one ``PUT /rules`` and the dispatcher resolve references with."""
        return SecretNames(self.prefix)

    def name(self, given: str) -> str:
        """The secret ``given`` names (what a rule's ``secretRef`` may spell as ``given`` too)."""
        producers = ProducerSecrets.of(self.producer_prefix, self.prefix)
        try:
            name = self.names.resolve(given)
            refused = producers.reached_by(given, self.names)
        except SecretNameError as exc:
            raise CliError(str(exc)) from exc
        if refused:  # as a rule's target refuses it: typed in the namespace, or put there by the prefix
            raise CliError(
                f"{given!r} names a producer signing secret ({producers.prefix}*, {producers.legacy_prefix}*), "
                "not a target's (a rule refuses it too): rotate a producer's secret with `lakehook producers "
                "rotate`, and give the target's secret another name"
            )
        return name


def place(api: ApiClient, stack: str | None) -> SecretsPlace:
    """The local stack's moto server, or the deployed stack's Secrets Manager."""
    import boto3

    if api.admin_token and not api.url.lower().startswith("https://"):
        status, info = api.request("GET", LOCAL_INFO_PATH, accept=(404,))
        if status == 404 or not isinstance(info, dict) or not info.get("endpointUrl"):
            raise CliError(
                f"{api.url} does not describe itself as a local stack; for a deployed stack use its https URL "
                "without an admin token (SigV4) and --stack"
            )
        client = boto3.client(
            "secretsmanager",
            endpoint_url=str(info["endpointUrl"]),
            region_name=str(info["region"]),
            aws_access_key_id=_LOCAL_KEY,
            aws_secret_access_key=_LOCAL_KEY,
        )
        producer_prefix = str(info.get("producerSecretPrefix") or DEFAULT_PRODUCER_PREFIX)
        return SecretsPlace(client, str(info.get("secretPrefix") or ""), local=True, producer_prefix=producer_prefix)
    if not stack:
        raise CliError("name the deployed stack: --stack NAME (or LAKEHOOK_STACK); secrets go under lakehook/NAME/")
    found = _EXECUTE_API_HOST.search(api.url)
    region = api.region or (found.group(1) if found else None)
    session = boto3.session.Session(region_name=region) if region else boto3.session.Session()
    client = session.client("secretsmanager")
    return SecretsPlace(client, f"lakehook/{stack}/", local=False, producer_prefix=f"lakehook-producers/{stack}/")


def _value(args: argparse.Namespace) -> tuple[str, bool]:
    """The secret's value and whether it was generated here."""
    given = [v for v in (args.value, args.value_file, args.generate or None) if v]
    if len(given) != 1:
        raise CliError("give the value one way: --value VALUE, --value-file PATH (- for stdin) or --generate")
    if args.generate:
        return random.token_hex(32), True
    if args.value_file:
        value = read_text(args.value_file, "the secret's value", limit=MAX_SECRET_BYTES).rstrip("\n")
    else:
        value = args.value
    if not value:
        raise CliError("the secret's value is empty")
    return value, False


def put_secret(client: Any, name: str, value: str) -> bool:
    """Create the secret, or put a new value in an existing one; True when it was created. An ARN names an
    existing secret (a secret is created by its name)."""
    from botocore.exceptions import ClientError

    if not name.startswith("arn:"):
        try:
            client.create_secret(Name=name, SecretString=value)
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceExistsException":
                raise CliError(f"Secrets Manager refused {name}: {exc}") from exc
    try:
        client.put_secret_value(SecretId=name, SecretString=value)
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            raise CliError(f"secret {name} does not exist; create it by its name, not an ARN") from exc
        raise CliError(f"Secrets Manager refused {name}: {exc}") from exc
    return False


def secret_put(api: ApiClient, args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError

    value, generated = _value(args)
    where = place(api, args.stack or os.environ.get("LAKEHOOK_STACK"))
    name = where.name(args.name)
    try:
        created = put_secret(where.client, name, value)
    except BotoCoreError as exc:
        raise CliError(f"cannot write secret {name}: {exc}") from exc
    data: dict[str, Any] = {"secretRef": name, "created": created, "local": where.local}
    if generated:
        data["value"] = value

    def text(d: dict[str, Any]) -> list[str]:
        lines = [f"{'created' if d['created'] else 'updated'} secret {d['secretRef']}"]
        lines.append(f"use it in a target as: secretRef: {d['secretRef']}")
        if generated:
            lines.append(f"value (shown once, give it to the receiver): {d['value']}")
        return lines

    emit(args.output, data, text)
    return 0
