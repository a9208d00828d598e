"""Who may call which route: one authenticator per route, run by the resolver before any body is parsed.

``ROUTE_AUTHENTICATORS`` maps ``(method, OpenAPI path)`` to the callable that establishes the caller;
a route not listed needs management credentials. The resolver calls it before it looks at the body, so
an unauthenticated request is a 401 whatever it sends, and keeps the ``Caller`` for the route to read
with ``current_principal``.

On AWS, management credentials are an IAM identity, and API Gateway passes it to the function
(``requestContext.identity.userArn`` and ``caller``) only for a method with ``AWS_IAM`` authorization. The
routes listed here also take credentials of their own (a producer's signature, a run's completion token, an
API key), so their method has no authorizer and never sees an identity; each has an IAM variant under
``IAM_PREFIX`` (``POST /iam/runs/{triggerKey}/complete``) whose method has ``AWS_IAM``, served by the same
route (the resolver strips the prefix).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from lakehook.api.http import raw_body
from lakehook.container import current
from lakehook.domain.errors import AuthenticationError, AuthorizationError, ValidationError
from lakehook.domain.signing import PRODUCER_HEADER, SIGNATURE_HEADER

if TYPE_CHECKING:
    from lakehook.domain.access import Grant
    from lakehook.domain.producers import Producer

# Not Powertools' ``router.context``: the route modules' routers are shared by every app built in a
# process (the local runtime builds two), and that context belongs to whichever app included them last.
_principal: ContextVar[Principal | None] = ContextVar("lakehook_principal", default=None)


class PrincipalKind(StrEnum):
    ADMIN = "ADMIN"  # management credentials (a bearer token locally, an IAM identity on AWS), with their grant
    PRODUCER = "PRODUCER"  # a registered producer: an HMAC-signed request (or its opted-in lineage apiKey)
    RUN = "RUN"  # a downstream run, by the completion token of its trigger's invocation
    PUBLIC = "PUBLIC"  # a public route: nobody was authenticated


@dataclass(frozen=True)
class Principal:
    """Who sent the request, as its route's authenticator established it."""

    kind: PrincipalKind
    producer: Producer | None = None
    grant: Grant | None = None  # management credentials' role and scope (domain.access)


Authenticator = Callable[[APIGatewayProxyEvent, dict[str, str]], Principal]


def management(event: APIGatewayProxyEvent) -> Principal | None:
    """Management credentials and their grant (``domain.access``): locally the admin token or a scoped token, on
    AWS the IAM identity API Gateway verified, by its role binding. None when the request carries none; an IAM
    identity that has no binding on a stack that refuses such identities is a 403 naming it."""
    authorize = current().authorize
    if current().settings.admin_token:
        header = event.get_header_value("Authorization", default_value="", case_sensitive=False) or ""
        scheme, _, value = header.partition(" ")
        grant = authorize.bearer_grant(value.strip()) if scheme.lower() == "bearer" else None
        return None if grant is None else Principal(PrincipalKind.ADMIN, grant=grant)
    identity = event.request_context.identity
    if not (identity.user_arn or identity.caller):
        return None
    grant = authorize.identity_grant(identity.user_arn)
    if grant is None:
        raise AuthorizationError(
            f"IAM identity {identity.user_arn or identity.caller} has no role binding, and this stack's "
            f"UnboundIamIdentity ({current().settings.unbound_iam_identity}) refuses identities without one: "
            "an ADMIN binds it with PUT /role-bindings"
        )
    return Principal(PrincipalKind.ADMIN, grant=grant)


def admin(event: APIGatewayProxyEvent, params: dict[str, str]) -> Principal:
    """Management credentials, or AuthenticationError: the one check of every management route (a route not in
    ``ROUTE_AUTHENTICATORS`` gets it; no route checks again). What the grant allows is checked next
    (``api.scopes``)."""
    caller = management(event)
    if caller is None:
        if current().settings.admin_token:
            # a scoped token goes where the admin token goes (docs/local.md#roles); the message is the one clients know
            raise AuthenticationError("management routes need 'Authorization: Bearer <admin token>'")
        raise AuthenticationError("management routes need an IAM-signed (SigV4) request")
    return caller


def producer_or_admin(event: APIGatewayProxyEvent, params: dict[str, str]) -> Principal:
    """A producer's HMAC signature over the raw body; management credentials without producer headers."""
    producer_id = event.get_header_value(PRODUCER_HEADER, case_sensitive=False)
    signature = event.get_header_value(SIGNATURE_HEADER, case_sensitive=False)
    caller = management(event) if producer_id is None and signature is None else None
    if caller is not None:
        return caller  # management credentials (an ADMIN's: the route is administration) may push for any asset
    try:
        body = raw_body(event)
    except ValidationError as exc:  # bytes we cannot recover cannot carry a valid signature
        raise AuthenticationError("the signature does not verify for this producer") from exc
    producer = current().push_authenticator.authenticate(producer_id, signature, body)
    return Principal(PrincipalKind.PRODUCER, producer)


