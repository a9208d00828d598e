"""Register an asset (``PUT /assets``) and read its state (``GET /assets/state``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakehook.answers.assets import AssetAnswer, AssetStateAnswer, NoticesAnswer, PollStatusAnswer
from lakehook.answers.base import SourceHealthAnswer
from lakehook.domain.assets import SECRET_REFERENCE_PREFIXES, SECRETS_MANAGER, AssetRegistration
from lakehook.domain.errors import AuthorizationError, NotFoundError, ValidationError
from lakehook.domain.notice_state import PollCadence
from lakehook.domain.secret_names import ProducerSecrets, SecretNameError, SecretNames
from lakehook.domain.source_endpoints import check_source_properties
from lakehook.domain.source_health import source_health, with_notices
from lakehook.domain.time import now_ms
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports import AssetRegistry, AssetStore, SecretStore
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.notices import NoticeStore
from lakehook.usecases.source_health import SourceHealths


class RegisterAsset:
    """Check a registration fully (its model, the secrets its source names, the endpoints under the stack's
    outbound URL policy), then create or replace it; a dry run checks and writes nothing."""

    def __init__(
        self,
        registry: AssetRegistry,
        secrets: SecretStore,
        *,
        producer_secrets: ProducerSecrets,
        secret_names: SecretNames,
        url_policy: UrlPolicy,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._registry = registry
        self._secrets = secrets
        self._producer_secrets = producer_secrets
        self._names = secret_names
        self._policy = url_policy
        self._clock = clock

    def __call__(self, asset: AssetRegistration, *, dry_run: bool = False) -> bool:
        """True when the asset was created (or, in a dry run, would be checked only: False)."""
        self._refuse_producer_secrets(asset)
        self._check_source_secrets(asset)
        if asset.source is not None:  # the endpoints it names, under the stack's outbound URL policy (as targets)
            check_source_properties(asset.source.properties, self._policy, SECRET_REFERENCE_PREFIXES)
        if dry_run:  # the registration is fully checked by its model, the stack's settings and the URL policy
            return False
        return self._registry.put_asset(asset, self._clock())

    def _refuse_producer_secrets(self, asset: AssetRegistration) -> None:
        """A source may not name a producer's signing secret (however spelled, and as the stack's naming rule
        resolves a ``secretsmanager:`` reference): the poller would hand it to the catalog or storage endpoint
        the source names. A reference that names no valid secret is refused here too, not at poll time."""
        if asset.source is None:
            return
        namespace, names = self._producer_secrets, self._names
        for name, ref in asset.source.referenced_secrets().items():
            reached = [ref]
            value = asset.source.properties[name]
            if value.startswith(SECRETS_MANAGER):
                try:
                    reached.append(names.resolve(value.removeprefix(SECRETS_MANAGER).partition("#")[0]))
                except SecretNameError as exc:
                    raise ValidationError(
                        f"source.properties: property {name!r}: {exc}", field="source.properties"
                    ) from exc
            if any(namespace.holds(r) for r in reached):
                raise ValidationError(
                    f"source.properties: property {name!r}: {namespace.refusal(ref)}", field="source.properties"
                )

    def _check_source_secrets(self, asset: AssetRegistration) -> None:
        """Every ``secretsmanager:`` secret the source names must exist under the name the poller will look up
        (the stack's naming rule), as a rule's target secrets must: a 400 now, not a failing poll later. SSM
        references are the poller's to read (the API may not), and are not checked here."""
        if asset.source is None:
            return
        names = self._names
        for name, value in asset.source.properties.items():
            if not value.startswith(SECRETS_MANAGER):
                continue
            ref = value.removeprefix(SECRETS_MANAGER).partition("#")[0]
            where = f"source.properties: property {name!r}"
            try:
                found = self._secrets.secret_exists(names.resolve(ref))
            except (SecretNameError, AuthorizationError) as exc:
                raise ValidationError(f"{where}: {exc}", field="source.properties") from exc
            if not found:
                raise ValidationError(f"{where}: {names.missing(ref)}", field="source.properties")


class ListAssets:
    """``GET /assets``: a page of registered assets, each polled one with its source health (one batch of poll status
    reads per page, none for a page without a polled asset)."""

    def __init__(self, registry: AssetRegistry, poll_status: PollStatusStore) -> None:
        self._registry = registry
        self._poll_status = poll_status

    def __call__(self, limit: int, next_token: str | None = None) -> dict[str, Any]:
        page = self._registry.list_assets(limit, next_token)
        polled = [a.asset_key for a in page.items if a.source is not None]
        healths = SourceHealths(self._poll_status).read(polled) if polled else None
        items = []
        for asset in page.items:
            health = healths.of(asset.asset_key) if asset.source is not None and healths is not None else None
            items.append(AssetAnswer.from_domain(asset, health).dump())
        return {"items": items, "nextToken": page.next_token}


class ReadAssetState:
    """An asset's state as ``GET /assets/state`` answers it: the state (version 0 when nothing was recorded),
    whether the asset is registered, and the poll status of a registered table that is polled."""

    def __init__(
        self,
        states: AssetStore,
        registry: AssetRegistry,
        poll_status: PollStatusStore,
        *,
        notices: NoticeStore | None = None,
        cadence: PollCadence | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._states = states
        self._registry = registry
        self._poll_status = poll_status
        self._notices = notices
        self._cadence = cadence or PollCadence()
        self._clock = clock

    def __call__(self, key: str) -> dict[str, Any]:
        state = self._states.get_state(key)
        registration = self._registry.get_asset(key)
        if state is None and registration is None:
            raise NotFoundError(f"no state and no registration for {key!r}")
        body = AssetStateAnswer.of_state(state) if state else {"assetKey": key, "version": 0}
        body["registered"] = registration is not None
        if registration is not None and registration.source is not None:
            status = self._poll_status.get(key)
            body["pollStatus"] = PollStatusAnswer.from_domain(status) if status else None
            health = source_health(status)
            if self._notices is not None:  # how often it is polled, and whether its commit notices arrive
                notices, now = self._notices.notices(key), self._clock()
                interval = registration.poll_interval_seconds
                body["notices"] = NoticesAnswer.from_domain(notices, interval, now, self._cadence)
                health = with_notices(health, notices, now, self._cadence)  # notices that stopped: LAGGING
            if health is not None:
                body["sourceHealth"] = SourceHealthAnswer.from_domain(health)
        return AssetStateAnswer.model_validate(body).dump()
