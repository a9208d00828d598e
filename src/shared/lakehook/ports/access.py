"""Port of access: the scoped tokens of a local stack and the role bindings of a deployed one."""

from __future__ import annotations

from abc import ABC, abstractmethod

from lakehook.domain.access import RoleBinding, ScopedToken
from lakehook.ports.store import Page


class AccessStore(ABC):
    """Scoped tokens by id (only their hash is kept) and role bindings by principal."""

    @abstractmethod
    def put_token(self, token: ScopedToken) -> None:
        """Store a new token (its id is fresh)."""

    @abstractmethod
    def get_token(self, token_id: str) -> ScopedToken | None:
        """The token with this id, or None (revoked or never made)."""

    @abstractmethod
    def list_tokens(self, limit: int, next_token: str | None = None) -> Page[ScopedToken]:
        """Tokens in id order."""

    @abstractmethod
    def revoke_token(self, token_id: str) -> bool:
        """Forget the token; True if it existed."""

    @abstractmethod
    def put_binding(self, binding: RoleBinding) -> bool:
        """Create or replace the principal's binding (keeping its creation time). True if it was created."""

    @abstractmethod
    def get_binding(self, principal: str) -> RoleBinding | None:
        """The principal's binding, or None."""

    @abstractmethod
    def list_bindings(self, limit: int, next_token: str | None = None) -> Page[RoleBinding]:
        """Bindings in principal order."""

    @abstractmethod
    def delete_binding(self, principal: str) -> bool:
        """Forget the principal's binding; True if it existed."""
