"""Roles and scopes (RFC permissions): what a management caller may do, and on which rules and assets.

A caller with management credentials holds a ``Grant``: a role and a scope. The role says which routes it may
call (``ADMIN`` every route, ``OPERATOR`` the reads and the operational routes, ``READ_ONLY`` the reads), the
scope which rules (rule-id prefixes) and assets (asset-key prefixes) those routes may act on; an empty list of
prefixes is every rule (or asset). ``ROUTE_ACTIONS`` classifies the routes; a route it does not name is a read
when it is a GET and administration otherwise, so a route added later is never operational by accident.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from enum import StrEnum

from lakehook.domain.errors import AuthorizationError, ValidationError

MAX_PREFIXES = 50
MAX_PREFIX_LENGTH = 512


class Role(StrEnum):
    ADMIN = "ADMIN"  # every route on everything: what every management caller was before roles
    OPERATOR = "OPERATOR"  # reads, and operates runs (evaluate, replay, retry, complete, backtest, sensors)
    READ_ONLY = "READ_ONLY"  # GET routes only


class Action(StrEnum):
    READ = "READ"
    OPERATE = "OPERATE"
    ADMINISTER = "ADMINISTER"


ROLE_ACTIONS: dict[Role, frozenset[Action]] = {
    Role.ADMIN: frozenset(Action),
    Role.OPERATOR: frozenset({Action.READ, Action.OPERATE}),
    Role.READ_ONLY: frozenset({Action.READ}),
}

# (method, OpenAPI path) of the routes that operate runs, and of the GET routes that only an ADMIN may call.
OPERATIONAL_ROUTES: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", "/rules/{ruleId}/evaluate"),
        ("POST", "/rules/{ruleId}/backtest"),
        ("POST", "/triggers/{triggerKey}/retry"),
        ("POST", "/triggers/{triggerKey}/replay"),
        ("POST", "/runs/{triggerKey}/complete"),
        ("POST", "/sensors/evaluate"),
    }
)
ADMIN_READS: frozenset[tuple[str, str]] = frozenset({("GET", "/tokens"), ("GET", "/role-bindings")})
# Routes about producers and aliases: neither is a rule nor an asset, and a producer's prefixes or an alias's
# assets may reach outside an asset scope, so they need a scope of every asset.
UNSCOPED_ROUTES: frozenset[tuple[str, str]] = frozenset(
    {("GET", "/producers"), ("GET", "/producers/{producerId}"), ("GET", "/aliases"), ("GET", "/aliases/{name}")}
)


def action_of(method: str, path: str) -> Action:
    """What calling the route does (``path`` as OpenAPI writes it)."""
    route = (method.upper(), path)
    if route in OPERATIONAL_ROUTES:
        return Action.OPERATE
    if route in ADMIN_READS or route[0] != "GET":
        return Action.ADMINISTER
    return Action.READ


def _prefixes(values: object, name: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise ValidationError(f"{name} must be a list of prefixes (strings)", field=name)
    if len(values) > MAX_PREFIXES:
        raise ValidationError(f"{name} has {len(values)} prefixes; at most {MAX_PREFIXES}", field=name)
    for value in values:
        if not value or len(value) > MAX_PREFIX_LENGTH or any(c.isspace() for c in value):
            raise ValidationError(
                f"{name}: {value!r} is not a prefix (1 to {MAX_PREFIX_LENGTH} characters, no spaces)", field=name
            )
    return tuple(sorted(set(values)))


@dataclass(frozen=True)
class Scope:
    """Rule-id and asset-key prefixes; an empty tuple is every rule (or asset)."""

    rules: tuple[str, ...] = ()
    assets: tuple[str, ...] = ()

    @classmethod
    def of(cls, rules: object = None, assets: object = None) -> Scope:
        """A scope from the request's lists (checked: a 400 names the list at fault)."""
        return cls(_prefixes(rules, "rules"), _prefixes(assets, "assets"))

    @property
    def everything(self) -> bool:
        return not self.rules and not self.assets

    def allows_rule(self, rule_id: str) -> bool:
        return not self.rules or rule_id.startswith(self.rules)

    def allows_asset(self, asset_key: str) -> bool:
        return not self.assets or asset_key.startswith(self.assets)

    def describe(self) -> str:
        def side(prefixes: tuple[str, ...]) -> str:
            return ", ".join(prefixes) if prefixes else "all"

        return f"rules [{side(self.rules)}], assets [{side(self.assets)}]"


@dataclass(frozen=True)
class Grant:
    """What one caller may do: its role on its scope, and where the grant came from (for messages and GET /me)."""

    role: Role
    scope: Scope = field(default_factory=Scope)
    source: str = "admin token"

    def may(self, action: Action) -> bool:
        return action in ROLE_ACTIONS[self.role]

    def _refuse(self, asked: str) -> AuthorizationError:
        return AuthorizationError(
            f"role {self.role} (scope: {self.scope.describe()}, from {self.source}) may not {asked}"
        )

    def check_route(self, method: str, path: str) -> None:
        """A 403 naming the role, the scope and the route when the role may not call it."""
        if not self.may(action_of(method, path)):
            raise self._refuse(f"{method.upper()} {path}")
        if (method.upper(), path) in UNSCOPED_ROUTES and self.scope.assets:
            raise self._refuse(f"{method.upper()} {path} (producers and aliases need a scope of every asset)")

    def check_rule(self, rule_id: str, asked: str) -> None:
        if not self.scope.allows_rule(rule_id):
            raise self._refuse(f"{asked} of rule {rule_id!r}, outside its rule prefixes")

    def check_asset(self, asset_key: str, asked: str) -> None:
        if not self.scope.allows_asset(asset_key):
            raise self._refuse(f"{asked} of asset {asset_key!r}, outside its asset prefixes")

    def check_every_asset(self, asked: str) -> None:
        """Something that may name any asset (an ad-hoc group, a rule sent in a body) needs every asset in scope."""
        if self.scope.assets:
            raise self._refuse(f"{asked}: it may name any asset, and the scope has asset prefixes")

    def allowed_actions(self) -> list[str]:
        return [a.value for a in Action if self.may(a)]


