"""SecretsManagerSecretStore: producer signing secrets and target secrets, by name."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lakehook.domain.errors import AuthorizationError, NotFoundError
from lakehook.ports import SecretStore


class SecretsManagerSecretStore(SecretStore):
    """Secrets in AWS Secrets Manager; the reference is the secret's name."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def put_secret(self, name: str, value: str) -> str:
        try:
            self._client.create_secret(Name=name, SecretString=value)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceExistsException":
                raise
            self._client.put_secret_value(SecretId=name, SecretString=value)
        return name

    def get_secret(self, ref: str) -> str:
        try:
            return str(self._client.get_secret_value(SecretId=ref)["SecretString"])
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                raise NotFoundError(f"secret {ref!r} does not exist") from exc
            raise

    def get_previous_secret(self, ref: str) -> str | None:
        """AWSPREVIOUS: put-secret-value (or a rotation) moves the former AWSCURRENT version there."""
        try:
            return str(self._client.get_secret_value(SecretId=ref, VersionStage="AWSPREVIOUS")["SecretString"])
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":  # never rotated
                return None
            raise

    def secret_exists(self, ref: str) -> bool:
        """DescribeSecret: the value is never read. A secret scheduled for deletion does not count."""
        try:
            described = self._client.describe_secret(SecretId=ref)
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code == "ResourceNotFoundException":
                return False
            if code in ("AccessDeniedException", "AccessDenied"):
                raise AuthorizationError(f"lakehook may not read secret {ref!r}") from exc
            raise
        return described.get("DeletedDate") is None
