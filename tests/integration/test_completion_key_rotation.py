"""Rotating the completion key on Secrets Manager (moto) needs no restart: tokens issued under the former key
(AWSPREVIOUS) keep verifying until the next rotation, a warm verifier learns the new key from the first token
made under it, and bad tokens cannot make it read Secrets Manager more than once per recheck interval."""

from __future__ import annotations

from typing import Any

import boto3

from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.domain.completion import completion_token
from lakehook.usecases.completion import CompletionTokens

KEY_REF = "lakehook-internal/s/completion-token-key"
A, B = "r.g." + "a" * 24, "r.g." + "b" * 24
FIRST, SECOND, THIRD = ("first-" + "k" * 32, "second-" + "k" * 32, "third-" + "k" * 32)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_750_000_000_000

    def __call__(self) -> int:
        return self.ms


class CountingStore(SecretsManagerSecretStore):
    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.reads = 0

    def get_secret(self, ref: str) -> str:
        self.reads += 1
        return super().get_secret(ref)


def test_a_rotation_keeps_issued_tokens_valid_and_reaches_warm_processes(aws: None) -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    client.create_secret(Name=KEY_REF, SecretString=FIRST)
    clock = Clock()
    dispatcher = CompletionTokens(CountingStore(client), KEY_REF, clock=clock)
    verifier_store = CountingStore(client)
    verifier = CompletionTokens(verifier_store, KEY_REF, clock=clock)

    old = dispatcher.issue(A)
    assert old == completion_token(FIRST, A) and verifier.verify(A, old)

    client.put_secret_value(SecretId=KEY_REF, SecretString=SECOND)  # the rotation
    assert verifier.verify(A, old)  # a run in flight reports its end under the former key
    assert dispatcher.issue(B) == completion_token(FIRST, B)  # a warm dispatcher keeps its key for a while
    clock.ms += 300_000  # and reads it again after refresh_ms
    new = dispatcher.issue(B)
    assert new == completion_token(SECOND, B)
    assert verifier.verify(B, new)  # the warm verifier reads again on the first token it cannot match
    assert verifier.verify(A, old)  # AWSPREVIOUS: the former key still verifies

    client.put_secret_value(SecretId=KEY_REF, SecretString=THIRD)  # the next rotation
    clock.ms += 300_000
    assert not verifier.verify(A, old)  # two rotations ago: no longer
    assert verifier.verify(B, new)


def test_bad_tokens_read_the_key_at_most_once_per_recheck_interval(aws: None) -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    client.create_secret(Name=KEY_REF, SecretString=FIRST)
    clock = Clock()
    store = CountingStore(client)
    tokens = CompletionTokens(store, KEY_REF, clock=clock)
    for _ in range(50):
        assert not tokens.verify(A, "0" * 64)
        clock.ms += 100
    assert store.reads == 1  # 5 s of bad tokens: the first read only
    clock.ms += 30_000
    assert not tokens.verify(A, "0" * 64)
    assert store.reads == 2
