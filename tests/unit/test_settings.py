"""Settings read the environment as pydantic-settings' BaseSettings did, without importing it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lakehook.settings import Settings


@pytest.fixture(autouse=True)
def _no_lakehook_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.lower().startswith("lakehook_"):
            monkeypatch.delenv(key)


def test_the_defaults_without_an_environment() -> None:
    settings = Settings()
    assert settings.table_name == "lakehook"
    assert settings.endpoint_url is None
    assert settings.max_events_per_push == 100
    assert settings.allow_insecure_loopback_targets is False


def test_a_prefixed_variable_sets_its_field_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOOK_TABLE_NAME", "events")
    monkeypatch.setenv("lakehook_region", "eu-west-1")
    monkeypatch.setenv("LaKeHoOk_Max_Events_Per_Push", "7")
    monkeypatch.setenv("LAKEHOOK_ALLOW_INSECURE_LOOPBACK_TARGETS", "yes")
    monkeypatch.setenv("LAKEHOOK_PRODUCER_CACHE_SECONDS", "1.5")
    monkeypatch.setenv("LAKEHOOK_NOT_A_SETTING", "ignored")
    monkeypatch.setenv("TABLE_NAME", "unprefixed, ignored")
    settings = Settings()
    assert (settings.table_name, settings.region, settings.max_events_per_push) == ("events", "eu-west-1", 7)
    assert settings.allow_insecure_loopback_targets is True and settings.local_mode
    assert settings.producer_cache_seconds == 1.5


def test_keyword_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOOK_TABLE_NAME", "from-env")
    monkeypatch.setenv("LAKEHOOK_STAGE", "dev")
    settings = Settings(table_name="from-kwargs")
    assert (settings.table_name, settings.stage) == ("from-kwargs", "dev")


def test_an_empty_variable_is_an_empty_string_not_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOOK_ENDPOINT_URL", "")
    assert Settings().endpoint_url == ""


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LAKEHOOK_MAX_EVENTS_PER_PUSH", "0"),
        ("LAKEHOOK_MAX_EVENTS_PER_PUSH", "many"),
        ("LAKEHOOK_ALLOW_INSECURE_LOOPBACK_TARGETS", "maybe"),
        ("LAKEHOOK_TARGET_ALLOWED_NETWORKS", "not-a-network"),
    ],
)
def test_an_invalid_variable_is_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()


def test_the_backoffs_are_checked_across_the_environment_and_the_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOOK_DISPATCH_RETRY_BASE_SECONDS", "9")
    with pytest.raises(ValidationError, match="dispatch_retry_base_seconds"):
        Settings(dispatch_retry_max_seconds=1.0)


@pytest.mark.parametrize(
    ("producers", "targets"),
    [
        ("lakehook/prod/producers/", "lakehook/prod/"),  # inside the target secrets: IAM could not keep them apart
        ("LAKEHOOK/PROD/p/", "lakehook/prod/"),
        ("lakehook/", "lakehook/prod/"),  # containing them
        ("", "lakehook/prod/"),
        ("/", "lakehook/prod/"),
    ],
)
def test_the_producer_secrets_prefix_is_apart_from_the_target_secrets(producers: str, targets: str) -> None:
    with pytest.raises(ValidationError, match="producer_secret_prefix"):
        Settings(producer_secret_prefix=producers, secret_prefix=targets)
    apart = Settings(producer_secret_prefix="lakehook-producers/prod/", secret_prefix=targets)
    assert apart.producer_secrets.name("p") == "lakehook-producers/prod/p"
