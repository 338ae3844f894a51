"""ASR hook: transcribe an untranscribed HM session so its HM checks run.

Any OpenAI-compatible ``POST {asr.base_url}/audio/transcriptions`` endpoint (faster-whisper
servers, vLLM, OpenAI) will do. Each speaker's track (``tracks`` / ``stereo`` layouts) is sent
as 16 kHz 16-bit mono WAV with ``response_format=verbose_json``; the answer's ``segments``
(or its ``text``) become untimed transcript entries of that speaker, ordered by segment start
across speakers, which :func:`~duetflow.corpora.studio.hm.hm_checks` reads like a transcript:
a disclosure said only aloud is found, the language and the opening line are checked.

Every answer is bounded (``asr`` config): a total deadline per track covering all attempts,
retries only after a timeout, a connection error, 429 or 5xx, a size cap on the upload (a
longer track is not sent) and on the answer (a longer one is an error, not read on). An answer
that is not the expected JSON is an :class:`AsrError`, never a crash. Results are cached by
the WAV's SHA-256, model and endpoint under the adapter's state directory, so a run that
stopped half way resumes without transcribing a track twice.

The HTTP exchange is one function, :func:`post_bounded`, on the project's bounded-HTTP
primitive (:mod:`duetflow.bounded_http`, which the LLM client uses too).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import time
import uuid
import wave
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import audio_info
from duetflow.audio.stream import StreamResampler, iter_blocks
from duetflow.bounded_http import HttpFailure, Limits, request
from duetflow.config import AsrConfig
from duetflow.corpora.studio.sidecar import SessionSidecar
from duetflow.corpora.studio.transcript import TranscriptTurn

log = logging.getLogger(__name__)

RATE = 16000
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
_BACKOFF_S = 0.5


class AsrError(Exception):
    """The endpoint could not give a usable transcription (the cause is in the message)."""


class _Retryable(AsrError):
    pass


def post_bounded(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    deadline: float,
    max_response_bytes: int,
) -> tuple[int, bytes]:
    """POST ``body`` to ``url`` through :func:`duetflow.bounded_http.request`; (status, body).

    ``deadline`` is a :func:`time.monotonic` instant (the track's total deadline: the request
    gets only the time left). An answer over ``max_response_bytes`` raises AsrError (retrying
    would get the same); a missed deadline, a failed connection or a broken answer raise
    ``_Retryable``.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Retryable("deadline passed")
    limits = Limits(deadline_s=left, max_bytes=max_response_bytes)
    try:
        answer = request("POST", url, limits, body=body, headers=headers)
    except HttpFailure as e:
        if e.kind == "too_large":
            raise AsrError(f"answer exceeds {max_response_bytes} bytes: {e}") from None
        raise _Retryable(f"{e.kind}: {e}") from None
    return answer.status, answer.body


