"""Run completion: the per-trigger completion token, the outlet scope of a rule, and the first-terminal-wins record.

**The completion token.** Every invocation carries ``completionToken``: the hex HMAC-SHA256 of the trigger
key under the stack's completion key (a secret only lakehook reads). A downstream run presents it as
``X-Lakehook-Completion-Token`` on ``POST /runs/{triggerKey}/complete``; it proves the caller received that
trigger's invocation, and nothing more: it completes that one trigger, never another (the key is in the MAC).
The message is prefixed with a context string so a token can never be confused with another HMAC made
under the same key.

**The outlet scope.** A token caller may report only outlets the rule declares (``Rule.outlets``: asset
keys or key prefixes, matched by whole path segments like a producer's prefixes). Management credentials
are not confined.

**First terminal status wins.** A completion is recorded once, with a digest of its status and outlets;
the same completion again is idempotent, a different one is a conflict.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lakehook.domain.assets import MAX_ASSET_KEY_LENGTH, validate_asset_key

COMPLETION_TOKEN_HEADER = "X-Lakehook-Completion-Token"
_TOKEN_CONTEXT = b"lakehook/run-completion/v1\n"
_TOKEN = re.compile(r"^[0-9a-f]{64}$")
MIN_KEY_BYTES = 32  # the completion key is a 256-bit secret at least


class CompletionKeyError(ValueError):
    """The completion key is missing or too short to sign tokens with."""


def _key_bytes(key: str | bytes) -> bytes:
    raw = key.encode() if isinstance(key, str) else key
    if len(raw) < MIN_KEY_BYTES:
        raise CompletionKeyError(f"the completion key must be at least {MIN_KEY_BYTES} bytes")
    return raw


def completion_token(key: str | bytes, trigger_key: str) -> str:
    """The token of one trigger: hex HMAC-SHA256(key, context + trigger key)."""
    return hmac.new(_key_bytes(key), _TOKEN_CONTEXT + trigger_key.encode(), hashlib.sha256).hexdigest()


def token_matches(key: str | bytes, trigger_key: str, token: str | None) -> bool:
    """Whether ``token`` is the token of ``trigger_key``, compared in constant time.

    A missing, empty or malformed token (not 64 lowercase hex digits) is simply not a match; the check on the
    shape keeps non-ASCII text away from ``compare_digest`` (which raises on it).
    """
    if not token or not _TOKEN.fullmatch(token.strip().lower()):
        return False
    expected = completion_token(key, trigger_key)
    return hmac.compare_digest(expected.encode(), token.strip().lower().encode())


def completion_path(trigger_key: str) -> str:
    """The path a run reports to (trigger keys are letters, digits, ``_``, ``-``, ``.``: no escaping)."""
    return f"/runs/{trigger_key}/complete"


# --- the outlet scope ------------------------------------------------------------------------------

_PREFIX = re.compile(r"^[a-z][a-z0-9+.-]*://[\x21-\x7e]*$")
MAX_RULE_OUTLETS = 100


def validate_outlet_entry(value: str) -> str:
    """An entry of ``Rule.outlets``: an asset key, or a key prefix ``<scheme>://…`` (no spaces, at most 512
    characters, no empty path segment). Raises ValueError naming what is wrong."""
    if not isinstance(value, str):
        raise ValueError("an outlet must be a string")
    try:
        return validate_asset_key(value)
    except ValueError:
        pass
    rest = value.split("://", 1)[-1]
    if len(value) > MAX_ASSET_KEY_LENGTH or not _PREFIX.fullmatch(value) or "//" in rest or rest.startswith("/"):
        raise ValueError(
            f"outlet {value!r} must be an asset key or a key prefix such as paimon://lake/dwd_db/ "
            f"(<scheme>://, printable characters, at most {MAX_ASSET_KEY_LENGTH})"
        )
    return value


def covers(prefix: str, asset_key: str) -> bool:
    """Whether ``prefix`` covers the key by whole path segments (``paimon://lake`` covers
    ``paimon://lake/db/t`` but not ``paimon://lakehouse/db/t``)."""
    if not asset_key.startswith(prefix):
        return False
    return len(asset_key) == len(prefix) or prefix.endswith("/") or asset_key[len(prefix)] == "/"


def outside_outlets(declared: Sequence[str], asset_keys: Iterable[str]) -> list[str]:
    """The asset keys (sorted, once each) that no declared outlet covers."""
    return sorted({k for k in asset_keys if not any(covers(p, k) for p in declared)})


# --- the record ------------------------------------------------------------------------------------


class RecordOutcome(StrEnum):
    RECORDED = "RECORDED"  # this completion is the first: it is now the run's reported end
    SAME = "SAME"  # the same completion was recorded before (a retry): idempotent
    CONFLICT = "CONFLICT"  # another completion was recorded first
    NO_RUN = "NO_RUN"  # no such claim, or a SKIPPED one (it had no run)


@dataclass(frozen=True)
class CompletionRecord:
    """What the run reported, as stored on its claim: status, outlets (one summary per outlet event),
    when, and the digest that tells the same completion from a different one."""

    run_status: str
    outlets: tuple[dict[str, Any], ...]
    completed_at: int
    digest: str

    @classmethod
    def of(cls, run_status: str, outlets: Sequence[dict[str, Any]], completed_at: int) -> CompletionRecord:
        """``outlets`` are the outlet events as canonical dicts (aliases already expanded). Their order does
        not matter: the digest is over the sorted canonical forms."""
        canonical = sorted(json.dumps(o, sort_keys=True, separators=(",", ":")) for o in outlets)
        body = json.dumps({"status": run_status, "outlets": canonical}, separators=(",", ":"))
        digest = hashlib.sha256(body.encode()).hexdigest()
        return cls(run_status, tuple(outlet_summary(o) for o in outlets), completed_at, digest)


_SUMMARY_FIELDS = ("eventType", "assetKey", "snapshotId", "watermark", "tag", "interval", "manifestUri")


def outlet_summary(outlet: dict[str, Any]) -> dict[str, Any]:
    """What a trigger shows of one outlet: its type, asset and version (no free payload: it stays small)."""
    return {k: outlet[k] for k in _SUMMARY_FIELDS if outlet.get(k) is not None}
