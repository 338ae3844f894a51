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

    ``eos_boost`` scales the channel-0 EOS row of the output head. The default 0 zeroes it, so
    EOS never wins the argmax and every generation runs to ``max_new_tokens`` (deterministic
    lengths); about 2 makes EOS win on some steps, so lengths vary with the seed, which is what
    a test of a runaway/truncation guard needs; 1 leaves the random head untouched.
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


SPARK_CONTROL_TOKENS = (
    "<|task_tts|>",
    "<|start_content|>",
    "<|end_content|>",
    "<|start_global_token|>",
    "<|end_global_token|>",
    "<|start_semantic_token|>",
    "<|end_semantic_token|>",
)


def build_tiny_spark_lm(
    root: str | Path, *, n_global: int = 4, n_semantic: int = 64, seed: int = 0
) -> Path:
    """Save a Spark-TTS-shaped model folder with a tiny random ``LLM/``; returns the folder.

    The tokenizer is byte-level BPE (256 symbols, no merges) plus the Spark control tokens and
    ``<|bicodec_global_i|>`` / ``<|bicodec_semantic_i|>`` as *non-special* added tokens, like the
    real one (the decode skips special tokens and then parses with a regex). The LM is a
    2-layer ``Qwen2ForCausalLM``. There is no BiCodec: it cannot be built without ``sparktts``.
    """
    import importlib

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tf: Any = importlib.import_module("transformers")
    root = Path(root)
    lm_dir = root / "LLM"
    torch.manual_seed(seed)
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    extra = [
        *SPARK_CONTROL_TOKENS,
        *(f"<|bicodec_global_{i}|>" for i in range(n_global)),
        *(f"<|bicodec_semantic_{i}|>" for i in range(n_semantic)),
    ]
    tok.add_tokens(extra)  # non-special on purpose
    tok.save_pretrained(lm_dir)
    cfg = tf.Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    model = tf.Qwen2ForCausalLM(cfg)
    model.generation_config = tf.GenerationConfig(
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
    )
    model.save_pretrained(lm_dir)
    (root / "config.yaml").write_text(
        "sample_rate: 16000\nlatent_hop_length: 320\nref_segment_duration: 6.0\n"
        "volume_normalize: true\nhighpass_cutoff_freq: 40\n",
        encoding="utf-8",
    )
    return root
