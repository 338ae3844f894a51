"""A store under an S3 prefix, reached only through boto3 with an endpoint URL.

AWS, MinIO, R2 and the moto test server behave the same. Credentials come from the standard AWS
chain (env, profile, instance role) or from a ``boto3.Session`` the caller builds (e.g. from a
Prefect AWS credentials block in a flow); they are never logged.

Robustness, in two layers: botocore's *standard* retry mode re-sends a request on throttling,
5xx and connection errors (``release.max_attempts`` attempts, exponential backoff), and every
store operation is wrapped in an outer retry with backoff, so a multipart upload whose part kept
failing is restarted as a whole instead of failing the publish. The sha256 of every object is
stored as object metadata (``x-amz-meta-sha256``); uploads are skipped when an object with the
same sha256 is already there and downloads are verified against it.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import boto3
from boto3.exceptions import RetriesExceededError, S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    IncompleteReadError,
    ResponseStreamingError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from duetflow.errors import StorageError
from duetflow.hashing import CHUNK, sha256_bytes, sha256_chunks, sha256_file
from duetflow.leftovers import temp_file
from duetflow.storage.store import ObjectInfo, Store, check_digest, check_key

log = logging.getLogger(__name__)

T = TypeVar("T")

META_SHA = "sha256"
_RETRY_CODES = {
    "500",
    "502",
    "503",
    "504",
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ConditionalRequestConflict",  # a concurrent conditional write: try again
}
#: error codes of a missing object (a HEAD answer has no body, so only "404" / "NotFound")
_NOT_FOUND = frozenset({"404", "NoSuchKey", "NotFound"})
_FATAL_HINTS = ("AccessDenied", "NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch")


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` → ``("bucket", "some/prefix/")`` (prefix may be empty)."""
    if not uri.startswith("s3://"):
        raise StorageError(f"not an s3 URI: {uri!r}")
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise StorageError(f"s3 URI without a bucket: {uri!r}")
    prefix = prefix.strip("/")
    return bucket, (prefix + "/" if prefix else "")


def _missing(e: ClientError) -> bool:
    """Whether S3 answered that the object is not there."""
    return str(e.response.get("Error", {}).get("Code", "")) in _NOT_FOUND


def _transient(exc: BaseException) -> bool:
    """Whether an error is worth another attempt (throttling, 5xx, dropped connections)."""
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return str(err.get("Code", "")) in _RETRY_CODES or int(status or 0) >= 500
    if isinstance(exc, S3UploadFailedError | RetriesExceededError):
        return not any(h in str(exc) for h in _FATAL_HINTS)
    # HTTPClientError covers dropped connections (ConnectionClosedError) and read timeouts.
    return isinstance(
        exc, BotoConnectionError | HTTPClientError | IncompleteReadError | ResponseStreamingError
    )


