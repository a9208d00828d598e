"""The guarded session connects to the address it checked: a name resolved once (by a stub) to a local receiver
is reached there, with its Host header kept, and refused before any connection outside local mode. It binds a
port, so it lives here rather than beside the policy's unit tests (tests/unit/test_url_policy.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from lakehook.adapters.targets.egress import DestinationRefusedError, guard_session
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.unit.test_url_policy import DEPLOYED, LOCAL, SECRET, StubResolver


@pytest.fixture
def receiver() -> Iterator[Any]:
    with WebhookReceiver(SECRET) as server:
        yield server


def test_the_connection_goes_to_the_checked_address_with_one_lookup(receiver: Any) -> None:
    # GIVEN a name no real resolver knows, which the stub resolves to the local receiver
    port = int(receiver.base_url.rsplit(":", 1)[1])
    resolver = StubResolver({"pinned.invalid": ["127.0.0.1"]})
    session = guard_session(requests.Session(), LOCAL, resolver)
    # WHEN a request is sent to the name THEN it reaches the checked address, the Host header keeps the
    # name, and the name was looked up exactly once (no second lookup between check and connect)
    answer = session.post(f"http://pinned.invalid:{port}/hooks/x", data=b"{}", timeout=5)
    assert answer.status_code < 500
    assert [r.headers["host"] for r in receiver.requests] == [f"pinned.invalid:{port}"]
    assert resolver.lookups == ["pinned.invalid"]
    # and outside local mode the same name is refused before any connection
    refused = guard_session(requests.Session(), DEPLOYED, resolver)
    with pytest.raises(DestinationRefusedError, match="loopback"):
        refused.post(f"http://pinned.invalid:{port}/hooks/x", data=b"{}", timeout=5)
    assert len(receiver.requests) == 1
