"""DNSMOS (Reddy et al., ICASSP 2022): SIG, BAK, OVRL and P.808 MOS predicted offline.

The DNS Challenge ONNX models ship inside the ``speechmos`` wheel (``quality`` extra); they
are run here with onnxruntime exactly as the challenge's reference script runs them (which
``speechmos`` repackages): 16 kHz mono, 9.01 s windows, the primary model's raw SIG/BAK/OVRL
mapped through the published polynomials, P.808 on a 120-band mel spectrogram (librosa, as in
the reference), a clip's score the mean over its windows. A clip shorter than a window is
repeated until it fills one, as the reference does.

:class:`DnsmosStream` scores a long signal fed in blocks: it keeps one window of samples and
scores a window every ``hop_s`` (the reference uses 1 s; the default here, a whole window,
costs 9x less and scores every sample once), so memory does not grow with the audio.
Single-threaded onnxruntime on CPU: deterministic.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from duetflow.errors import ConfigError

RATE = 16000
WINDOW_S = 9.01
WINDOW = int(WINDOW_S * RATE)
PRIMARY = "sig_bak_ovr.onnx"
P808 = "model_v8.onnx"

_MISSING = (
    "DNSMOS needs the 'quality' extra: pip install 'duetflow[quality]' "
    "(speechmos for the models, onnxruntime and librosa to run them)"
)
# the reference script's polynomials (non-personalised DNSMOS)
_P_SIG = np.poly1d([-0.08397278, 1.22083953, 0.0052439])
_P_BAK = np.poly1d([-0.13166888, 1.60915514, -0.39604546])
_P_OVR = np.poly1d([-0.06766283, 1.11546468, 0.04602535])

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class DnsmosScore:
    """Mean DNSMOS of a clip (1–5 each) and how many 9.01 s windows it was scored on."""

    sig: float
    bak: float
    ovrl: float
    p808: float
    windows: int

    def as_dict(self) -> dict[str, float]:
        return {
            "dnsmos_sig": round(self.sig, 3),
            "dnsmos_bak": round(self.bak, 3),
            "dnsmos_ovrl": round(self.ovrl, 3),
            "dnsmos_p808": round(self.p808, 3),
        }


def _models_dir() -> Path:
    spec = importlib.util.find_spec("speechmos")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{_MISSING}; speechmos is not installed")
    for loc in spec.submodule_search_locations:
        d = Path(loc) / "dnsmos_models"
        if (d / PRIMARY).is_file() and (d / P808).is_file():
            return d
    raise ConfigError(f"{_MISSING}; the speechmos package lacks its DNSMOS models")


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"{_MISSING}; {name} is not installed") from None


class DnsmosModel:
    """The two ONNX sessions (built once per process; see :func:`get_model`)."""

    def __init__(self) -> None:
        ort = _import("onnxruntime")
        self._librosa = _import("librosa")
        d = _models_dir()
        opts = ort.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        cpu = ["CPUExecutionProvider"]
        self.primary = ort.InferenceSession(str(d / PRIMARY), providers=cpu, sess_options=opts)
        self.p808 = ort.InferenceSession(str(d / P808), providers=cpu, sess_options=opts)

    def _mel(self, x: FloatArray) -> FloatArray:
        lr = self._librosa
        mel = lr.feature.melspectrogram(y=x, sr=RATE, n_fft=321, hop_length=160, n_mels=120)
        out: FloatArray = ((lr.power_to_db(mel, ref=np.max) + 40) / 40).T.astype(np.float32)
        return out

    def window(self, x: FloatArray) -> tuple[float, float, float, float]:
        """(SIG, BAK, OVRL, P.808) of one window of exactly :data:`WINDOW` samples."""
        seg = np.asarray(x, dtype=np.float32)[np.newaxis, :]
        sig, bak, ovr = self.primary.run(None, {"input_1": seg})[0][0]
        p808 = self.p808.run(None, {"input_1": self._mel(seg[0, :-160])[np.newaxis]})[0][0][0]
        return float(_P_SIG(sig)), float(_P_BAK(bak)), float(_P_OVR(ovr)), float(p808)


_MODEL: DnsmosModel | None = None


def get_model() -> DnsmosModel:
    """The process's DNSMOS model (ConfigError with the install hint when it cannot load)."""
    global _MODEL
    if _MODEL is None:
        _MODEL = DnsmosModel()
    return _MODEL


def score_clip(x: FloatArray, model: DnsmosModel | None = None, hop_s: float = 1.0) -> DnsmosScore:
    """DNSMOS of a short clip held in memory (16 kHz mono, -1..1), as the reference scores it:
    repeated to one window if shorter, windows every ``hop_s``."""
    m = model or get_model()
    y = np.clip(np.asarray(x, dtype=np.float32), -1.0, 1.0)
    if len(y) == 0:
        raise ValueError("cannot score an empty clip")
    while len(y) < WINDOW:
        y = np.concatenate((y, y))
    hop = max(1, int(round(hop_s * RATE)))
    starts = range(0, len(y) - WINDOW + 1, hop)
    return _mean([m.window(y[a : a + WINDOW]) for a in starts])


def _mean(rows: list[tuple[float, float, float, float]]) -> DnsmosScore:
    sig, bak, ovrl, p808 = (float(v) for v in np.asarray(rows, dtype=np.float64).mean(axis=0))
    return DnsmosScore(sig, bak, ovrl, p808, windows=len(rows))


class DnsmosStream:
    """DNSMOS of a long signal fed block by block (16 kHz mono); memory: one window."""

    def __init__(self, model: DnsmosModel | None = None, hop_s: float = WINDOW_S) -> None:
        self.model = model or get_model()
        self.hop = max(1, int(round(hop_s * RATE)))
        self._buf = np.zeros(0, dtype=np.float32)
        self._rows: list[tuple[float, float, float, float]] = []
        self.samples = 0

    def feed(self, x: FloatArray) -> None:
        y = np.clip(np.asarray(x, dtype=np.float32), -1.0, 1.0)
        self.samples += len(y)
        self._buf = np.concatenate((self._buf, y))
        while len(self._buf) >= WINDOW:
            self._rows.append(self.model.window(self._buf[:WINDOW]))
            self._buf = self._buf[self.hop :]

    def result(self) -> DnsmosScore:
        """The mean over the windows scored; a signal shorter than a window is scored whole."""
        if not self._rows:
            if not len(self._buf):
                raise ValueError("cannot score an empty signal")
            return score_clip(self._buf, self.model, hop_s=self.hop / RATE)
        return _mean(self._rows)


def finite(score: DnsmosScore) -> bool:
    """All four values are finite numbers."""
    return all(math.isfinite(v) for v in (score.sig, score.bak, score.ovrl, score.p808))


def score_file(
    path: Path,
    channel: int | None = None,
    model: DnsmosModel | None = None,
    hop_s: float = WINDOW_S,
) -> DnsmosScore:
    """DNSMOS of an audio file (a rendered dialogue), streamed: never held whole in memory."""
    from duetflow.audio.io import audio_info
    from duetflow.audio.stream import StreamResampler, iter_blocks

    stream = DnsmosStream(model, hop_s)
    resampler = StreamResampler(audio_info(path).sample_rate, RATE)
    for block in iter_blocks(path, channel=channel):
        stream.feed(resampler(block))
    stream.feed(resampler(np.zeros(0, dtype=np.float32), last=True))
    return stream.result()
