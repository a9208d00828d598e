"""SecretsManagerSecretStore: producer signing secrets (created and owned by lakehook) and target secrets, by name."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lakehook.domain.errors import AuthorizationError, ConflictError, NotFoundError
from lakehook.ports import SecretStore

OWNER_TAG = "lakehook:owner"  # on the secrets lakehook creates for itself: the producer a signing secret is for


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

    def put_owned_secret(self, name: str, value: str, owner: str) -> str:
        """CreateSecret with an ``lakehook:owner`` tag; an existing secret is overwritten only when it carries
        the same tag (a retry after a failure between the secret and the producer item), else ConflictError."""
        try:
            self._client.create_secret(Name=name, SecretString=value, Tags=[{"Key": OWNER_TAG, "Value": owner}])
            return name
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code == "InvalidRequestException" and "deletion" in str(exc):
                raise ConflictError(
                    f"secret {name!r} is scheduled for deletion; restore it or delete it for good first"
                ) from exc
            if code != "ResourceExistsException":
                raise
        if not self.may_own_secret(name, owner):
            raise ConflictError(f"secret {name!r} already exists and lakehook did not create it for {owner}")
        self._client.put_secret_value(SecretId=name, SecretString=value)
        return name

    def may_own_secret(self, name: str, owner: str) -> bool:
        """DescribeSecret (the value is never read): absent, or tagged ``lakehook:owner = owner``."""
        try:
            described = self._client.describe_secret(SecretId=name)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                return True
            raise
        return {t["Key"]: t["Value"] for t in described.get("Tags", [])}.get(OWNER_TAG) == owner

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
