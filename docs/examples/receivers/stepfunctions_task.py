"""The Lambda task of ``stepfunctions_state_machine.json``: the state machine passes the execution input (the
invocation payload) as the event. Step Functions deduplicates: the execution name is derived from the
trigger key, so one trigger is one execution (STANDARD state machines). Set ``LAKEHOOK_URL`` (the stack's
ApiUrl) in the function's environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lakehook.receiver import CompletionClient, parse_invocation, snapshot_outlet

OUTLET = "paimon://lake/dwd_db/dwd_trade_event_fact"


def handler(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    invocation = parse_invocation(event)
    snapshot = sum(p.snapshot_id or 0 for p in invocation.inputs)  # your job: read the pins, commit the output
    completion = CompletionClient(os.environ["LAKEHOOK_URL"]).complete(
        invocation, "SUCCEEDED", [snapshot_outlet(OUTLET, snapshot)]
    )
    return {"triggerKey": invocation.trigger_key, "status": completion.status, "outletSnapshotId": snapshot}
