"""Audio core: frame-range I/O, resampling, VAD, loudness. Plain numpy, no Prefect."""
