"""What target plug-ins are built from: secrets, AWS clients, an HTTP session, and the local-mode switch."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from lakehook.adapters.targets.egress import Resolver, guard_session, system_resolver
from lakehook.domain.errors import NotFoundError
from lakehook.domain.secret_names import AS_GIVEN, SecretNameError, SecretNames
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.store import SecretStore


class CachedSecrets:
    """Secrets read through the SecretStore port by the stack's naming rule (``names``, as ``PUT /rules``
    checked them), kept briefly so a busy dispatcher does not re-read them per run; a rotation applies
    within ``ttl_seconds``."""

    def __init__(
        self,
        secrets: SecretStore,
        ttl_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        names: SecretNames = AS_GIVEN,
    ):
        self._secrets = secrets
        self._names = names
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, ref: str) -> str:
        """The secret's value. Raises NotFoundError naming the name looked up when there is no such secret."""
        now = self._clock()
        with self._lock:
            hit = self._cache.get(ref)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        try:
            value = self._secrets.get_secret(self._names.resolve(ref))
        except SecretNameError as exc:
            raise NotFoundError(str(exc)) from exc
        except NotFoundError as exc:
            raise NotFoundError(f"secret {self._names.spelled(ref)} does not exist") from exc
        with self._lock:
            self._cache[ref] = (now, value)
        return value

    def forget(self, ref: str) -> None:
        """Drop a cached value (after the target refused it, the secret may have been rotated)."""
        with self._lock:
            self._cache.pop(ref, None)


@dataclass
class TargetDeps:
    """Everything a plug-in's ``build`` may use.

    ``aws`` builds a boto3 client by service name. ``allow_insecure_loopback`` (local mode only) lets
    HTTP targets use plain http to a loopback host; otherwise only https is dialled. ``url_policy`` (by
    default the local-mode switch alone) is checked against the URL and, through the session's guard,
    against every address its host resolves to (``resolver``) before a connection is made.
    ``secret_names`` turns a target's ``secretRef`` / ``credentialsRef`` / ``tokenRef`` into the secret's name.
    """

    secrets: SecretStore
    aws: Callable[[str], Any]
    allow_insecure_loopback: bool = False
    session: requests.Session = field(default_factory=requests.Session)
    clock: Callable[[], float] = time.time
    url_policy: UrlPolicy | None = None
    resolver: Resolver = system_resolver
    secret_names: SecretNames = AS_GIVEN

    def __post_init__(self) -> None:
        self.cached_secrets = CachedSecrets(self.secrets, names=self.secret_names)
        if self.url_policy is None:
            self.url_policy = UrlPolicy(local_mode=self.allow_insecure_loopback)
        self.policy: UrlPolicy = self.url_policy
        guard_session(self.session, self.policy, self.resolver)
