"""Completion tokens: HMAC-SHA256 of the trigger key under the stack's completion key, checked in constant time."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain import completion as completion_domain
from lakehook.domain.completion import (
    CompletionKeyError,
    completion_path,
    completion_token,
    token_matches,
)
from lakehook.domain.errors import NotFoundError
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.usecases.completion import CompletionTokens
from tests.fakes.memory import InMemorySecretStore
from tests.hypothesis_profiles import examples

KEY = "k" * 64
OTHER_KEY = "q" * 64
A = "dwd.g.0123456789abcdef01234567"
B = "dwd.g.76543210fedcba9876543210"


def test_a_token_is_the_hex_hmac_of_the_trigger_key_and_verifies_for_that_key_only() -> None:
    token = completion_token(KEY, A)
    assert len(token) == 64 and int(token, 16) >= 0
    assert token_matches(KEY, A, token)
    assert token_matches(KEY, A, token.upper())  # hex is case-insensitive
    assert not token_matches(OTHER_KEY, A, token)  # made under another key
    assert not token_matches(KEY, B, token)  # another trigger's token
    # Domain-separated: not simply HMAC(key, trigger key), so no other HMAC under the key can pass for one.
    assert token != hmac.new(KEY.encode(), A.encode(), hashlib.sha256).hexdigest()


@pytest.mark.parametrize("token", [None, "", " ", "0" * 63, "0" * 65, "g" * 64, "é" * 64, "t=1,v1=" + "0" * 57])
def test_a_missing_empty_or_malformed_token_never_matches(token: str | None) -> None:
    assert not token_matches(KEY, A, token)


def test_the_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(completion_domain.hmac, "compare_digest", spy)
    assert token_matches(KEY, A, completion_token(KEY, A))
    assert not token_matches(KEY, A, completion_token(KEY, B))
    assert len(calls) == 2


def test_a_short_completion_key_is_refused() -> None:
    with pytest.raises(CompletionKeyError):
        completion_token("short", A)


@settings(max_examples=examples(50), deadline=None)
@given(st.from_regex(r"[A-Za-z0-9_.-]{1,64}\.[A-Za-z0-9_.-]{1,64}\.[0-9a-f]{24}", fullmatch=True), st.data())
def test_tokens_of_distinct_trigger_keys_never_cross(key: str, data: st.DataObject) -> None:
    other = data.draw(st.from_regex(r"[A-Za-z0-9_.-]{1,64}\.[0-9a-f]{24}", fullmatch=True).filter(lambda k: k != key))
    assert token_matches(KEY, key, completion_token(KEY, key))
    assert not token_matches(KEY, other, completion_token(KEY, key))
    assert completion_path(key) == f"/runs/{key}/complete"


class CountingSecrets(InMemorySecretStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_secret(self, ref: str) -> str:
        self.reads += 1
        return super().get_secret(ref)


def test_the_key_is_read_once_per_process_and_issued_tokens_verify() -> None:
    secrets = CountingSecrets()
    secrets.put_secret("lakehook-internal/s/completion-token-key", KEY)
    tokens = CompletionTokens(secrets, "lakehook-internal/s/completion-token-key")
    issued = [tokens.issue(f"r.g.{i:024x}") for i in range(5)]
    assert all(tokens.verify(f"r.g.{i:024x}", t) for i, t in enumerate(issued))
    assert not tokens.verify("r.g." + "0" * 24, issued[1])
    assert secrets.reads == 1


def test_without_a_completion_key_no_token_is_issued_and_none_verifies() -> None:
    tokens = CompletionTokens(InMemorySecretStore(), None)
    assert not tokens.configured and tokens.issue(A) is None
    assert not tokens.verify(A, completion_token(KEY, A))


def test_a_missing_key_secret_is_an_error_not_a_silent_pass() -> None:
    tokens = CompletionTokens(InMemorySecretStore(), "absent")
    with pytest.raises(NotFoundError):
        tokens.issue(A)


# --- the rule's declared outlets -----------------------------------------------------------------------------


def _rule(outlets: Any) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": "dwd",
            "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods_db/ods_order_latest"}]}],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "outlets": outlets,
        }
    )


def test_outlets_take_asset_keys_and_prefixes_once_each() -> None:
    rule = _rule(["paimon://lake/dwd_db/dwd_trade_event_fact", "paimon://lake/dws_db/", "s3://spool/x", "s3://spool/x"])
    assert rule.outlets == ["paimon://lake/dwd_db/dwd_trade_event_fact", "paimon://lake/dws_db/", "s3://spool/x"]
    assert _rule([]).outlets == [] and "outlets" in json_form(_rule([]))


@pytest.mark.parametrize(
    "bad",
    ["lake/dwd_db/", "paimon://lake/ dwd", "paimon:///x", "PAIMON://x", "paimon://" + "x" * 600, "", 7],
)
def test_a_malformed_outlet_is_refused_naming_it(bad: Any) -> None:
    with pytest.raises(ValueError, match="outlet"):
        _rule([bad])


def test_at_most_a_hundred_outlets() -> None:
    with pytest.raises(ValueError, match="outlets"):
        _rule([f"s3://b/p{i}" for i in range(101)])
