"""Asset keys, registrations and producer prefixes: what the API accepts and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from lakehook.answers.assets import AssetAnswer
from lakehook.domain.assets import (
    MAX_ASSET_KEY_LENGTH,
    AssetFormat,
    AssetRegistration,
    asset_scheme,
    validate_asset_key,
)
from lakehook.domain.errors import ValidationError
from lakehook.domain.producers import Producer, ProducerSpec, validate_producer_id


@pytest.mark.parametrize(
    "key",
    [
        "iceberg://glue/ods_db/ods_order_latest",
        "paimon://lake/ods_db/ods_payment_latest",
        "paimon://lake/ods_db/orders$snapshots",
        "iceberg://glue/db/t-1.v2",
        "s3://spool/orders",
        "s3://spool/orders/dt=2025-06-01/part-0.parquet",
        "custom://team/metric#daily",
        "delta://lake/sales_db/dim_customer",
        "hudi://lake/ods_db/trips",
    ],
)
def test_well_formed_keys_are_kept_verbatim(key: str) -> None:
    assert validate_asset_key(key) == key


@pytest.mark.parametrize(
    ("key", "complaint"),
    [
        ("ods_db.ods_order", "<scheme>://<path>"),
        ("", "<scheme>://<path>"),
        ("Iceberg://glue/db/t", "<scheme>://<path>"),  # schemes are lowercase
        ("iceberg://glue/db", "iceberg://<catalog>/<database>/<table>"),
        ("iceberg://glue/db/t/extra", "iceberg://<catalog>/<database>/<table>"),
        ("paimon://lake//t", "paimon://<catalog>/<database>/<table>"),
        ("paimon://lake/db/t?x", "paimon://<catalog>/<database>/<table>"),
        ("paimon://lake/db/tablé", "paimon://<catalog>/<database>/<table>"),
        ("s3://spool//orders", "empty path segments"),
        ("s3:///orders", "empty path segments"),
        ("s3://spool/my orders", "spaces"),
        ("s3://spool/orders\t", "spaces"),
        # A trailing newline once slipped through: '$' in re.match matches before a final '\n',
        # which would make "…/t" and "…/t\n" two different assets.
        ("paimon://lake/db/t\n", "<scheme>://<path>"),
        ("delta://lake/dim_customer", "delta://<catalog>/<database>/<table>"),
        ("hudi://lake/db/t/x", "hudi://<catalog>/<database>/<table>"),
        ("s3://spool/orders\n", "<scheme>://<path>"),
    ],
)
def test_malformed_keys_are_refused_with_the_expected_shape(key: str, complaint: str) -> None:
    with pytest.raises(ValueError) as raised:
        validate_asset_key(key)
    assert complaint in str(raised.value)


def test_keys_longer_than_the_limit_are_refused() -> None:
    key = "s3://bucket/" + "x" * MAX_ASSET_KEY_LENGTH
    with pytest.raises(ValueError, match="longer than 512"):
        validate_asset_key(key)
    fits = "s3://bucket/" + "x" * (MAX_ASSET_KEY_LENGTH - len("s3://bucket/"))
    assert validate_asset_key(fits) == fits


def test_scheme_of_a_key() -> None:
    assert asset_scheme("iceberg://glue/db/t") == "iceberg"
    assert asset_scheme("s3://spool/orders") == "s3"


def _registration(**body: Any) -> AssetRegistration:
    return AssetRegistration.model_validate(body)


def test_registration_reads_the_api_shape_and_answers_it_back() -> None:
    body = {
        "assetKey": "iceberg://glue/ods_db/ods_order",
        "format": "iceberg",
        "source": {"catalog": "glue", "table": "ods_db.ods_order", "properties": {"type": "glue"}},
        "description": "orders",
    }
    asset = _registration(**body)
    assert asset.format is AssetFormat.ICEBERG
    assert AssetAnswer.from_domain(asset).dump() == body


@pytest.mark.parametrize("fmt", ["delta", "hudi"])
@pytest.mark.parametrize(
    "location", ["/data/lake/dim_customer", "file:///data/lake/t", "s3://bucket/lake/t", "s3a://b-1.x/t"]
)
def test_delta_and_hudi_sources_name_the_table_location(fmt: str, location: str) -> None:
    body = {
        "assetKey": f"{fmt}://lake/sales_db/dim_customer",
        "format": fmt,
        "source": {"catalog": "lake", "location": location, "properties": {"AWS_REGION": "eu-west-1"}},
    }
    asset = _registration(**body)
    assert asset.format is AssetFormat(fmt) and asset.source is not None
    assert asset.source.table_name == location
    assert AssetAnswer.from_domain(asset).dump() == body


@pytest.mark.parametrize(
    ("fmt", "source", "complaint"),
    [
        ("delta", {"catalog": "lake", "table": "db.t"}, "names the table's 'location'"),
        ("hudi", {"catalog": "lake", "location": "/x", "table": "db.t"}, "omit 'table'"),
        ("iceberg", {"catalog": "glue", "location": "s3://bkt/t"}, "names its 'table'"),
        ("paimon", {"catalog": "lake", "table": "db.t", "location": "/x"}, "omit 'location'"),
        ("delta", {"catalog": "lake", "location": "relative/path"}, "location"),
        ("delta", {"catalog": "lake", "location": "s3://Bad_Bucket/t"}, "location"),
        ("delta", {"catalog": "lake", "location": "gs://bucket/t"}, "location"),
        ("hudi", {"catalog": "lake", "location": "/x", "properties": {"AWS_SECRET_ACCESS_KEY": "hunter2"}}, "secret"),
    ],
)
def test_a_source_that_does_not_fit_its_format_is_refused(fmt: str, source: dict[str, Any], complaint: str) -> None:
    with pytest.raises(PydanticValidationError) as raised:
        _registration(assetKey=f"{fmt}://lake/db/t", format=fmt, source=source)
    assert complaint in str(raised.value)


def test_push_only_asset_needs_no_source() -> None:
    asset = _registration(assetKey="s3://spool/orders", format="custom")
    assert asset.source is None
    assert AssetAnswer.from_domain(asset).dump() == {"assetKey": "s3://spool/orders", "format": "custom"}


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ({"assetKey": "paimon://lake/db/t", "format": "iceberg"}, "needs an assetKey starting with iceberg://"),
        ({"assetKey": "paimon://lake/db/t", "format": "custom"}, "has format 'paimon'"),
        (
            {"assetKey": "s3://spool/x", "format": "custom", "source": {"catalog": "c", "table": "d.t"}},
            "custom asset has no source",
        ),
        ({"assetKey": "paimon://lake/db/t", "format": "hudi"}, "format"),
        ({"assetKey": "paimon://lake/db/t", "format": "paimon", "owner": "me"}, "owner"),
        ({"assetKey": "paimon://lake/db", "format": "paimon"}, "assetKey"),
        (
            {"assetKey": "paimon://lake/db/t", "format": "paimon", "source": {"catalog": "c", "table": "no_dot"}},
            "table",
        ),
    ],
)
def test_inconsistent_registrations_are_refused(body: dict[str, Any], complaint: str) -> None:
    with pytest.raises(PydanticValidationError) as raised:
        _registration(**body)
    assert complaint in str(raised.value)


@pytest.mark.parametrize(
    "name",
    [
        "s3.secret-access-key",
        "client.password",
        "token",
        "rest.credential",
        "s3.session-token",
        "gcs.private_key",
        "s3.access-key-id",
    ],
)
def test_a_credential_in_clear_is_refused_naming_the_property(name: str) -> None:
    source = {"catalog": "c", "table": "db.t", "properties": {"uri": "https://cat", name: "hunter2"}}
    with pytest.raises(PydanticValidationError) as raised:
        _registration(assetKey="iceberg://c/db/t", format="iceberg", source=source)
    (error,) = raised.value.errors()
    assert error["loc"] == ("source", "properties")
    assert repr(name) in error["msg"] and "uri" not in error["msg"]
    assert "hunter2" not in error["msg"]  # the message that reaches clients and logs never echoes the value


def test_a_credential_by_reference_is_accepted() -> None:
    props = {"s3.secret-access-key": "secretsmanager:lakehook/s3", "client.password": "ssm:/lakehook/pw"}
    asset = _registration(
        assetKey="iceberg://c/db/t", format="iceberg", source={"catalog": "c", "table": "db.t", "properties": props}
    )
    assert asset.source is not None and asset.source.properties == props


# --- producers: ids and prefixes ------------------------------------------------------------


@pytest.mark.parametrize("producer_id", ["orders-writer", "spark_job.1", "a", "A" * 128])
def test_valid_producer_ids(producer_id: str) -> None:
    assert validate_producer_id(producer_id) == producer_id


@pytest.mark.parametrize("producer_id", ["", "has space", "slash/id", "A" * 129, "p1\n", "é"])
def test_invalid_producer_ids_are_a_validation_error_naming_the_field(producer_id: str) -> None:
    with pytest.raises(ValidationError) as raised:
        validate_producer_id(producer_id)
    assert raised.value.field == "producerId"


def _producer(*prefixes: str) -> Producer:
    return Producer(producer_id="p", asset_key_prefixes=list(prefixes), secret_ref="ref", created_at=0, updated_at=0)


def test_a_producer_writes_only_under_its_prefixes() -> None:
    producer = _producer("paimon://lake/ods_db/", "s3://spool/orders")
    assert producer.may_write("paimon://lake/ods_db/ods_order_latest")
    assert producer.may_write("s3://spool/orders")
    assert not producer.may_write("paimon://lake/dwd_db/fact")
    assert not producer.may_write("iceberg://lake/ods_db/ods_order_latest")


@pytest.mark.parametrize("prefixes", [[], ["ods_db/"], ["s3://spool/ x"]])
def test_bad_prefix_lists_are_refused(prefixes: list[str]) -> None:
    with pytest.raises(PydanticValidationError) as raised:
        ProducerSpec.model_validate({"assetKeyPrefixes": prefixes})
    assert "assetKeyPrefixes" in str(raised.value)


def test_producer_prefixes_match_whole_path_segments() -> None:
    from lakehook.domain.producers import Producer

    producer = Producer(
        producer_id="p",
        asset_key_prefixes=["paimon://lake", "s3://spool/orders/"],
        secret_ref="r",
        created_at=0,
        updated_at=0,
    )
    assert producer.may_write("paimon://lake/ods_db/orders")
    assert not producer.may_write("paimon://lakehouse/ods_db/orders")
    assert producer.may_write("s3://spool/orders/2025-06-01")
    assert not producer.may_write("s3://spool/orders_v2/x")
