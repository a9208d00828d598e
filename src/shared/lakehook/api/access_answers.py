"""The answers of the access routes (``api.routes.access``): the caller's grant, tokens and role bindings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from lakehook.answers.base import Answer, Iso, NextToken
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.access import Grant, RoleBinding, Scope, ScopedToken


class ScopeAnswer(Answer):
    rules: list[str] = Field(description="rule-id prefixes; empty: every rule")
    assets: list[str] = Field(description="asset-key prefixes; empty: every asset")

    @classmethod
    def from_domain(cls, scope: Scope) -> ScopeAnswer:
        return cls(rules=list(scope.rules), assets=list(scope.assets))


class MeAnswer(Answer):
    role: str = Field(description="ADMIN, OPERATOR or READ_ONLY")
    scope: ScopeAnswer
    source: str = Field(description="where the grant comes from: the admin token, a token id, a binding")
    allowed_actions: list[str] = Field(
        alias="allowedActions",
        description="READ (GET routes), OPERATE (evaluate, replay, retry, complete, backtest, sensors), ADMINISTER",
    )

    @classmethod
    def from_domain(cls, grant: Grant) -> MeAnswer:
        return cls(
            role=grant.role.value,
            scope=ScopeAnswer.from_domain(grant.scope),
            source=grant.source,
            allowed_actions=grant.allowed_actions(),
        )


class TokenAnswer(Answer):
    token_id: str = Field(alias="tokenId")
    role: str
    scope: ScopeAnswer
    description: str | None = None
    created_at: Iso = Field(alias="createdAt")

    @classmethod
    def from_domain(cls, token: ScopedToken) -> TokenAnswer:
        return cls(
            token_id=token.token_id,
            role=token.role.value,
            scope=ScopeAnswer.from_domain(token.scope),
            description=token.description,
            created_at=ms_to_iso(token.created_at),
        )


class CreatedTokenAnswer(TokenAnswer):
    token: str = Field(description="the bearer token: shown only in this answer, only its hash is stored")

    @classmethod
    def created(cls, token: str, stored: ScopedToken) -> CreatedTokenAnswer:
        return cls(**dict(TokenAnswer.from_domain(stored)), token=token)


class TokenPage(Answer):
    items: list[TokenAnswer]
    next_token: str | None = NextToken


class RoleBindingAnswer(Answer):
    principal_arn: str = Field(alias="principalArn", description="an IAM user or role ARN, without its path")
    role: str
    scope: ScopeAnswer
    description: str | None = None
    created_at: Iso = Field(alias="createdAt")

    @classmethod
    def from_domain(cls, binding: RoleBinding) -> RoleBindingAnswer:
        return cls(
            principal_arn=binding.principal,
            role=binding.role.value,
            scope=ScopeAnswer.from_domain(binding.scope),
            description=binding.description,
            created_at=ms_to_iso(binding.created_at),
        )


class RoleBindingPage(Answer):
    items: list[RoleBindingAnswer]
    next_token: str | None = NextToken