def watcher_or_admin(event: APIGatewayProxyEvent, params: dict[str, str]) -> Principal:
    """A producer's signature when the request carries producer headers (a custom watcher's: the route confines it to
    the producer's ``watermarkNamespaces``), else management credentials, refused as every management route is."""
    if event.get_header_value(PRODUCER_HEADER, case_sensitive=False) is None and (
        event.get_header_value(SIGNATURE_HEADER, case_sensitive=False) is None
    ):
        return admin(event, params)
    return producer_or_admin(event, params)


def signed_or_api_key_or_admin(event: APIGatewayProxyEvent, params: dict[str, str]) -> Principal:
    """A producer's HMAC signature (as ``producer_or_admin``; any producer), management credentials, or the API
    key of a producer that takes one (``lineageBearer``), as OpenLineage's ``api_key`` auth sends it
    (``Authorization: Bearer <producerId>:<secret>``)."""
    if event.get_header_value(PRODUCER_HEADER, case_sensitive=False) is not None or (
        event.get_header_value(SIGNATURE_HEADER, case_sensitive=False) is not None
    ):
        return producer_or_admin(event, params)
    caller = management(event)
    if caller is not None:
        return caller
    header = event.get_header_value("Authorization", default_value="", case_sensitive=False) or ""
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer":
        raise AuthenticationError(
            f"expected {PRODUCER_HEADER} and {SIGNATURE_HEADER} (a signed request), or "
            "'Authorization: Bearer <producerId>:<secret>' (the apiKey of a producer with lineageBearer: true)"
        )
    producer = current().push_authenticator.authenticate_api_key(key.strip())
    return Principal(PrincipalKind.PRODUCER, producer)


def run_or_admin(event: APIGatewayProxyEvent, params: dict[str, str]) -> Principal:
    """Management credentials, or the completion token of the trigger in the path (``X-Lakehook-Completion-Token``:
    the ``completionToken`` that trigger's invocation carried); one 401 text for a missing and a wrong token."""
    from lakehook.domain.completion import COMPLETION_TOKEN_HEADER  # the completion path only

    caller = management(event)
    if caller is not None:
        return caller  # management credentials complete any run in their scope (an ADMIN's: any outlet)
    token = event.get_header_value(COMPLETION_TOKEN_HEADER, case_sensitive=False)
    if token and current().completion_tokens.verify(params.get("triggerKey", ""), token):
        return Principal(PrincipalKind.RUN)
    raise AuthenticationError(
        f"run completion needs management credentials or the {COMPLETION_TOKEN_HEADER} header with the "
        "completionToken this trigger's invocation carried"
    )


def public(event: APIGatewayProxyEvent, params: dict[str, str]) -> Principal:
    return Principal(PrincipalKind.PUBLIC)


ROUTE_AUTHENTICATORS: dict[tuple[str, str], Authenticator] = {
    ("GET", "/openapi.json"): public,
    ("POST", "/asset-events"): producer_or_admin,
    ("POST", "/api/v1/lineage"): signed_or_api_key_or_admin,
    ("POST", "/runs/{triggerKey}/complete"): run_or_admin,
    ("GET", "/watermarks"): watcher_or_admin,  # a watcher's scoped credential: its producer's watermarkNamespaces
    ("PUT", "/watermarks"): watcher_or_admin,
}


def iam_variant_routes() -> list[tuple[str, str]]:
    """(method, OpenAPI path) of the routes whose method takes no authorizer on AWS, so each has an IAM variant:
    the same route under ``IAM_PREFIX``, whose method has AWS_IAM authorization (template.yaml)."""
    return [route for route, authenticator in ROUTE_AUTHENTICATORS.items() if authenticator is not public]


def authenticator_for(method: str, path: str) -> Authenticator:
    """The route's authenticator (``path`` as OpenAPI writes it: ``/runs/{triggerKey}/complete``)."""
    return ROUTE_AUTHENTICATORS.get((method.upper(), path), admin)


def admit(caller: Principal | None) -> None:
    """Record who sent the request being resolved (the resolver calls it before routing; None clears)."""
    _principal.set(caller)


def current_principal() -> Principal:
    """The caller the resolver authenticated for the request being resolved."""
    caller = _principal.get()
    if caller is None:  # only reachable if a route runs without the resolver's admission
        raise AuthenticationError("request was not authenticated")
    return caller
