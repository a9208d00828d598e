"""The sensor (RFC §4, Strategy A): a run already in progress waits for an asset condition instead of being started
by it. ``POST /sensors/evaluate`` names a rule (its groups' conditions) or carries one group, and answers whether
the condition holds now; with ``waitSeconds`` it long-polls until it does or the wait is over."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lakehook.domain.ids import RULE_ID_PATTERN

# API Gateway's REST integration timeout is 29 s and the function's 30 s: one evaluation past the last poll must fit.
MAX_WAIT_SECONDS = 20
POLL_INTERVAL_SECONDS = 2.0
# Cursors, triggers and late skips are read under this id: no rule can be stored under it (RULE_ID_PATTERN has no
# '~'), so a sensor never sees a rule's run history, only whether the members' conditions hold now.
SENSOR_RULE_ID = "~sensor"
AD_HOC_GROUP_ID = "sensor"


class SensorRequest(BaseModel):
    """The body of ``POST /sensors/evaluate``: a rule (``ruleId``, optionally one ``groupId`` of it) or an ad-hoc
    ``group``, shaped like a rule's group; ``waitSeconds`` long-polls."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    rule_id: str | None = Field(
        default=None, alias="ruleId", pattern=RULE_ID_PATTERN, description="a stored rule whose groups are evaluated"
    )
    group_id: str | None = Field(
        default=None, alias="groupId", pattern=RULE_ID_PATTERN, description="with ruleId: only this group of it"
    )
    group: dict[str, Any] | None = Field(
        default=None,
        description="an ad-hoc group, checked as a rule's group is (groupId optional; members may name aliases); "
        "no partitionBy, no schedule",
    )
    wait_seconds: int = Field(
        default=0,
        alias="waitSeconds",
        ge=0,
        le=MAX_WAIT_SECONDS,
        description=f"long-poll: evaluate again every {POLL_INTERVAL_SECONDS:g} s until ready or this many seconds "
        f"have passed (at most {MAX_WAIT_SECONDS}, below API Gateway's 29 s); 0 answers at once",
    )

    @model_validator(mode="after")
    def _one_subject(self) -> SensorRequest:
        if (self.rule_id is None) == (self.group is None):
            raise ValueError("give exactly one of ruleId (a stored rule) and group (an ad-hoc group)")
        if self.group_id is not None and self.rule_id is None:
            raise ValueError("groupId picks a group of ruleId; an ad-hoc group carries its own groupId")
        return self