class S3Store(Store):
    """Objects under ``s3://bucket/prefix``; see the module docstring for the guarantees."""

    def __init__(
        self,
        uri: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        max_attempts: int = 5,
        multipart_threshold_mb: int = 8,
        session: boto3.session.Session | None = None,
        backoff_s: float = 0.5,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 60.0,
    ) -> None:
        self.bucket, self.prefix = parse_s3_uri(uri)
        self.uri = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        endpoint = endpoint_url or os.environ.get("DUETFLOW_S3_ENDPOINT_URL") or None
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        cfg = Config(
            retries={"total_max_attempts": self.max_attempts, "mode": "standard"},
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            # Path-style works with every S3-compatible server behind a custom endpoint.
            s3={"addressing_style": "path" if endpoint else "auto"},
            max_pool_connections=32,
        )
        sess = session or boto3.session.Session()
        self.client: Any = sess.client(
            "s3", endpoint_url=endpoint, region_name=region or "us-east-1", config=cfg
        )
        threshold = max(1, multipart_threshold_mb) * 1024 * 1024
        self.transfer = TransferConfig(
            multipart_threshold=threshold,
            # S3 parts must be at least 5 MiB (except the last one).
            multipart_chunksize=max(threshold, 5 * 1024 * 1024),
            max_concurrency=4,
        )
        log.debug("s3 store %s (endpoint %s)", self.uri, endpoint or "default")

    # --- helpers ---------------------------------------------------------------------------

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _retry(self, what: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` with exponential backoff on transient errors; StorageError when spent."""
        for attempt in range(1, self.max_attempts + 1):
            try:
                return fn()
            except (ClientError, BotoCoreError, S3UploadFailedError, RetriesExceededError) as e:
                if not _transient(e) or attempt == self.max_attempts:
                    raise StorageError(f"{self.uri}: {what} failed: {e}") from e
                delay = min(self.backoff_s * 2 ** (attempt - 1), 8.0)
                log.warning(
                    "%s: %s failed (%s), attempt %d/%d, retrying in %.1f s",
                    self.uri,
                    what,
                    type(e).__name__,
                    attempt,
                    self.max_attempts,
                    delay,
                )
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _tmp(path: Path) -> Path:
        return temp_file(path)

    # --- Store -----------------------------------------------------------------------------

    def check_ready(self) -> None:
        """HEAD the bucket: a missing one or one refused is a StorageError naming it (a HEAD of
        an object in a missing bucket answers a bare 404, which would read as "no object")."""
        endpoint = self.client.meta.endpoint_url

        def call() -> None:
            try:
                self.client.head_bucket(Bucket=self.bucket)
            except ClientError as e:
                code = str(e.response.get("Error", {}).get("Code", ""))
                if code in ("404", "NoSuchBucket", "NotFound"):
                    raise StorageError(
                        f"{self.uri}: bucket {self.bucket!r} does not exist (at {endpoint}); "
                        "create it or fix the store URI"
                    ) from None
                if code in ("403", "AccessDenied", "Forbidden"):
                    raise StorageError(
                        f"{self.uri}: access to bucket {self.bucket!r} denied (at {endpoint}); "
                        "check the credentials and the bucket's policy"
                    ) from None
                raise

        self._retry(f"head bucket {self.bucket}", call)

    def head(self, key: str) -> ObjectInfo | None:
        k = self._key(key)

        def call() -> ObjectInfo | None:
            try:
                r = self.client.head_object(Bucket=self.bucket, Key=k)
            except ClientError as e:
                if _missing(e):
                    return None
                raise
            meta = r.get("Metadata") or {}
            return ObjectInfo(key, int(r["ContentLength"]), meta.get(META_SHA))

        return self._retry(f"head {key}", call)

    def put_file(self, key: str, path: str | Path, sha256: str | None = None) -> bool:
        src = Path(path)
        if not src.is_file():
            raise StorageError(f"{src}: cannot upload to {key}: file not found")
        digest = sha256 or sha256_file(src)
        info = self.head(key)
        if info is not None and info.sha256 == digest and info.size == src.stat().st_size:
            return False
        k = self._key(key)
        self._retry(
            f"upload {key}",
            lambda: self.client.upload_file(
                str(src),
                self.bucket,
                k,
                ExtraArgs={"Metadata": {META_SHA: digest}},
                Config=self.transfer,
            ),
        )
        log.debug("uploaded %s", key)
        return True

    def put_bytes(self, key: str, data: bytes, sha256: str | None = None) -> bool:
        digest = sha256_bytes(data)
        check_digest("<bytes>", key, sha256, digest)
        info = self.head(key)
        if info is not None and info.sha256 == digest and info.size == len(data):
            return False
        k = self._key(key)
        self._retry(
            f"put {key}",
            lambda: self.client.put_object(
                Bucket=self.bucket, Key=k, Body=data, Metadata={META_SHA: digest}
            ),
        )
        return True

    def create_exclusive(self, key: str, data: bytes) -> bool:
        """``PutObject`` with ``If-None-Match: *`` (S3 conditional writes, MinIO, moto >= 5.1)."""
        k = self._key(key)
        digest = sha256_bytes(data)

        def call() -> bool:
            try:
                self.client.put_object(
                    Bucket=self.bucket, Key=k, Body=data, Metadata={META_SHA: digest},
                    IfNoneMatch="*",
                )  # fmt: skip
            except ClientError as e:
                code = str(e.response.get("Error", {}).get("Code", ""))
                status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
                if code == "PreconditionFailed" or status == 412:
                    return False
                raise  # 409 ConditionalRequestConflict: a concurrent write, retried
            return True

        return self._retry(f"create {key}", call)

    def _expected(self, key: str, sha256: str | None) -> str | None:
        if sha256 is not None:
            return sha256
        info = self.head(key)
        if info is None:
            raise StorageError(f"{self.uri}: object {key} not found")
        return info.sha256

    def get_file(self, key: str, dest: str | Path, sha256: str | None = None) -> Path:
        k = self._key(key)  # a bad key is refused before anything is created locally
        expected = self._expected(key, sha256)
        out = Path(dest)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp(out)
        try:
            self._retry(
                f"download {key}",
                lambda: self._download(k, tmp),
            )
            check_digest(self.uri, key, expected, sha256_file(tmp))
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        return out

    def _download(self, k: str, tmp: Path) -> None:
        try:
            self.client.download_file(self.bucket, k, str(tmp), Config=self.transfer)
        except ClientError as e:
            if _missing(e):
                raise StorageError(f"{self.uri}: object {k} not found") from None
            raise

    def _get_object(self, key: str) -> Any:
        """The GET response of ``key`` (``Body``, ``Metadata``); StorageError when it is missing."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as e:
            if _missing(e):
                raise StorageError(f"{self.uri}: object {key} not found") from None
            raise

    def get_bytes(self, key: str, sha256: str | None = None) -> bytes:
        def call() -> tuple[bytes, str | None]:
            r = self._get_object(key)
            return r["Body"].read(), (r.get("Metadata") or {}).get(META_SHA)

        data, stored = self._retry(f"get {key}", call)
        check_digest(self.uri, key, sha256 or stored, sha256_bytes(data))
        return data

    def content_sha256(self, key: str) -> str:
        def call() -> str:
            return sha256_chunks(self._get_object(key)["Body"].iter_chunks(CHUNK))

        return self._retry(f"read {key}", call)

    def list(self, prefix: str = "") -> Iterator[str]:
        full = self.prefix + prefix
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": full}
            if token:
                kwargs["ContinuationToken"] = token
            page: dict[str, Any] = self._retry(
                f"list {prefix!r}", functools.partial(self.client.list_objects_v2, **kwargs)
            )
            for obj in page.get("Contents", []):
                yield obj["Key"][len(self.prefix) :]
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def delete(self, key: str) -> None:
        k = self._key(key)
        self._retry(f"delete {key}", lambda: self.client.delete_object(Bucket=self.bucket, Key=k))
