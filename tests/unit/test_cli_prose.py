"""``lakehook explain`` speaks to people: no Python spellings (``snapshotRequired=True``, ``newerThan=assetKey=…``,
``inputs=[…; …]``), and it says what a state version is."""

from __future__ import annotations

import argparse
import io
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lakehook.cli_commands.api import ApiClient
from lakehook.cli_commands.commands import explain, state
from lakehook.cli_commands.output import captured
from lakehook.cli_commands.prose import STATE_VERSION_NOTE, prose, words

PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
ORDERS = "paimon://lake/ods_db/ods_order_latest"

# What GET /rules/{id}/explain answered in the demo (the DWD rule after orders 4 failed its check).
EXPLAINED: dict[str, Any] = {
    "ruleId": "dwd_trade_event_fact",
    "ready": False,
    "evaluatedAt": "2026-12-07T07:28:20.001Z",
    "groups": [
        {
            "groupId": "main",
            "status": "WAITING_FOR_UPDATE",
            "members": [
                {
                    "assetKey": PAYMENTS,
                    "status": "WAITING_FOR_UPDATE",
                    "reason": "snapshot 3 already triggered; waiting for a newer one",
                    "current": {"snapshotId": 3, "stateVersion": 2},
                    "required": {
                        "snapshotRequired": True,
                        "newerThan": {
                            "assetKey": PAYMENTS,
                            "snapshotId": 3,
                            "schemaId": 0,
                            "commitTime": 1796628471584,
                            "stateVersion": 2,
                        },
                    },
                }
            ],
        }
    ],
    "lastTrigger": {
        "triggerKey": "dwd_trade_event_fact.main.e8407e75330d",
        "groupId": "main",
        "status": "SUCCEEDED",
        "createdAt": "2026-12-07T07:28:10.000Z",
        "inputs": [
            {"assetKey": ORDERS, "snapshotId": 3, "stateVersion": 5},
            {"assetKey": PAYMENTS, "snapshotId": 3, "stateVersion": 2},
        ],
    },
}


class CannedApi(ApiClient):
    """Our own API client, answering one canned document instead of calling a stack."""

    def __init__(self, document: dict[str, Any]) -> None:
        super().__init__(url="http://127.0.0.1:1", admin_token="t")
        self.document = document

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return self.document


def explained_text(document: dict[str, Any]) -> str:
    out = io.StringIO()
    with captured(out, io.StringIO()):
        assert explain(CannedApi(document), argparse.Namespace(rule="r", output="text")) == 0
    return out.getvalue()


def test_explain_prints_current_required_and_the_last_trigger_in_words_and_says_what_a_state_version_is() -> None:
    text = explained_text(EXPLAINED)
    assert "        current: snapshot 3, state version 2\n" in text
    assert (
        f"        required: a snapshot, newer than {PAYMENTS} (snapshot 3, schema 0, "
        "committed 2026-12-07T07:27:51.584Z, state version 2)\n"
    ) in text
    assert "  last trigger: dwd_trade_event_fact.main.e8407e75330d SUCCEEDED, group main, created " in text
    assert f"    pinned {ORDERS} (snapshot 3, state version 5)\n" in text
    assert f"    pinned {PAYMENTS} (snapshot 3, state version 2)\n" in text
    assert f"  {STATE_VERSION_NOTE}\n" in text
    for python in ("=True", "=False", "=None", "snapshotId=", "newerThan=", "inputs=[", "stateVersion"):
        assert python not in text.replace(STATE_VERSION_NOTE, "")


def test_a_rule_that_never_triggered_says_none_and_needs_no_state_version_note() -> None:
    document = {"ruleId": "r", "ready": False, "groups": [], "lastTrigger": None}
    text = explained_text(document)
    assert "  last trigger: none\n" in text and "state version" not in text


KEYS = st.from_regex(r"[a-z]{1,6}([A-Z][a-z]{1,5}){0,3}", fullmatch=True)
SCALARS = st.none() | st.booleans() | st.integers(-5, 10**13) | st.text("abc xyz-_./:", max_size=12)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4))


@given(VALUES)
def test_no_value_is_ever_shown_in_a_python_spelling(value: Any) -> None:
    shown = prose(value)
    for python in ("True", "False", "None", "{", "[", "'", "="):
        assert python not in shown


def test_a_field_name_reads_as_words() -> None:
    assert words("qualityPassedSnapshotId") == "quality passed snapshot id"
    assert prose({"qualityStatus": "PASSED", "tags": ["eod", "v1"], "dataChanged": False}) == (
        "quality status PASSED, tags: eod; v1, data changed no"
    )


def test_state_says_whether_commit_notices_arrive_and_how_often_the_table_is_polled() -> None:
    answer = {
        "assetKey": ORDERS,
        "version": 3,
        "registered": True,
        "notices": {
            "state": "QUIET",
            "pollIntervalSeconds": 60,
            "fastPollSince": "2026-12-07T08:00:00Z",
            "summary": "notices: QUIET (fast poll since 2026-12-07T08:00:00Z)",
        },
    }
    out = io.StringIO()
    with captured(out, io.StringIO()):
        assert state(CannedApi(answer), argparse.Namespace(asset=ORDERS, output="text")) == 0
    assert "  notices: QUIET (fast poll since 2026-12-07T08:00:00Z), polled every 60 s\n" in out.getvalue()
