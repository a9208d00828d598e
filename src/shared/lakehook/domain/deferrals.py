"""A group or an asset to evaluate again later: what the plan asks for (a cooldown or quiet period ends, a gap's
settle time passes) and what the deferral store keeps (:class:`lakehook.ports.rules.DeferralStore`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deferral:
    """A group to re-evaluate at ``due_at`` (a cooldown or quiet period ends then)."""

    rule_id: str
    group_id: str
    due_at: int


@dataclass(frozen=True)
class AssetRecheck:
    """Every rule of an asset to re-evaluate at ``due_at``: a resolver batch naming it failed and may be dropped."""

    asset_key: str
    due_at: int
