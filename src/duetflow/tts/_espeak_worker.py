"""Subprocess worker for the eSpeak NG backend (stdlib only, so it starts in milliseconds).

eSpeak NG keeps synthesis state in C statics across calls (e.g. the pitch-flutter index in
``wavegen.c``), and ``espeak_Terminate`` does not reset it: the same text spoken twice in one
process comes out a few samples different. It also seeds its noise generator from ``time()``;
the worker re-seeds it from the request. A fresh process per request makes the output a pure
function of the request, which the pipeline's byte-identical-output rule needs.

Protocol: one JSON object on stdin ``{"library", "data", "voice", "rate", "pitch", "seed",
"texts"}``;
stdout gets the sample rate (uint32 LE), then per text a sample count (uint32 LE) and that many
int16 LE samples. Errors go to stderr with exit status 2.
"""

from __future__ import annotations

import ctypes
import json
import struct
import sys


def main() -> int:
    req = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    lib = ctypes.CDLL(req["library"])
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    rate = lib.espeak_Initialize(1, 0, req["data"].encode(), 0x8000)  # retrieval, don't exit
    if rate <= 0:
        sys.stderr.write(f"eSpeak NG failed to initialise with data {req['data']}\n")
        return 2
    chunks: list[bytes] = []
    callback_type = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
    )

    def collect(wav: ctypes._Pointer[ctypes.c_short], n: int, events: int | None) -> int:
        if n > 0 and wav:
            chunks.append(ctypes.string_at(wav, 2 * n))
        return 0

    cb = callback_type(collect)
    lib.espeak_SetSynthCallback(cb)
    if lib.espeak_SetVoiceByName(req["voice"].encode()) != 0:
        sys.stderr.write(f"eSpeak NG has no voice {req['voice']!r}\n")
        return 2
    lib.espeak_SetParameter(1, int(req["rate"]), 0)  # espeakRATE
    lib.espeak_SetParameter(3, int(req["pitch"]), 0)  # espeakPITCH
    lib.espeak_SetParameter(4, 50, 0)  # espeakRANGE
    # the library seeds its noise generator from time() at start-up: fix it per request
    lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
    lib.espeak_ng_SetRandSeed(int(req.get("seed", 0)) & 0x7FFFFFFF)
    out = sys.stdout.buffer
    out.write(struct.pack("<I", rate))
    for text in req["texts"]:
        data = text.encode("utf-8")
        buf = ctypes.create_string_buffer(data)
        chunks.clear()
        rc = lib.espeak_Synth(buf, len(data) + 1, 0, 1, 0, 1, None, None)  # POS_CHARACTER, UTF8
        lib.espeak_Synchronize()
        if rc != 0:
            sys.stderr.write(f"eSpeak NG synthesis failed (code {rc}) for {text[:40]!r}\n")
            return 2
        pcm = b"".join(chunks)
        out.write(struct.pack("<I", len(pcm) // 2))
        out.write(pcm)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
