"""Silero VAD (the ONNX model shipped inside the ``silero-vad`` wheel), streamed with onnxruntime.

Needs the ``quality`` extra (``pip install 'duetflow[quality]'``: ``silero-vad`` for the model
file, ``onnxruntime`` to run it). Only the ONNX file is used: the ``silero_vad`` package itself
(which imports torch) is never imported, so nothing is downloaded and no torch is loaded.

:class:`SileroStream` takes consecutive 16 kHz blocks of any length and gives the speech
probability of every 512-sample window (32 ms), carrying the model's recurrent state and its
64-sample context from one window to the next exactly as the reference wrapper does; the
result does not depend on how the audio was cut into blocks. Single-threaded onnxruntime on
CPU: deterministic.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from duetflow.errors import ConfigError

RATE = 16000
WINDOW = 512
CONTEXT = 64
MODEL_FILE = "silero_vad.onnx"

_MISSING = (
    "segment.vad: silero needs the 'quality' extra: pip install 'duetflow[quality]' "
    "(silero-vad for the model file, onnxruntime to run it)"
)


def model_path() -> Path:
    """The ONNX file inside the installed ``silero-vad`` package (its package is not imported)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{_MISSING}; silero-vad is not installed")
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "data" / MODEL_FILE
        if p.is_file():
            return p
    raise ConfigError(f"{_MISSING}; {MODEL_FILE} is missing from the silero-vad package")


def _session(path: Path) -> Any:
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError:
        raise ConfigError(f"{_MISSING}; onnxruntime is not installed") from None
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=opts)


_SESSIONS: dict[Path, Any] = {}


def check_available() -> None:
    """Raise ConfigError with the install hint when Silero VAD cannot run here."""
    path = model_path()
    if path not in _SESSIONS:
        _SESSIONS[path] = _session(path)


class SileroStream:
    """Speech probability per 32 ms window of a 16 kHz stream fed in blocks of any length."""

    def __init__(self) -> None:
        check_available()
        self._sess = _SESSIONS[model_path()]
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._rest = np.zeros(0, dtype=np.float32)
        self._sr = np.array(RATE, dtype=np.int64)
        self.windows = 0

    def feed(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Probabilities of the whole windows completed by ``x`` (float32, mono, 16 kHz)."""
        buf = np.concatenate((self._rest, np.asarray(x, dtype=np.float32)))
        count = len(buf) // WINDOW
        out = np.empty(count, dtype=np.float32)
        for k in range(count):
            chunk = buf[k * WINDOW : (k + 1) * WINDOW]
            inp = np.concatenate((self._context, chunk))[np.newaxis, :]
            prob, self._state = self._sess.run(
                None, {"input": inp, "state": self._state, "sr": self._sr}
            )
            out[k] = float(np.asarray(prob).reshape(-1)[0])
            self._context = chunk[-CONTEXT:]
        self._rest = buf[count * WINDOW :].copy()
        self.windows += count
        return out

    def flush(self) -> npt.NDArray[np.float32]:
        """The last, partial window padded with silence (empty when there is none)."""
        if not len(self._rest):
            return np.zeros(0, dtype=np.float32)
        pad = np.zeros(WINDOW - len(self._rest), dtype=np.float32)
        return self.feed(pad)
