"""The answers of the access routes (``api.routes.access``): the caller's grant, tokens and role bindings."""

from __future__ import annotations

from pydantic import Field

from lakehook.api.answer_base import Answer, Iso, NextToken


class ScopeAnswer(Answer):
    rules: list[str] = Field(description="rule-id prefixes; empty: every rule")
    assets: list[str] = Field(description="asset-key prefixes; empty: every asset")


class MeAnswer(Answer):
    role: str = Field(description="ADMIN, OPERATOR or READ_ONLY")
    scope: ScopeAnswer
    source: str = Field(description="where the grant comes from: the admin token, a token id, a binding")
    allowed_actions: list[str] = Field(
        alias="allowedActions",
        description="READ (GET routes), OPERATE (evaluate, replay, retry, complete, backtest, sensors), ADMINISTER",
    )


class TokenAnswer(Answer):
    token_id: str = Field(alias="tokenId")
    role: str
    scope: ScopeAnswer
    description: str | None = None
    created_at: Iso = Field(alias="createdAt")


class CreatedTokenAnswer(TokenAnswer):
    token: str = Field(description="the bearer token: shown only in this answer, only its hash is stored")


class TokenPage(Answer):
    items: list[TokenAnswer]
    next_token: str | None = NextToken


class RoleBindingAnswer(Answer):
    principal_arn: str = Field(alias="principalArn", description="an IAM user or role ARN, without its path")
    role: str
    scope: ScopeAnswer
    description: str | None = None
    created_at: Iso = Field(alias="createdAt")


class RoleBindingPage(Answer):
    items: list[RoleBindingAnswer]
    next_token: str | None = NextToken