def _multipart(fields: Mapping[str, str], filename: str, audio: bytes) -> tuple[bytes, str]:
    boundary = f"duetflow-{uuid.UUID(bytes=hashlib.sha256(audio).digest()[:16]).hex}"
    out = io.BytesIO()
    for k, v in fields.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n'.encode())
        out.write(f"{v}\r\n".encode())
    out.write(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
    )
    out.write(audio)
    out.write(f"\r\n--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


@dataclass(frozen=True)
class Segment:
    """One piece of a track's transcription (seconds from the track's start)."""

    start: float
    end: float
    text: str


def parse_answer(raw: bytes) -> list[Segment]:
    """The segments of a ``verbose_json`` (or plain ``json``) answer; AsrError if malformed."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AsrError(f"malformed answer (not JSON: {e}): {raw[:80]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise AsrError(f"malformed answer (no 'text' string): {raw[:80]!r}")
    segs = data.get("segments")
    if isinstance(segs, list) and segs:
        out: list[Segment] = []
        for i, s in enumerate(segs):
            if not isinstance(s, dict) or not isinstance(s.get("text"), str):
                raise AsrError(f"malformed answer: segments[{i}] has no 'text'")
            try:
                a, b = float(s.get("start", 0.0)), float(s.get("end", 0.0))
            except (TypeError, ValueError):
                raise AsrError(f"malformed answer: segments[{i}] times") from None
            if s["text"].strip():
                out.append(Segment(a, b, s["text"].strip()))
        return out
    text = data["text"].strip()
    return [Segment(0.0, 0.0, text)] if text else []


class AsrClient:
    """Transcribes WAV bytes against ``config.base_url`` within the configured bounds."""

    def __init__(self, config: AsrConfig, cache_dir: Path | None = None) -> None:
        if not config.base_url:
            raise ValueError("asr.base_url is not set")
        self.config = config
        self.url = config.base_url.rstrip("/") + "/audio/transcriptions"
        self.cache_dir = cache_dir
        self.requests = 0  # HTTP attempts made (the tests assert on it)

    def _cache_file(self, audio: bytes, language: str) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(
            b"\0".join([audio, self.config.model.encode(), self.url.encode(), language.encode()])
        ).hexdigest()
        return self.cache_dir / f"{key}.json"

    def transcribe(self, audio: bytes, filename: str, language: str) -> list[Segment]:
        """Segments of one track (cached); AsrError when no usable answer came in time."""
        cached = self._cache_file(audio, language)
        if cached is not None and cached.is_file():
            return parse_answer(cached.read_bytes())
        fields = {
            "model": self.config.model,
            "response_format": "verbose_json",
            "language": language.split("-")[0],
        }
        body, ctype = _multipart(fields, filename, audio)
        headers = {"Content-Type": ctype, "Accept": "application/json"}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        deadline = time.monotonic() + self.config.timeout_s
        last = "no attempt"
        for attempt in range(self.config.retries + 1):
            if attempt:
                time.sleep(
                    min(_BACKOFF_S * 2 ** (attempt - 1), max(0.0, deadline - time.monotonic()))
                )
            if time.monotonic() >= deadline:
                break
            self.requests += 1
            try:
                status, raw = post_bounded(
                    self.url,
                    body,
                    headers,
                    deadline=deadline,
                    max_response_bytes=self.config.max_response_bytes,
                )
            except _Retryable as e:
                last = str(e)
                continue
            if status in _RETRY_STATUS:
                last = f"HTTP {status}"
                continue
            if status != 200:
                raise AsrError(f"HTTP {status} from {self.url}: {raw[:120]!r}")
            segments = parse_answer(raw)  # malformed: an error, not retried
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_suffix(f".tmp{os.getpid()}")
                tmp.write_bytes(raw)
                os.replace(tmp, cached)
            return segments
        raise AsrError(
            f"no answer from {self.url} within asr.timeout_s={self.config.timeout_s} "
            f"({self.requests} attempt(s); last: {last})"
        )


def track_wav(path: Path, channel: int | None, max_bytes: int) -> bytes:
    """One track as 16 kHz 16-bit mono WAV bytes, streamed; AsrError when over ``max_bytes``."""
    resampler = StreamResampler(audio_info(path).sample_rate, RATE)
    pcm = io.BytesIO()

    def put(x: Any) -> None:
        pcm.write((np.clip(x, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())
        if pcm.tell() + 44 > max_bytes:
            raise AsrError(f"{path.name}: longer than asr.max_upload_mb allows")

    for block in iter_blocks(path, channel=channel):
        put(resampler(block))
    put(resampler(np.zeros(0, dtype=np.float32), last=True))
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.getvalue())
    return out.getvalue()


def transcribe_session(
    client: AsrClient, meta: SessionSidecar, files: Mapping[str, Path]
) -> list[TranscriptTurn]:
    """Untimed transcript entries of an HM ``tracks``/``stereo`` session from its tracks.

    Raises AsrError (a track too long, no answer in time, a malformed answer) and ValueError
    for a layout whose speakers are not on tracks of their own (a mono mix).
    """
    if meta.layout not in ("tracks", "stereo"):
        raise ValueError(f"ASR needs a track per speaker, layout is {meta.layout!r}")
    limit = int(client.config.max_upload_mb * 1024 * 1024)
    pieces: list[tuple[float, int, TranscriptTurn]] = []
    for k, sp in enumerate(meta.speakers):
        audio = track_wav(files[sp.id], sp.channel, limit)
        for seg in client.transcribe(audio, f"{meta.session_id}-{sp.id}.wav", meta.language):
            pieces.append((seg.start, k, TranscriptTurn(speaker=sp.id, text=seg.text)))
    pieces.sort(key=lambda p: (p[0], p[1]))
    return [t for _, _, t in pieces]
