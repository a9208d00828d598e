"""The in-memory AccessStore: scoped tokens by id and role bindings by principal, as the DynamoDB adapter keeps
them (a put of a token id that exists is refused; a binding keeps its creation time)."""

from __future__ import annotations

import threading
from dataclasses import replace

from lakehook.adapters.memory.paging import page_of
from lakehook.domain.access import RoleBinding, ScopedToken
from lakehook.domain.errors import ConflictError
from lakehook.ports.access import AccessStore
from lakehook.ports.store import Page


class InMemoryAccessStore(AccessStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tokens: dict[str, ScopedToken] = {}
        self.bindings: dict[str, RoleBinding] = {}

    def put_token(self, token: ScopedToken) -> None:
        with self._lock:
            if token.token_id in self.tokens:
                raise ConflictError(f"token {token.token_id} exists")
            self.tokens[token.token_id] = token

    def get_token(self, token_id: str) -> ScopedToken | None:
        with self._lock:
            return self.tokens.get(token_id)

    def list_tokens(self, limit: int, next_token: str | None = None) -> Page[ScopedToken]:
        with self._lock:
            ordered = [self.tokens[k] for k in sorted(self.tokens)]
        return page_of(ordered, limit, next_token, "tokens")

    def revoke_token(self, token_id: str) -> bool:
        with self._lock:
            return self.tokens.pop(token_id, None) is not None

    def put_binding(self, binding: RoleBinding) -> bool:
        with self._lock:
            old = self.bindings.get(binding.principal)
            if old is not None:
                binding = replace(binding, created_at=old.created_at)
            self.bindings[binding.principal] = binding
            return old is None

    def get_binding(self, principal: str) -> RoleBinding | None:
        with self._lock:
            return self.bindings.get(principal)

    def list_bindings(self, limit: int, next_token: str | None = None) -> Page[RoleBinding]:
        with self._lock:
            ordered = [self.bindings[k] for k in sorted(self.bindings)]
        return page_of(ordered, limit, next_token, "bindings")

    def delete_binding(self, principal: str) -> bool:
        with self._lock:
            return self.bindings.pop(principal, None) is not None
