"""Publish and pull throughput and memory, at 1x and 10x corpus size, local store and S3 (moto).

One command: ``.venv/bin/python bench/release.py [--dialogues 200] [--no-s3]``.

A synthetic rendered work directory (``--dialogues`` × scale rows, 0.8 s of 8 kHz audio each:
three 0.1 s noise bursts 200 ms apart in a quiet room, so that publish's checks, which
re-measure every pause on the audio, pass; the cost is bookkeeping, hashing, Parquet, the checks
and object traffic rather than audio size) is published and its train split pulled, each in a
fresh child process (the ``duetflow`` command's native defaults,
:func:`duetflow.native_threads.process_defaults`) that reports its wall time and its own peak
RSS (``VmHWM``, :mod:`_rss`). For S3 a moto server runs in this (parent) process, so its memory
does not count. Memory should stay flat from 1x to 10x: manifests are streamed row group by row
group and only small per-dialogue records (ids, split, keys) are kept.
Last line: ``release: publish <n>/s, pull <m>/s (local 10x); peak_rss_mb 1x <a> 10x <b>``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import kept_dialogue, rendered_writer, spoken_turn
from _rss import peak_rss_mb

from duetflow.audio.io import write_audio
from duetflow.hashing import sha256_file
from duetflow.native_threads import process_defaults

SR = 8000


def make_workdir(root: Path, n: int) -> Path:
    """``n`` rendered dialogues, three turns each, written in lockstep row groups."""
    rng = np.random.default_rng(0)
    with rendered_writer(root, 2048) as w:
        for i in range(n):
            did = f"bench__d{i:06d}__w000"
            rel = f"audio/{i % 100:02d}/{did}.flac"
            a, b = f"{did}-A", f"{did}-B"
            spans = [(a, 0.0, 0.1), (b, 0.3, 0.4), (a, 0.6, 0.7)]
            # a -60 dBFS room with a -20 dBFS noise burst per turn: publish re-measures each
            # pause on the audio, so the turns must be audible and the pauses quiet
            x = 0.001 * rng.standard_normal(SR * 4 // 5)
            for _, st, en in spans:
                k0, k1 = int(st * SR), int(en * SR)
                x[k0:k1] = 0.1 * rng.standard_normal(k1 - k0)
            write_audio(root / rel, x.astype(np.float32), SR)
            row = kept_dialogue(
                did,
                f"bench__src{i // 3:06d}",
                speakers=(a, b),
                audio_path=rel,
                sha256=sha256_file(root / rel),
                duration_s=0.8,
                sample_rate=SR,
                n_turns=3,
            )
            turns = [
                spoken_turn(did, k, s, st, en, "hello there") for k, (s, st, en) in enumerate(spans)
            ]
            w.write(row, turns)
    return root


def child(workdir: str, store: str, dest: str, endpoint: str | None) -> None:
    """Publish then pull train; print one JSON line (runs in a fresh process)."""
    from duetflow.config import build_config
    from duetflow.release.publish import publish
    from duetflow.release.pull import pull

    # the synthetic dialogues are 0.8 s long: the duration rule is lowered to admit them (every
    # other publish check runs as configured)
    overrides: dict[str, Any] = {"window": {"min_s": 0.5}}
    if endpoint:
        overrides["release"] = {"endpoint_url": endpoint}
    cfg = build_config(overrides, environ={})
    t0 = time.perf_counter()
    info = publish([Path(workdir)], store, cfg)
    t1 = time.perf_counter()
    res = pull(store, info.release_id, "train", Path(dest), cfg)
    t2 = time.perf_counter()
    print(
        json.dumps(
            {
                "dialogues": info.counts["dialogues"],
                "train": res.dialogues,
                "publish_s": t1 - t0,
                "pull_s": t2 - t1,
                "peak_rss_mb": peak_rss_mb(),
            }
        )
    )


def run(n: int, tmp: Path, store: str, endpoint: str | None) -> dict[str, float]:
    wd = tmp / f"wd-{n}"
    if not wd.exists():
        make_workdir(wd, n)
    dest = tmp / f"dest-{n}-{abs(hash(store)) % 10000}"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    process_defaults(env)  # as the `duetflow` command runs (duetflow.native_threads)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(wd), store, str(dest), endpoint or ""],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode != 0:  # the child's own words, not only its exit status
        sys.exit(f"publish/pull of {n} dialogues to {store} failed:\n{out.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=200, help="dialogues at 1x")
    ap.add_argument("--no-s3", action="store_true", help="skip the moto S3 runs")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        wd, store, dest, endpoint = args.child
        child(wd, store, dest, endpoint or None)
        return
    endpoint = None
    server = None
    if not args.no_s3:
        import boto3
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket="bench-release"
        )
    rows = []
    with tempfile.TemporaryDirectory(prefix="duetflow-bench-release-") as t:
        tmp = Path(t)
        for scale in (1, 10):
            n = args.dialogues * scale
            targets = [("local", str(tmp / f"store-{n}"), None)]
            if endpoint:
                targets.append(("s3", f"s3://bench-release/x{n}", endpoint))
            for kind, store, ep in targets:
                r = run(n, tmp, store, ep)
                rows.append((kind, scale, r))
                print(
                    f"{kind:5s} {scale:2d}x {n:6d} dialogues: publish {r['publish_s']:6.2f} s "
                    f"({n / r['publish_s']:7.1f}/s), pull train {r['train']:5d} in "
                    f"{r['pull_s']:6.2f} s ({r['train'] / r['pull_s']:7.1f}/s), "
                    f"peak RSS {r['peak_rss_mb']:6.1f} MB"
                )
    if server is not None:
        server.stop()
    local = {s: r for k, s, r in rows if k == "local"}
    n10 = args.dialogues * 10
    print(
        f"release: publish {n10 / local[10]['publish_s']:.0f}/s, "
        f"pull {local[10]['train'] / local[10]['pull_s']:.0f}/s (local 10x); "
        f"peak_rss_mb 1x {local[1]['peak_rss_mb']:.0f} 10x {local[10]['peak_rss_mb']:.0f}"
    )


if __name__ == "__main__":
    main()
