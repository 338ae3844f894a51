"""Tiny random models built from configs, saved locally: the real backend code paths, no weights.

Tests and ``bench/synthesize.py`` use these to exercise loading, prompt construction, seeded
generation, decoding and the guards on CPU in seconds. The audio is noise; nothing here is for
production. Layouts follow the real checkpoints (44.1 kHz DAC with hop 512 and 9 codebooks of
1024 codes; Dia's byte tokenizer and delay pattern), which the backends rely on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

EOS_ID = 1024


def build_tiny_dia(root: str | Path, *, eos_boost: float = 0.0, seed: int = 0) -> tuple[Path, Path]:
    """Save a ~0.3 M-parameter Dia + DAC pair under ``root``; returns (model dir, codec dir).

    A random model never emits EOS, so every generation runs to ``max_new_tokens``.
    ``eos_boost`` > 0 scales the channel-0 EOS row of the output head so that EOS wins the
    argmax on some steps: generation lengths then vary with the seed, which is what a test of a
    runaway/truncation guard needs.
    """
    import importlib

    import torch

    tf: Any = importlib.import_module("transformers")
    root = Path(root)
    dac_dir, dia_dir = root / "dac", root / "dia"
    torch.manual_seed(seed)
    tf.DacModel(
        tf.DacConfig(
            encoder_hidden_size=4,
            decoder_hidden_size=32,
            codebook_dim=4,
            n_codebooks=9,
            codebook_size=1024,
            sampling_rate=44100,
        )
    ).save_pretrained(dac_dir)
    enc = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": 8,
    }
    dec = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "cross_hidden_size": 16,
        "cross_num_attention_heads": 2,
        "cross_num_key_value_heads": 2,
        "cross_head_dim": 8,
    }
    model = tf.DiaForConditionalGeneration(tf.DiaConfig(encoder_config=enc, decoder_config=dec))
    if eos_boost:
        with torch.no_grad():
            model.logits_dense.weight[EOS_ID] *= eos_boost
    model.generation_config = tf.GenerationConfig(
        max_length=3072,
        bos_token_id=1026,
        eos_token_id=EOS_ID,
        pad_token_id=1025,
        decoder_start_token_id=1026,
    )
    model.save_pretrained(dia_dir)
    tf.DiaProcessor(
        tf.DiaFeatureExtractor(sampling_rate=44100, hop_length=512),
        tf.DiaTokenizer(),
        audio_tokenizer=tf.DacModel.from_pretrained(dac_dir),
    ).save_pretrained(dia_dir)
    return dia_dir, dac_dir
