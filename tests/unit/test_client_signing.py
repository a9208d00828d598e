"""The client side's one signing module (``lakehook.client.signing``), and what the client side imports.

The push client signs with it and the receiver verifies with it; lakehook's server checks pushes and signs
webhooks with ``lakehook.domain.signing``. Both sides must make and accept the same signatures, whatever the
secret, body and time. The client side (``lakehook.client``, ``lakehook.receiver``) runs in writer and downstream
jobs, outside the deployable (the client distribution): it imports no server module, only the wire formats
(``lakehook.wire``) it shares with the server.
"""

from __future__ import annotations

import ast
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lakehook.client
import lakehook.receiver
from lakehook.client import signing
from lakehook.domain import signing as server
from lakehook.domain.errors import AuthenticationError
from tests.hypothesis_profiles import examples
from tests.unit.test_deployable import parsed, reached_from, source, within

secrets = st.text(min_size=1, max_size=64).filter(lambda s: "\x00" not in s)
bodies = st.binary(max_size=512)
instants = st.integers(min_value=0, max_value=4_102_444_800)


@settings(max_examples=examples(200), deadline=None)
@given(secret=secrets, body=bodies, timestamp=instants)
def test_the_client_and_the_server_make_the_same_signature_and_accept_each_others(
    secret: str, body: bytes, timestamp: int
) -> None:
    header = signing.sign(secret, body, timestamp)
    assert header == server.sign(secret, body, timestamp)
    server.verify(secret, body, header, timestamp)  # a push the client signed passes the server's check
    assert signing.verify_signature(secret, body, server.sign(secret, body, timestamp), now=timestamp) == timestamp


@settings(max_examples=examples(200), deadline=None)
@given(secret=secrets, body=bodies, other=bodies, timestamp=instants)
def test_both_refuse_another_body(secret: str, body: bytes, other: bytes, timestamp: int) -> None:
    if other == body:
        other += b" "
    header = signing.sign(secret, body, timestamp)
    with pytest.raises(AuthenticationError):
        server.verify(secret, other, header, timestamp)
    with pytest.raises(signing.SignatureError):
        signing.verify_signature(secret, other, header, now=timestamp)


def test_the_push_client_and_the_receiver_share_it() -> None:
    assert lakehook.client.sign is signing.sign
    assert lakehook.receiver.sign is signing.sign
    assert lakehook.receiver.verify_signature is signing.verify_signature
    assert lakehook.receiver.SIGNATURE_HEADER == signing.SIGNATURE_HEADER == server.SIGNATURE_HEADER


# The client distribution (distributions/client): the push client, the receiver and the wire formats they share
# with the server (the spool manifest, Iceberg summary counts); nothing else of lakehook.
CLIENT_SIDE = ["lakehook.client", "lakehook.receiver", "lakehook.wire"]


def test_the_client_side_imports_nothing_of_the_server() -> None:
    graph = reached_from({"lakehook.client", "lakehook.client.spool", "lakehook.receiver"})
    rest = sorted(m for m in graph if not within(m, CLIENT_SIDE) and m != "lakehook")
    assert rest == []
    assert {"lakehook.wire.iceberg_counts", "lakehook.wire.spool_format"} <= set(graph)
    assert [m for m in graph if m.endswith(".signing")] == ["lakehook.client.signing"]
    outside = sorted(
        {
            name.split(".")[0]
            for module in graph
            for node in ast.walk(parsed(source(module)))
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
        }
        - {"lakehook", "__future__"}
        - set(sys.stdlib_module_names)
    )
    assert outside == []  # the standard library only: a writer or downstream job installs nothing else for it
