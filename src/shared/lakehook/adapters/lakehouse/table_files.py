"""The files of a table that keeps its own log (Delta ``_delta_log/``, Hudi ``.hoodie/``): local or on S3.

Each operation is one storage request: read one object (whole, or a byte range of it: its tail, with its size,
or the bytes from an offset), list one directory (non-recursively, optionally only the names after a given one,
which is how a poller lists the newest log entries of a long history in one page), and the time a file was last
modified (for a log entry that records no time of its own, such as a Delta checkpoint whose commit file was
cleaned up). Ranges let a reader take one column of a large Parquet file (a Delta checkpoint's ``metaData``)
without reading the rest. S3 goes through boto3 (the Lambda
runtime has it), so polling these formats needs no table-format library at all (see docs/packaging.md).

Storage options use the names delta-rs and hudi-rs use (``AWS_REGION``, ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``; upper or lower case), so one
set of options serves lakehook and the writer's own library. Credentials are secret references in the
registration and resolved at poll time; without them the function's role is used.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from lakehook.adapters.lakehouse.catalog_cache import CatalogCache
from lakehook.adapters.lakehouse.credentials import CredentialResolver, properties_fingerprint
from lakehook.domain.assets import AssetSource
from lakehook.ports.lakehouse import SourceAccessError, TableNotFoundError

S3_SCHEMES = ("s3://", "s3a://")
FILE_SCHEME = "file://"
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_NO_BUCKET = {"NoSuchBucket"}
Names = list[str]  # (``list`` is a method name in the classes below)


class TableFiles(ABC):
    """Reads and lists the files under one table root; errors become the port's errors."""

    def __init__(self, location: str) -> None:
        self.location = location

    @abstractmethod
    def read(self, path: str) -> bytes | None:
        """The file at ``path`` (relative to the table root), or None when it does not exist."""

    @abstractmethod
    def read_tail(self, path: str, length: int) -> tuple[bytes, int] | None:
        """The last ``length`` bytes of the file at ``path`` (all of it when it is shorter) and the file's size, or
        None when it does not exist."""

    @abstractmethod
    def read_range(self, path: str, start: int, length: int) -> bytes | None:
        """``length`` bytes of the file at ``path`` from byte ``start`` (fewer at its end), or None when it does not
        exist."""

    @abstractmethod
    def list(self, directory: str, start_after: str | None = None) -> list[str]:
        """The names of the files directly in ``directory`` (sorted), only those after ``start_after`` if given.

        An absent directory lists as empty."""

    @abstractmethod
    def modified_ms(self, path: str) -> int | None:
        """When the file at ``path`` was last modified (epoch milliseconds), or None when it does not exist."""

    @abstractmethod
    def entries(self, directory: str) -> tuple[Names, Names]:
        """The files and the subdirectories directly in ``directory`` (each sorted), in one listing.

        An absent directory lists as empty."""


