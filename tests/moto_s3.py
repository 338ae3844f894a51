"""moto's standalone S3 server over real HTTP, and the fake credentials the AWS chain reads.

One place for what release, chaos and report tests share: the code under test sees only boto3
and an endpoint URL, exactly as on AWS, MinIO or R2.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
#: variables that would point boto3 somewhere else than the test's endpoint
_REDIRECTS = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "DUETFLOW_S3_ENDPOINT_URL")


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A moto S3 server on a free loopback port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def use_fake_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials in the environment and no profile or endpoint override."""
    for k, v in FAKE_AWS_ENV.items():
        monkeypatch.setenv(k, v)
    for k in _REDIRECTS:
        monkeypatch.delenv(k, raising=False)
