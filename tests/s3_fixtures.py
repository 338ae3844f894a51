"""S3 fixtures shared by the release and storage tests (a pytest plugin of tests/conftest.py):
moto's S3 server over real HTTP, a connection-dropping proxy, botocore-level fault injection."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from moto_s3 import moto_server, use_fake_aws

if TYPE_CHECKING:  # boto3, the config and the proxy load only in the tests that use S3
    from duetflow.config import RunConfig
    from s3_faults import FlakyProxy


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """One moto S3 server per session, on a free loopback port."""
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, moto_endpoint: str) -> str:
    """Fake credentials for the moto server (the standard AWS chain reads them from env)."""
    use_fake_aws(monkeypatch)
    return moto_endpoint


def _make_bucket(endpoint: str) -> str:
    import boto3

    name = f"rel-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_uri(aws_env: str) -> str:
    """A fresh bucket (with a prefix) on the moto server."""
    return f"s3://{_make_bucket(aws_env)}/datasets/duet"


@pytest.fixture
def s3_cfg(aws_env: str) -> RunConfig:
    from s3_faults import s3_config

    return s3_config(aws_env)


# --- fault injection ----------------------------------------------------------------------------


@pytest.fixture
def flaky_proxy(aws_env: str) -> Iterator[Callable[[int], FlakyProxy]]:
    from s3_faults import FlakyProxy

    proxies: list[FlakyProxy] = []

    def make(every: int) -> FlakyProxy:
        p = FlakyProxy(aws_env, every)
        proxies.append(p)
        return p

    yield make
    for p in proxies:
        p.close()


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's standard-mode backoff (up to seconds per retry) shrunk to 10 ms for tests."""
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, ctx: 0.01)
