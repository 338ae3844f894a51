"""The chaos suite: hostile inputs, races and faults, driven through the ``duetflow`` command.

Every case runs the real entry point (``duetflow.cli.run``, in-process for speed, or a child
process where a second process or a kill is the point) and checks what a user would see: the
exit code, one readable line instead of a traceback, and intake tables whose counts add up
(inputs = kept + rejected) with the expected reason codes.
"""

from __future__ import annotations

import sys
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos_helpers import Cli, CliResult

import duetflow.cli
from moto_s3 import moto_server, use_fake_aws


@pytest.fixture(scope="session")
def chaos_moto() -> Iterator[str]:
    """A moto S3 server over real HTTP on a free loopback port."""
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3_bucket(chaos_moto: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(endpoint, fresh bucket name) with fake credentials in the environment."""
    import boto3

    use_fake_aws(monkeypatch)
    monkeypatch.setenv("DUETFLOW_S3_ENDPOINT_URL", chaos_moto)
    name = f"chaos-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=chaos_moto, region_name="us-east-1").create_bucket(Bucket=name)
    return chaos_moto, name


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run ``duetflow <args>`` through the console entry point; never raises.

    An exception escaping the entry point is reported as rc 1 with its traceback on stderr,
    so tests can assert that none does.
    """

    def run(*args: object, cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["duetflow", *(str(a) for a in args)])
        capsys.readouterr()
        rc = 0
        tb = ""
        try:
            duetflow.cli.run()
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            rc, tb = 1, traceback.format_exc()
        out, err = capsys.readouterr()
        return CliResult(rc, out, err + tb)

    return run
