"""One member's verdict: the version it would pin, or why it cannot (what explain shows per member)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.status import Status
from lakehook.domain.triggers import PinnedInput


@dataclass(frozen=True)
class MemberEvaluation:
    """One member's verdict: the version it would pin, or why it cannot."""

    asset_key: str
    status: Status
    pin: PinnedInput | None
    current: dict[str, Any] = field(default_factory=dict)
    required: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    alias: str | None = None  # the alias the rule named the member by (asset_key is its asset)
