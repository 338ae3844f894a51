"""The file is written from the confirmation's 16-bit form: the same int16 as quantising anew."""

from __future__ import annotations

import numpy as np

from duetflow.audio import loudness as ld
from duetflow.audio.io import to_pcm16
from duetflow.rendering.mixdown import as_written
from duetflow.rendering.render import written_pcm16


def test_the_written_form_gives_the_int16_of_the_scaled_mix() -> None:
    rng = np.random.default_rng(7)
    for trial in range(200):
        n = int(rng.integers(1, 5000))
        x = (rng.normal(size=n) * rng.uniform(0.01, 2.0)).astype(np.float32)  # some clip
        x[rng.random(n) < 0.1] = (rng.integers(-40000, 40000, size=1) + 0.5) / 32768  # ties
        ceiling = 0.0 if trial % 3 == 0 else float(rng.uniform(-12.0, 0.0))
        # what render_dialogue did before: scale by the ceiling, then quantise
        scaled = x * np.float32(ld.db_to_gain(ceiling)) if ceiling < 0 else x
        want = to_pcm16(scaled)
        got = written_pcm16(as_written(x, ceiling))
        assert got.dtype == np.int16 and got.tobytes() == want.tobytes()