class LocalTableFiles(TableFiles):
    """A table on the local filesystem (tests, the local runtime)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        root = location.removeprefix(FILE_SCHEME) if location.startswith(FILE_SCHEME) else location
        self._root = root.rstrip("/") or "/"

    def read(self, path: str) -> bytes | None:
        try:
            with open(os.path.join(self._root, path), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise SourceAccessError(f"{self.location}: {path} could not be read: {exc.strerror}") from exc

    def read_tail(self, path: str, length: int) -> tuple[bytes, int] | None:
        try:
            with open(os.path.join(self._root, path), "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - length))
                return handle.read(length), size
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise SourceAccessError(f"{self.location}: {path} could not be read: {exc.strerror}") from exc

    def read_range(self, path: str, start: int, length: int) -> bytes | None:
        try:
            with open(os.path.join(self._root, path), "rb") as handle:
                handle.seek(start)
                return handle.read(length)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise SourceAccessError(f"{self.location}: {path} could not be read: {exc.strerror}") from exc

    def list(self, directory: str, start_after: str | None = None) -> list[str]:
        try:
            with os.scandir(os.path.join(self._root, directory)) as entries:
                names = sorted(e.name for e in entries if e.is_file())
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise SourceAccessError(f"{self.location}: {directory} could not be listed: {exc.strerror}") from exc
        return [n for n in names if start_after is None or n > start_after]

    def modified_ms(self, path: str) -> int | None:
        try:
            return os.stat(os.path.join(self._root, path)).st_mtime_ns // 1_000_000
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise SourceAccessError(f"{self.location}: {path} could not be read: {exc.strerror}") from exc

    def entries(self, directory: str) -> tuple[Names, Names]:
        try:
            with os.scandir(os.path.join(self._root, directory)) as found:
                entries = [(e.name, e.is_dir()) for e in found]
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except OSError as exc:
            raise SourceAccessError(f"{self.location}: {directory} could not be listed: {exc.strerror}") from exc
        return sorted(n for n, d in entries if not d), sorted(n for n, d in entries if d)


class S3TableFiles(TableFiles):
    """A table under ``s3://bucket/prefix``: GetObject, HeadObject and ListObjectsV2 (``StartAfter``,
    ``Delimiter``)."""

    def __init__(self, location: str, client: Any) -> None:
        super().__init__(location)
        rest = location.split("://", 1)[1]
        self.bucket, _, prefix = rest.partition("/")
        self._prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self._client = client

    def read(self, path: str) -> bytes | None:
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=self._prefix + path)
            return bytes(answer["Body"].read())
        except Exception as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            raise self._error(exc, f"{path} could not be read") from exc

    def read_tail(self, path: str, length: int) -> tuple[bytes, int] | None:
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=self._prefix + path, Range=f"bytes=-{length}")
        except Exception as exc:
            code = _code(exc)
            if code in _NOT_FOUND:
                return None
            if code == "InvalidRange":  # an empty object has no last bytes
                return b"", 0
            raise self._error(exc, f"{path} could not be read") from exc
        data = bytes(answer["Body"].read())
        total = str(answer.get("ContentRange") or "").rpartition("/")[2]  # "bytes 100-199/200"
        return data, int(total) if total.isdigit() else len(data)

    def read_range(self, path: str, start: int, length: int) -> bytes | None:
        if length <= 0:
            return b""
        try:
            answer = self._client.get_object(
                Bucket=self.bucket, Key=self._prefix + path, Range=f"bytes={start}-{start + length - 1}"
            )
            return bytes(answer["Body"].read())
        except Exception as exc:
            code = _code(exc)
            if code in _NOT_FOUND:
                return None
            if code == "InvalidRange":  # from past the end
                return b""
            raise self._error(exc, f"{path} could not be read") from exc

    def modified_ms(self, path: str) -> int | None:
        try:
            answer = self._client.head_object(Bucket=self.bucket, Key=self._prefix + path)
            return int(answer["LastModified"].timestamp() * 1000)
        except Exception as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            raise self._error(exc, f"{path} could not be read") from exc

    def list(self, directory: str, start_after: str | None = None) -> list[str]:
        return self._listing(directory, start_after)[0]

    def entries(self, directory: str) -> tuple[Names, Names]:
        return self._listing(directory, None)

    def _listing(self, directory: str, start_after: str | None) -> tuple[Names, Names]:
        """ListObjectsV2 with ``Delimiter``: the keys (files) and the common prefixes (subdirectories)."""
        prefix = f"{self._prefix}{directory.strip('/')}/"
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix, "Delimiter": "/"}
        if start_after is not None:
            request["StartAfter"] = prefix + start_after
        names: list[str] = []
        folders: list[str] = []
        try:
            while True:
                page = self._client.list_objects_v2(**request)
                names.extend(str(o["Key"])[len(prefix) :] for o in page.get("Contents", []))
                folders.extend(str(p["Prefix"])[len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", []))
                token = page.get("NextContinuationToken")
                if not page.get("IsTruncated") or not token:
                    return sorted(names), sorted(folders)
                request["ContinuationToken"] = token
        except Exception as exc:
            raise self._error(exc, f"{directory} could not be listed") from exc

    def _error(self, exc: Exception, what: str) -> Exception:
        code = _code(exc)
        if code in _NO_BUCKET:
            return TableNotFoundError(f"{self.location}: bucket {self.bucket!r} does not exist")
        return SourceAccessError(f"{self.location}: {what} ({code or type(exc).__name__})")


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def storage_option(options: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set in ``options``, matched case-insensitively (delta-rs accepts either)."""
    lowered = {k.lower(): v for k, v in options.items()}
    return next((lowered[n.lower()] for n in names if lowered.get(n.lower())), None)


def s3_client(options: Mapping[str, str]) -> Any:
    """A boto3 S3 client from delta-rs / hudi-rs style storage options (the role's credentials by default)."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(
        aws_access_key_id=storage_option(options, "AWS_ACCESS_KEY_ID", "aws_access_key_id"),
        aws_secret_access_key=storage_option(options, "AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
        aws_session_token=storage_option(options, "AWS_SESSION_TOKEN", "AWS_TOKEN", "aws_session_token"),
        region_name=storage_option(options, "AWS_REGION", "AWS_DEFAULT_REGION", "aws_region", "region"),
    )
    endpoint = storage_option(options, "AWS_ENDPOINT_URL", "AWS_ENDPOINT", "endpoint_url", "endpoint")
    config = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5, read_timeout=20)
    return session.client("s3", endpoint_url=endpoint, config=config)


def table_files(location: str, options: Mapping[str, str]) -> TableFiles:
    """The TableFiles for a registered location (validated by AssetSource: a path, file:///… or s3://…)."""
    if location.startswith(S3_SCHEMES):
        return S3TableFiles(location, s3_client(options))
    return LocalTableFiles(location)


class TableFilesCache:
    """One TableFiles per registered source (so a warm poller keeps its S3 client), rebuilt after access errors."""

    def __init__(self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0) -> None:
        self._resolver = resolver
        self._cache: CatalogCache[TableFiles] = CatalogCache(cache_ttl_seconds)

    def files(self, source: AssetSource) -> tuple[str, TableFiles]:
        """The cache key and the TableFiles of the source's location."""
        location = source.location or ""
        key = properties_fingerprint(f"{source.catalog}|{location}", source.properties)
        return key, self._cache.get(key, lambda: self._build(location, source))

    def evict(self, key: str) -> None:
        self._cache.evict(key)

    def _build(self, location: str, source: AssetSource) -> TableFiles:
        resolved = self._resolver.resolve(source.properties)
        try:
            return table_files(location, resolved.values)
        except Exception as exc:  # a bad option value while building the client
            message = resolved.scrub(f"{type(exc).__name__}: {exc}")
            raise SourceAccessError(f"{location}: storage could not be reached: {message}") from exc