ADMIN = Grant(Role.ADMIN)


def role_of(value: object) -> Role:
    try:
        return Role(str(value))
    except ValueError as exc:
        raise ValidationError(f"role {value!r} is not one of {', '.join(r.value for r in Role)}", field="role") from exc


def grant_of(role: object, rules: object = None, assets: object = None, source: str = "") -> Grant:
    """A grant as a token or a binding is written: an ADMIN has no scope (a 400 if one is given)."""
    parsed = role_of(role)
    scope = Scope.of(rules, assets)
    if parsed is Role.ADMIN and not scope.everything:
        raise ValidationError("an ADMIN has every rule and asset: give rules and assets only to OPERATOR or READ_ONLY")
    return Grant(parsed, scope, source)


# --- scoped tokens (a local stack's bearer tokens) -------------------------------------------------------

TOKEN_PREFIX = "lht_"
TOKEN_ID_PATTERN = r"^[a-f0-9]{16}$"
_TOKEN = re.compile(r"^lht_([a-f0-9]{16})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True)
class ScopedToken:
    """A bearer token's stored form: its id, the SHA-256 of the whole token (never the token) and its grant."""

    token_id: str
    token_hash: str
    role: Role
    scope: Scope
    description: str | None
    created_at: int

    def grant(self) -> Grant:
        return Grant(self.role, self.scope, f"token {self.token_id}")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(grant: Grant, description: str | None, now_ms: int) -> tuple[str, ScopedToken]:
    """A fresh token (shown once) and what is stored of it."""
    token_id = secrets.token_hex(8)
    token = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    return token, ScopedToken(token_id, token_hash(token), grant.role, grant.scope, description, now_ms)


def token_id_of(token: str) -> str | None:
    """The id a presented bearer token names, or None when it is not shaped as a scoped token."""
    match = _TOKEN.match(token)
    return match.group(1) if match else None


def token_matches(stored: ScopedToken, token: str) -> bool:
    return hmac.compare_digest(stored.token_hash, token_hash(token))


# --- role bindings (a deployed stack's IAM identities) ---------------------------------------------------

_IAM_ARN = re.compile(r"^arn:(aws[a-z-]*):iam::(\d{12}):(user|role)/(?:[\w+=,.@/-]*/)?([\w+=,.@-]{1,128})$")
_ASSUMED = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([\w+=,.@-]{1,128})/[\w+=,.@-]+$")


def binding_principal(arn: str) -> str:
    """The key a binding is stored under: an IAM user's or role's ARN without its path (an assumed-role session
    names its role without the path); a 400 for anything else."""
    match = _IAM_ARN.match(arn)
    if match is None:
        raise ValidationError(
            f"principalArn {arn!r} is not an IAM user or role ARN (arn:aws:iam::<account>:user/<name> or "
            "arn:aws:iam::<account>:role/<name>)",
            field="principalArn",
        )
    partition, account, kind, name = match.groups()
    return f"arn:{partition}:iam::{account}:{kind}/{name}"


def caller_principal(user_arn: str) -> str | None:
    """The binding key of the identity API Gateway verified: an assumed-role session is matched by its role."""
    assumed = _ASSUMED.match(user_arn)
    if assumed is not None:
        partition, account, role = assumed.groups()
        return f"arn:{partition}:iam::{account}:role/{role}"
    try:
        return binding_principal(user_arn)
    except ValidationError:
        return None


@dataclass(frozen=True)
class RoleBinding:
    """An IAM principal's role and scope on a deployed stack."""

    principal: str
    role: Role
    scope: Scope
    description: str | None
    created_at: int

    def grant(self) -> Grant:
        return Grant(self.role, self.scope, f"binding {self.principal}")


class UnboundIdentity(StrEnum):
    """What an IAM identity with no binding may do (the stack's ``UnboundIamIdentity`` parameter)."""

    AUTO = "AUTO"  # ADMIN while the table holds no role binding (as before roles), refused once one exists
    ADMIN = "ADMIN"
    READ_ONLY = "READ_ONLY"
    DENY = "DENY"


def unbound_grant(policy: UnboundIdentity, any_binding: bool) -> Grant | None:
    """The grant of an identity with no binding, or None when it is refused."""
    source = f"no binding (UnboundIamIdentity {policy})"
    if policy is UnboundIdentity.ADMIN or (policy is UnboundIdentity.AUTO and not any_binding):
        return Grant(Role.ADMIN, Scope(), source)
    if policy is UnboundIdentity.READ_ONLY:
        return Grant(Role.READ_ONLY, Scope(), source)
    return None
