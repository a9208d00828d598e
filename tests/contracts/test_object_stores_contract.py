"""The S3-backed contracts, on the fakes and on S3: a run manifest is written once per trigger key (the same
manifest again is a retry, a different one refused and never stored), read back whole, and one altered or foreign
refused (ports.dispatch.ManifestStore); an object's size, whole read under a bound and bounded chunks agree with
its bytes, and a missing one is told apart (ports.spool.ObjectStore)."""

from __future__ import annotations

import hashlib

import pytest

from lakehook.domain.dispatch import ManifestConflictError, ManifestIntegrityError, RunManifest
from lakehook.domain.errors import NotFoundError
from lakehook.ports.spool import ObjectDigest, ObjectNotFoundError, ObjectTooLargeError
from tests.contracts.builders import trigger
from tests.contracts.conftest import DATA_BUCKET, MANIFEST_BUCKET, OBJECT_CHUNK, ObjectBackend

pytestmark = pytest.mark.integration


def manifest(snapshot: int) -> RunManifest:
    return RunManifest.for_trigger(trigger(snapshot))


def test_a_manifest_is_written_once_per_trigger_key(object_backend: ObjectBackend) -> None:
    store = object_backend.manifests
    first = manifest(7)
    key = first.trigger_key

    uri = store.put_if_absent(key, first)
    assert uri == store.uri_for(key) == f"s3://{MANIFEST_BUCKET}/manifests/{key}.json"
    assert store.put_if_absent(key, first) == uri  # a retry of the same manifest
    with pytest.raises(ManifestConflictError):
        store.put_if_absent(key, manifest(8))
    assert store.get(uri) == first  # the different one was never stored


def test_a_manifest_reads_back_as_written_and_an_altered_one_is_refused(object_backend: ObjectBackend) -> None:
    store = object_backend.manifests
    kept = manifest(7)
    uri = store.put_if_absent(kept.trigger_key, kept)
    assert store.get(uri).document() == kept.document()

    altered = kept.document().replace(b'"snapshotId":7', b'"snapshotId":9')
    assert altered != kept.document()
    object_backend.put_object(uri, altered)
    with pytest.raises(ManifestIntegrityError):
        store.get(uri)
    object_backend.put_object(uri, b"not json")
    with pytest.raises(ManifestIntegrityError):
        store.get(uri)


@pytest.mark.parametrize(
    "uri",
    [
        f"s3://{MANIFEST_BUCKET}/manifests/absent.json",
        f"s3://{DATA_BUCKET}/manifests/absent.json",
    ],
)
def test_a_missing_manifest_is_not_found(object_backend: ObjectBackend, uri: str) -> None:
    with pytest.raises(NotFoundError):
        object_backend.manifests.get(uri)


@pytest.mark.parametrize("size", [0, 1, OBJECT_CHUNK - 1, OBJECT_CHUNK, OBJECT_CHUNK + 1, 3 * OBJECT_CHUNK + 2])
def test_an_objects_size_read_and_chunks_agree_with_its_bytes(object_backend: ObjectBackend, size: int) -> None:
    store = object_backend.objects
    data = bytes(range(256))[:size]
    uri = f"s3://{DATA_BUCKET}/spool/part-{size}.parquet"
    object_backend.put_object(uri, data)

    assert store.chunk_size == OBJECT_CHUNK
    assert store.size(uri) == size
    assert store.read(uri, size) == data
    chunks = list(store.chunks(uri))
    assert b"".join(chunks) == data
    assert all(0 < len(c) <= OBJECT_CHUNK for c in chunks)
    assert len(chunks) == -(-size // OBJECT_CHUNK)
    assert store.digest(uri) == ObjectDigest(size, hashlib.sha256(data).hexdigest())
    if size:
        with pytest.raises(ObjectTooLargeError):
            store.read(uri, size - 1)


@pytest.mark.parametrize(
    "uri",
    [
        f"s3://{DATA_BUCKET}/spool/absent.parquet",
        "s3://lakehook-contract-no-such-bucket/spool/part.parquet",
    ],
)
def test_a_missing_object_has_no_size_and_cannot_be_read(object_backend: ObjectBackend, uri: str) -> None:
    store = object_backend.objects
    assert store.size(uri) is None
    with pytest.raises(ObjectNotFoundError):
        store.read(uri, 100)
    with pytest.raises(ObjectNotFoundError):
        list(store.chunks(uri))
    with pytest.raises(ObjectNotFoundError):
        store.digest(uri)


@pytest.mark.parametrize("uri", ["https://example.com/part.parquet", "s3://bucket-only", "s3:///key"])
def test_a_uri_that_names_no_object_cannot_be_read(object_backend: ObjectBackend, uri: str) -> None:
    with pytest.raises(ObjectNotFoundError):
        object_backend.objects.size(uri)
    with pytest.raises(ObjectNotFoundError):
        object_backend.objects.read(uri, 100)
    with pytest.raises(ObjectNotFoundError):
        list(object_backend.objects.chunks(uri))
