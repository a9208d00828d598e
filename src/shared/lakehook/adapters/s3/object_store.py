"""S3ObjectStore: HEAD for sizes, small GETs for manifests, and streamed reads in bounded chunks.

Objects of several GB are hashed by iterating the GET body (``iter_chunks``) and never read
whole, so memory stays at a chunk or two whatever the object's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.ports.spool import ObjectAccessError, ObjectNotFoundError, ObjectStore, ObjectTooLargeError
from lakehook.wire.spool_format import parse_s3_uri

DEFAULT_CHUNK_SIZE = 8 * 1024 * 1024  # large enough that SHA-256 and the socket, not Python, set the pace
_NOT_FOUND = {"404", "NoSuchKey", "NotFound", "NoSuchBucket"}


class S3ObjectStore(ObjectStore):
    """Objects on S3 through one boto3 client (thread-safe, so verification may use several threads)."""

    def __init__(self, client: Any, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        if chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        self._client = client
        self._chunk_size = chunk_size

    @property
    def chunk_size(self) -> int:
        return self._chunk_size

    def size(self, uri: str) -> int | None:
        bucket, key = _location(uri)
        try:
            head = self._client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            raise ObjectAccessError(f"HEAD {uri} failed: {_code(exc)}") from exc
        except BotoCoreError as exc:
            raise ObjectAccessError(f"HEAD {uri} failed: {exc}") from exc
        return int(head["ContentLength"])

    def read(self, uri: str, max_bytes: int) -> bytes:
        body, length = self._open(uri)
        try:
            if length > max_bytes:
                raise ObjectTooLargeError(f"{uri} is {length} bytes; at most {max_bytes} are read whole")
            data: bytes = body.read()
            return data
        except BotoCoreError as exc:
            raise ObjectAccessError(f"reading {uri} failed: {exc}") from exc
        finally:
            body.close()

    def chunks(self, uri: str) -> Iterator[bytes]:
        body, _ = self._open(uri)
        try:
            yield from body.iter_chunks(self._chunk_size)
        except BotoCoreError as exc:  # the connection broke part way (several GB take a while)
            raise ObjectAccessError(f"streaming {uri} failed: {exc}") from exc
        finally:
            body.close()

    def _open(self, uri: str) -> tuple[Any, int]:
        bucket, key = _location(uri)
        try:
            answer = self._client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _NOT_FOUND:
                raise ObjectNotFoundError(f"{uri} does not exist") from exc
            raise ObjectAccessError(f"GET {uri} failed: {_code(exc)}") from exc
        except BotoCoreError as exc:
            raise ObjectAccessError(f"GET {uri} failed: {exc}") from exc
        return answer["Body"], int(answer["ContentLength"])


def _location(uri: str) -> tuple[str, str]:
    try:
        return parse_s3_uri(uri)
    except ValueError as exc:
        raise ObjectNotFoundError(str(exc)) from exc


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
