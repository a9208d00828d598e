"""Roles: GET /me (the caller's role, scope and allowed actions); POST/GET /tokens and DELETE /tokens/{tokenId}
(a local stack's scoped bearer tokens); PUT/GET/DELETE /role-bindings (a deployed stack's IAM identities)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.access_answers import (
    CreatedTokenAnswer,
    MeAnswer,
    RoleBindingAnswer,
    RoleBindingPage,
    TokenAnswer,
    TokenPage,
)
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.api.scopes import caller_grant
from lakehook.container import current
from lakehook.domain.access import TOKEN_ID_PATTERN

router = APIGatewayRouter()

Limit = Annotated[int, Query(ge=1, le=500)]
NextToken = Annotated[str | None, Query(alias="nextToken", max_length=2048)]
TokenId = Annotated[str, Path(pattern=TOKEN_ID_PATTERN, description="16 hex digits, as POST /tokens answered it")]
PrincipalArn = Annotated[str, Query(alias="principalArn", min_length=1, max_length=2048)]


@router.get(
    "/me",
    summary="The caller's role, scope and allowed actions",
    description="What the credentials of this request may do: the console shows only the actions it may take.",
    tags=["access"],
    security=MANAGEMENT,
    responses=answers(ok(MeAnswer)),
)
def me() -> Response[str]:
    return json_response(MeAnswer.from_domain(current().authorize.describe(caller_grant())).dump())


@router.post(
    "/tokens",
    summary="Create a scoped bearer token (a local stack's credentials): answered once, only its hash is kept",
    description='Body: {"role": "OPERATOR" | "READ_ONLY" | "ADMIN", "rules": [rule-id prefixes], "assets": '
    '[asset-key prefixes], "description": "..."}; an empty or absent list is every rule (or asset); an ADMIN takes '
    "no scope. The token is in this answer only.",
    tags=["access"],
    security=MANAGEMENT,
    responses=answers(ok(CreatedTokenAnswer, "created", 201), WITH_BODY),
)
def create_token() -> Response[str]:
    token, stored = current().manage_access.create_token(json_body(router.current_event))
    return json_response(CreatedTokenAnswer.created(token, stored).dump(), 201)


@router.get(
    "/tokens", summary="List scoped tokens", tags=["access"], security=MANAGEMENT, responses=answers(ok(TokenPage))
)
def list_tokens(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().manage_access.list_tokens(limit, next_token)
    items = [TokenAnswer.from_domain(t) for t in page.items]
    return json_response(TokenPage(items=items, next_token=page.next_token).dump())


@router.delete(
    "/tokens/<tokenId>",
    summary="Revoke a scoped token (at once: every request reads it)",
    tags=["access"],
    security=MANAGEMENT,
    responses=answers(ok(None, "revoked", 204), ALWAYS, 404),
)
def revoke_token(tokenId: TokenId) -> Response[str]:
    current().manage_access.revoke_token(tokenId)
    return Response(status_code=204, body="")


@router.put(
    "/role-bindings",
    summary="Bind an IAM user or role to a role and scope (a deployed stack's credentials)",
    description='Body: {"principalArn": "arn:aws:iam::<account>:role/<name>", "role": ..., "rules": [...], '
    '"assets": [...], "description": "..."}. An assumed-role session is matched by its role. While no ADMIN binding '
    "exists, a binding of another role is a 409: bind an ADMIN first, so the UnboundIamIdentity AUTO default "
    "locks nobody out.",
    tags=["access"],
    security=MANAGEMENT,
    responses=answers({200: ("replaced", RoleBindingAnswer), 201: ("created", RoleBindingAnswer)}, WITH_BODY, 409),
)
def put_binding() -> Response[str]:
    binding, created = current().manage_access.put_binding(json_body(router.current_event))
    return json_response(RoleBindingAnswer.from_domain(binding).dump(), 201 if created else 200)


@router.get(
    "/role-bindings",
    summary="List role bindings",
    tags=["access"],
    security=MANAGEMENT,
    responses=answers(ok(RoleBindingPage)),
)
def list_bindings(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().manage_access.list_bindings(limit, next_token)
    items = [RoleBindingAnswer.from_domain(b) for b in page.items]
    return json_response(RoleBindingPage(items=items, next_token=page.next_token).dump())


@router.delete(
    "/role-bindings",
    summary="Remove an IAM principal's role binding",
    tags=["access"],
    security=MANAGEMENT,
    responses=answers(ok(None, "removed", 204), ALWAYS, 404),
)
def delete_binding(principal_arn: PrincipalArn) -> Response[str]:
    current().manage_access.delete_binding(principal_arn)
    return Response(status_code=204, body="")
