"""Commit notices: the key a registration is indexed under is the key its commits' notices look up, for every
format; any event (foreign, malformed, huge) is read without raising, as a notice or a reason."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.commit_notices import (
    GLUE_SOURCE,
    CommitNotice,
    NoticeIgnored,
    read_notice,
    table_root,
    watch_entries,
)
from tests.hypothesis_profiles import examples

segment = st.from_regex(r"[a-z0-9][a-z0-9_\-]{0,10}", fullmatch=True)
paths = st.lists(segment, min_size=0, max_size=3).map("/".join)
buckets = st.from_regex(r"[a-z0-9][a-z0-9\-]{1,20}[a-z0-9]", fullmatch=True)
snapshot_files = st.integers(0, 10**9).map(lambda n: f"snapshot/snapshot-{n}") | st.just("snapshot/LATEST")
iceberg_files = (
    st.tuples(st.integers(0, 99999), st.uuids()).map(lambda t: f"metadata/{t[0]:05d}-{t[1]}.metadata.json")
    | st.integers(1, 999).map(lambda n: f"metadata/v{n}.metadata.json")
    | st.just("metadata/version-hint.text")
)
delta_files = st.integers(0, 10**12).map(lambda n: f"_delta_log/{n:020d}.json")
hudi_files = st.tuples(st.integers(10**16, 10**17), st.sampled_from(["commit", "deltacommit", "replacecommit"])).map(
    lambda t: f".hoodie/{t[0]}.{t[1]}"
) | st.integers(10**16, 10**17).map(lambda n: f".hoodie/timeline/{n}_{n + 5}.commit")


def s3_event(bucket: str, key: str) -> dict[str, Any]:
    return {
        "source": "aws.s3",
        "detail-type": "Object Created",
        "region": "us-east-1",
        "account": "123456789012",
        "detail": {"bucket": {"name": bucket}, "object": {"key": key}},
    }


@settings(max_examples=examples(200), deadline=None)
@given(
    bucket=buckets,
    prefix=paths,
    database=segment,
    table=segment,
    fmt=st.sampled_from(["paimon", "iceberg"]),
    data=st.data(),
)
def test_a_catalog_tables_commit_file_finds_the_key_it_was_registered_under(
    bucket: str, prefix: str, database: str, table: str, fmt: str, data: st.DataObject
) -> None:
    warehouse = f"s3://{bucket}/{prefix}".rstrip("/") + data.draw(st.sampled_from(["", "/"]))
    asset = AssetRegistration.model_validate(
        {
            "assetKey": f"{fmt}://lake/{database}/{table}",
            "format": fmt,
            "source": {"catalog": "lake", "properties": {"warehouse": warehouse}, "table": f"{database}.{table}"},
        }
    )
    commit_file = data.draw(snapshot_files if fmt == "paimon" else iceberg_files)
    key = "/".join(p for p in (prefix, f"{database}.db", table, commit_file) if p)
    notice = read_notice(s3_event(bucket, key))
    assert isinstance(notice, CommitNotice)
    assert notice.watch_key in watch_entries(asset)
    data_file = "/".join(p for p in (prefix, f"{database}.db", table, "bucket-0", "data-1.parquet") if p)
    assert isinstance(read_notice(s3_event(bucket, data_file)), NoticeIgnored)


@settings(max_examples=examples(200), deadline=None)
@given(bucket=buckets, root=paths.filter(bool), fmt=st.sampled_from(["delta", "hudi"]), data=st.data())
def test_a_path_tables_commit_file_finds_its_location(bucket: str, root: str, fmt: str, data: st.DataObject) -> None:
    scheme = data.draw(st.sampled_from(["s3", "s3a"]))
    asset = AssetRegistration.model_validate(
        {
            "assetKey": f"{fmt}://lake/db/t",
            "format": fmt,
            "source": {"catalog": "lake", "location": f"{scheme}://{bucket}/{root}/"},
        }
    )
    commit_file = data.draw(delta_files if fmt == "delta" else hudi_files)
    notice = read_notice(s3_event(bucket, f"{root}/{commit_file}"))
    assert isinstance(notice, CommitNotice)
    assert list(watch_entries(asset)) == [notice.watch_key]


def test_a_glue_notice_concerns_glue_catalogs_of_its_account_and_region_only() -> None:
    event = {
        "source": GLUE_SOURCE,
        "detail-type": "Glue Data Catalog Table State Change",
        "region": "eu-west-1",
        "account": "111122223333",
        "detail": {"databaseName": "DW_DB", "tableName": "Orders", "typeOfChange": "UpdateTable"},
    }
    notice = read_notice(event)
    assert isinstance(notice, CommitNotice) and notice.watch_key == "TABLE#dw_db.orders"

    def entry(**props: str) -> Any:
        asset = AssetRegistration.model_validate(
            {
                "assetKey": "iceberg://g/dw_db/orders",
                "format": "iceberg",
                "source": {"catalog": "g", "properties": props, "table": "dw_db.orders"},
            }
        )
        return watch_entries(asset)["TABLE#dw_db.orders"]

    assert notice.concerns(entry(type="glue"))
    assert notice.concerns(entry(type="glue", **{"glue.region": "eu-west-1", "glue.id": "111122223333"}))
    assert not notice.concerns(entry(type="glue", **{"glue.region": "us-east-1"}))
    assert not notice.concerns(entry(type="glue", **{"glue.id": "999999999999"}))
    assert not notice.concerns(entry(type="sql", uri="sqlite://"))


json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=30)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
events = st.fixed_dictionaries(
    {},
    optional={
        "source": st.sampled_from(["aws.s3", "aws.glue", "aws.events", "custom"]) | json_leaf,
        "detail-type": st.sampled_from(["Object Created", "Glue Data Catalog Table State Change", "Object Deleted"])
        | json_leaf,
        "region": json_leaf,
        "account": json_leaf,
        "detail": json_value
        | st.fixed_dictionaries(
            {},
            optional={
                "bucket": json_value | st.fixed_dictionaries({"name": json_leaf}),
                "object": json_value | st.fixed_dictionaries({"key": json_leaf | st.text(max_size=300)}),
                "databaseName": json_leaf,
                "tableName": json_leaf,
                "typeOfChange": st.sampled_from(["UpdateTable", "CreatePartition"]) | json_leaf,
            },
        ),
    },
)


@settings(max_examples=examples(500), deadline=None)
@given(event=events)
def test_any_event_is_a_notice_or_a_reason(event: dict[str, Any]) -> None:
    found = read_notice(event)
    if isinstance(found, NoticeIgnored):
        assert found.reason
    else:
        assert found.watch_key.startswith(("TABLE#", "LOCATION#s3://"))


@given(bucket=buckets, key=st.text(max_size=200))
def test_a_root_is_always_a_proper_prefix_of_the_key(bucket: str, key: str) -> None:
    root = table_root(bucket, key)
    if root is not None:
        assert f"s3://{bucket}/{key}".startswith(root + "/") and root != f"s3://{bucket}"
