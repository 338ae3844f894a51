"""Object stores for releases: one interface, a local directory and S3 (boto3).

``open_store(uri, config.release)`` picks the implementation from the URI: a plain path or
``file://`` → :class:`LocalStore`, ``s3://bucket/prefix`` → :class:`S3Store`. Both share the
layout described in docs/releases.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from duetflow.config import ReleaseConfig
from duetflow.errors import StorageError
from duetflow.storage.local import LocalStore
from duetflow.storage.store import ObjectInfo, Store, audio_key, check_key

if TYPE_CHECKING:
    from duetflow.storage.s3 import S3Store

__all__ = [
    "LocalStore",
    "ObjectInfo",
    "S3Store",
    "Store",
    "audio_key",
    "check_key",
    "open_store",
]


def open_store(uri: str | Path, config: ReleaseConfig | None = None, **s3_kwargs: Any) -> Store:
    """The store behind ``uri``; S3 settings (endpoint, region, retries, multipart) from config.

    Extra keyword arguments go to :class:`S3Store` (e.g. ``session=`` a boto3 session built
    from a Prefect credentials block).
    """
    cfg = config or ReleaseConfig()
    text = str(uri)
    if text.startswith("s3://"):
        from duetflow.storage.s3 import S3Store

        opts: dict[str, Any] = {
            "endpoint_url": cfg.endpoint_url,
            "region": cfg.region,
            "max_attempts": cfg.max_attempts,
            "multipart_threshold_mb": cfg.multipart_threshold_mb,
        }
        opts.update(s3_kwargs)
        return S3Store(text, **opts)
    if text.startswith("file://"):
        return LocalStore(unquote(urlparse(text).path))
    if "://" in text:
        raise StorageError(f"unsupported store URI {text!r}: use a path, file:// or s3://")
    return LocalStore(text)


def __getattr__(name: str) -> Any:
    if name == "S3Store":  # lazy: boto3 is only imported when S3 is used
        from duetflow.storage.s3 import S3Store

        return S3Store
    raise AttributeError(name)
