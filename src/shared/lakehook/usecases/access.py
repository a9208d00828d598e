"""Who may do what: scoped tokens and role bindings, written by an ADMIN, and the grant of each caller.

``Authorize`` finds a management caller's grant: the admin token is ADMIN; a scoped token (``lht_<id>_<secret>``)
is its stored role and scope, found by id and compared by hash; an IAM identity is its binding's (an assumed-role
session matched by its role), or what the stack's ``UnboundIamIdentity`` says for one without a binding.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from lakehook.domain.access import (
    ADMIN,
    Grant,
    Role,
    RoleBinding,
    ScopedToken,
    UnboundIdentity,
    binding_principal,
    caller_principal,
    grant_of,
    new_token,
    token_id_of,
    token_matches,
    unbound_grant,
)
from lakehook.domain.errors import ConflictError, NotFoundError, ValidationError
from lakehook.domain.time import now_ms
from lakehook.ports.access import AccessStore
from lakehook.ports.store import Page

_TOKEN_FIELDS = {"role", "rules", "assets", "description"}
_BINDING_FIELDS = {"principalArn", "role", "rules", "assets", "description"}
MAX_DESCRIPTION = 256


def _object(body: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationError("request body must be a JSON object", field="body")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ValidationError(f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}", field=unknown[0])
    if "role" not in body:
        raise ValidationError("role is required (ADMIN, OPERATOR or READ_ONLY)", field="role")
    description = body.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > MAX_DESCRIPTION):
        raise ValidationError(f"description must be text of at most {MAX_DESCRIPTION} characters", field="description")
    return body


class ManageAccess:
    """An ADMIN's writes and reads of tokens and role bindings."""

    def __init__(self, store: AccessStore, clock: Callable[[], int] = now_ms) -> None:
        self._store = store
        self._clock = clock

    def create_token(self, body: Any) -> tuple[str, ScopedToken]:
        """The token (shown once) and what is stored of it: its hash, role and scope."""
        data = _object(body, _TOKEN_FIELDS)
        grant = grant_of(data["role"], data.get("rules"), data.get("assets"))
        token, stored = new_token(grant, data.get("description"), self._clock())
        self._store.put_token(stored)
        return token, stored

    def list_tokens(self, limit: int, next_token: str | None) -> Page[ScopedToken]:
        return self._store.list_tokens(limit, next_token)

    def revoke_token(self, token_id: str) -> None:
        if not self._store.revoke_token(token_id):
            raise NotFoundError(f"token {token_id} not found")

    def put_binding(self, body: Any) -> tuple[RoleBinding, bool]:
        data = _object(body, _BINDING_FIELDS)
        if not isinstance(data.get("principalArn"), str):
            raise ValidationError("principalArn is required: an IAM user or role ARN", field="principalArn")
        principal = binding_principal(data["principalArn"])
        grant = grant_of(data["role"], data.get("rules"), data.get("assets"))
        if grant.role is not Role.ADMIN and not self._any_admin_binding():
            raise ConflictError(
                "bind an ADMIN first (your own role or user): with UnboundIamIdentity AUTO, the first binding ends "
                "the ADMIN of every unbound identity, yours included"
            )
        if grant.role is not Role.ADMIN:
            self._keep_an_admin(principal, f"binding {principal} as {grant.role}")
        binding = RoleBinding(principal, grant.role, grant.scope, data.get("description"), self._clock())
        return binding, self._store.put_binding(binding)

    def _any_admin_binding(self, besides: str | None = None) -> bool:
        """Whether an ADMIN binding exists (``besides``: other than this principal's)."""
        token: str | None = None
        while True:
            page = self._store.list_bindings(100, token)
            if any(b.role is Role.ADMIN and b.principal != besides for b in page.items):
                return True
            if page.next_token is None:
                return False
            token = page.next_token

    def _keep_an_admin(self, principal: str, asked: str) -> None:
        """A 409 when the principal holds the last ADMIN binding and other bindings remain: with
        UnboundIamIdentity AUTO every unbound identity is refused while any binding exists, so nobody could
        administer the stack any more (deleting every other binding first, or binding another ADMIN, is fine)."""
        current_binding = self._store.get_binding(principal)
        if current_binding is None or current_binding.role is not Role.ADMIN or self._any_admin_binding(principal):
            return
        others = [b for b in self._store.list_bindings(2).items if b.principal != principal]
        if others:
            raise ConflictError(
                f"{asked} would leave role bindings but no ADMIN binding, so nobody could administer the stack "
                f"(unbound identities are refused once a binding exists): bind another ADMIN first, or delete the "
                f"other bindings first"
            )

    def list_bindings(self, limit: int, next_token: str | None) -> Page[RoleBinding]:
        return self._store.list_bindings(limit, next_token)

    def delete_binding(self, principal_arn: str) -> None:
        principal = binding_principal(principal_arn)
        self._keep_an_admin(principal, f"deleting the binding of {principal}")
        if not self._store.delete_binding(principal):
            raise NotFoundError(f"no role binding for {principal_arn}")


class Authorize:
    """The grant of a management caller, or None when its credentials grant nothing."""

    def __init__(self, store: AccessStore, admin_token: str | None, unbound: UnboundIdentity) -> None:
        self._store = store
        self._admin_token = admin_token
        self._unbound = unbound

    def bearer_grant(self, value: str) -> Grant | None:
        """A local stack's bearer token: the admin token, or a scoped token not revoked."""
        if self._admin_token and hmac.compare_digest(value.encode(), self._admin_token.encode()):
            return ADMIN
        token_id = token_id_of(value)
        stored = None if token_id is None else self._store.get_token(token_id)
        return stored.grant() if stored is not None and token_matches(stored, value) else None

    def identity_grant(self, user_arn: str | None) -> Grant | None:
        """An IAM identity API Gateway verified: its binding's grant, or the unbound policy's."""
        principal = caller_principal(user_arn) if user_arn else None
        binding = None if principal is None else self._store.get_binding(principal)
        if binding is not None:
            return binding.grant()
        any_binding = self._unbound is UnboundIdentity.AUTO and bool(self._store.list_bindings(1).items)
        return unbound_grant(self._unbound, any_binding)

    def describe(self, grant: Grant) -> Grant:
        """``GET /me``: the caller's grant (its role, scope, where it comes from and the actions it allows), which
        the route answers as ``MeAnswer``."""
        return grant
